package deployid

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// checkSpec refuses the spec values no deployment can be made of, naming each
// field by its path: an image tag or registry that makes no image reference
// (or, for the tag, no label value: it is every component's
// app.kubernetes.io/version), a synchronization port that is not a port, a
// minimum TLS version that is none (virt-template would get it as a flag), and a
// duration that is not a Go duration (stored under an older CRD: v1.Duration
// keeps it rather than failing the decoding). The admission webhook refuses
// the same through FromKubeVirt.
func checkSpec(spec *v1.KubeVirtSpec) error {
	var errs []error
	if err := CheckImageTag(spec.ImageTag); err != nil {
		errs = append(errs, fmt.Errorf("spec.imageTag: %w", err))
	}
	if err := CheckImageRegistry(spec.ImageRegistry); err != nil {
		errs = append(errs, fmt.Errorf("spec.imageRegistry: %w", err))
	}
	if p := spec.SynchronizationPort; p != "" {
		if port, err := strconv.ParseUint(p, 10, 16); err != nil || port == 0 {
			errs = append(errs, fmt.Errorf("spec.synchronizationPort: %q is not a port number (1-65535)", p))
		}
	}
	if tls := spec.Configuration.TLSConfiguration; tls != nil {
		switch tls.MinTLSVersion {
		case "", v1.VersionTLS10, v1.VersionTLS11, v1.VersionTLS12, v1.VersionTLS13:
		default:
			errs = append(errs, fmt.Errorf("spec.configuration.tlsConfiguration.minTLSVersion: %q is not VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13", tls.MinTLSVersion))
		}
	}
	errs = append(errs, InvalidDurations(spec)...)
	return errors.Join(errs...)
}

// MaxImageTagLength is the longest tag an image reference may have.
const MaxImageTagLength = 128

var (
	imageTagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)
	digestPattern   = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

// CheckImageTag says why tag cannot be spec.imageTag, or nil ("" is unset). A
// tag must be an image tag (letters, digits, _ . -, not starting with . or -, at
// most 128 characters) and, because it is the version label of every object the
// strategy has (app.kubernetes.io/version), a label value: at most 63
// characters, starting and ending with a letter or digit. A digest
// (sha256:<64 hex digits>) names the images by digest and is no label value;
// no builtin release is a digest, so the label is the release's own operator's
// to write.
func CheckImageTag(tag string) error {
	if tag == "" || digestPattern.MatchString(tag) {
		return nil
	}
	if strings.HasPrefix(tag, "sha256:") {
		return fmt.Errorf("%q is neither an image tag nor a digest (sha256: and 64 lower-case hex digits)", tag)
	}
	if len(tag) > MaxImageTagLength || !imageTagPattern.MatchString(tag) {
		return fmt.Errorf("%q is not an image tag: at most %d letters, digits, '_', '.' or '-', not starting with '.' or '-'", tag, MaxImageTagLength)
	}
	if errs := validation.IsValidLabelValue(tag); len(errs) > 0 {
		return fmt.Errorf("%q becomes the app.kubernetes.io/version label of the components, and is no label value: %s", tag, strings.Join(errs, "; "))
	}
	return nil
}

// An image reference's name before the component, as the distribution
// reference grammar has it: an optional registry host (a domain or an IPv6
// address, with an optional port) and lower-case path components separated by
// '/', each made of letters and digits joined by '.', '_', '__' or dashes.
var (
	domainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	registryHost    = `(?:` + domainComponent + `(?:\.` + domainComponent + `)*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?`
	pathComponent   = `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
	registryPattern = regexp.MustCompile(`^(?:(?:` + registryHost + `/)?` + pathComponent + `(?:/` + pathComponent + `)*|` + registryHost + `)$`)
)

// longestName is the longest image name the operator builds under a registry.
const longestName = "/" + string(SynchronizationController)

// CheckImageRegistry says why registry cannot be spec.imageRegistry, or nil (""
// is unset): it must be the start of an image reference (quay.io/kubevirt,
// registry.local:5000, mirror/kubevirt) that leaves room for the component's
// name (a name is at most 255 characters).
func CheckImageRegistry(registry string) error {
	if registry == "" {
		return nil
	}
	if !registryPattern.MatchString(registry) {
		return fmt.Errorf("%q is not an image registry (a host such as quay.io or registry.local:5000, then lower-case path components, such as quay.io/kubevirt)", registry)
	}
	if len(registry)+len(longestName) > 255 {
		return fmt.Errorf("%q is too long: an image name is at most 255 characters, and %s must fit after it", registry, longestName[1:])
	}
	return nil
}

var durationType = reflect.TypeFor[v1.Duration]()

// InvalidDurations names every duration of spec that is not a Go duration (see
// v1.Duration), by its path (spec.handlerRollout.bakeTime,
// spec.rolloutWindows[0].duration). It walks the spec, so a duration field added
// later is covered without a list to keep.
func InvalidDurations(spec *v1.KubeVirtSpec) []error {
	var errs []error
	walkDurations(reflect.ValueOf(spec).Elem(), "spec", func(path string, d *v1.Duration) {
		if err := d.Check(path); err != nil {
			errs = append(errs, err)
		}
	})
	return errs
}

func walkDurations(v reflect.Value, path string, visit func(string, *v1.Duration)) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			walkDurations(v.Elem(), path, visit)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkDurations(v.Index(i), fmt.Sprintf("%s[%d]", path, i), visit)
		}
	case reflect.Struct:
		if v.Type() == durationType {
			if v.CanAddr() {
				visit(path, v.Addr().Interface().(*v1.Duration))
			}
			return
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
				continue
			case name == "" && f.Anonymous:
				walkDurations(v.Field(i), path, visit)
				continue
			case name == "":
				name = f.Name
			}
			walkDurations(v.Field(i), path+"."+name, visit)
		}
	}
}
