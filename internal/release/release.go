package release

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// GateState is a feature gate's maturity in one release.
type GateState string

// The states a release registers its gates in.
const (
	Alpha GateState = "Alpha"
	Beta  GateState = "Beta"
	GA    GateState = "GA"
)

// GateRule is how a release decides whether a feature gate is on.
type GateRule string

const (
	// ListedOnly: a gate is on when featureGates lists it (v1.8 and older).
	ListedOnly GateRule = "ListedOnly"
	// BetaOnByDefault: a GA gate is always on; a listed registered gate is on; a
	// gate in disabledFeatureGates is off; a Beta gate is on otherwise (v1.9).
	BetaOnByDefault GateRule = "BetaOnByDefault"
)

// Release is one supported KubeVirt minor line and the release whose content its
// data holds.
type Release struct {
	// Line is the minor line the entry covers, e.g. "v1.9": every vX.Y.* version
	// (pre-release and build suffixes included) is generated from this data.
	Line string
	// Version is the release the data was taken from, e.g. "v1.9.0".
	Version string
	// GateRule and Gates decide the feature gates that change the install.
	GateRule GateRule
	Gates    map[string]GateState
	// ExportProxyGate is the feature gate without which the line's own operator
	// writes no virt-exportproxy Deployment (nor its PodDisruptionBudget and
	// Route), though the line's strategy holds them; "" when it writes them
	// always. Whether the gate is on is GateRule's to say.
	ExportProxyGate string
	// ComponentVersions are image versions that do not follow KubeVirt's
	// (virt-template ships its own releases), by image name.
	ComponentVersions map[string]string
	// Kubernetes are the Kubernetes minor versions the release supports: the
	// latest three at its release (upstream's docs/kubernetes-compatibility.md),
	// the newest being the k8s.io/api minor of its go.mod.
	Kubernetes KubernetesRange

	major, minor int
}

// KubernetesRange is a range of Kubernetes 1.x minor versions.
type KubernetesRange struct{ Min, Max int }

//go:embed data
var data embed.FS

// catalogue lists the supported releases, newest first.
var catalogue = []*Release{
	{
		Line: "v1.9", Version: "v1.9.0", GateRule: BetaOnByDefault, Kubernetes: KubernetesRange{Min: 32, Max: 34},
		Gates: map[string]GateState{
			"DecentralizedLiveMigration":   Alpha,
			"ConfigurableHypervisor":       Alpha,
			"ExternalNetResourceInjection": Beta,
			"Template":                     Beta,
			"ContainerPathVolumes":         Alpha,
			"OptOutRoleAggregation":        Beta,
			"VMStatsCollector":             Alpha,
			"Plugins":                      Alpha,
		},
		ComponentVersions: map[string]string{"virt-template-apiserver": "v0.2.2", "virt-template-controller": "v0.2.2"},
		major:             1, minor: 9,
	},
	{
		Line: "v1.8", Version: "v1.8.4", GateRule: ListedOnly, Kubernetes: KubernetesRange{Min: 32, Max: 34},
		Gates: map[string]GateState{
			"PersistentReservation":        Alpha,
			"DecentralizedLiveMigration":   Alpha,
			"ConfigurableHypervisor":       Alpha,
			"ExternalNetResourceInjection": Beta,
			"Template":                     Alpha,
			"ContainerPathVolumes":         Alpha,
			"OptOutRoleAggregation":        Alpha,
			"VMExport":                     Beta,
		},
		// v1.8's operator writes the export proxy only with VMExport listed
		// (reconcile.go exportProxyEnabled); v1.9's always (VMExport is GA).
		ExportProxyGate:   "VMExport",
		ComponentVersions: map[string]string{"virt-template-apiserver": "v0.1.8", "virt-template-controller": "v0.1.8"},
		major:             1, minor: 8,
	},
}

// Supported lists the supported releases, newest first.
func Supported() []*Release { return slices.Clone(catalogue) }

// Default is the release installed when neither the KubeVirt CR nor the
// operator's environment names one: the newest.
func Default() *Release { return catalogue[0] }

// Lines lists the supported lines, newest first ("v1.9, v1.8").
func Lines() string {
	lines := make([]string, len(catalogue))
	for i, r := range catalogue {
		lines[i] = r.Line
	}
	return strings.Join(lines, ", ")
}

// versionPattern reads the major and minor of a KubeVirt version: "v1.9.0",
// "1.9.0", "v1.9.0-rc.1", "v1.9.0-crashloop". Anything else (latest, devel, a
// digest) names no release line.
var versionPattern = regexp.MustCompile(`^v?(\d+)\.(\d+)\.\d+([-+].*)?$`)

func majorMinor(version string) (major, minor int, ok bool) {
	m := versionPattern.FindStringSubmatch(version)
	if m == nil {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(m[1])
	minor, err2 := strconv.Atoi(m[2])
	return major, minor, err1 == nil && err2 == nil
}

// IsVersion reports whether version reads as a KubeVirt release version.
func IsVersion(version string) bool {
	_, _, ok := majorMinor(version)
	return ok
}

// Lookup returns the release whose data generates version, if its line is supported.
func Lookup(version string) (*Release, bool) {
	major, minor, ok := majorMinor(version)
	if !ok {
		return nil, false
	}
	for _, r := range catalogue {
		if r.major == major && r.minor == minor {
			return r, true
		}
	}
	return nil, false
}

// RulesFor is the release whose feature-gate rules apply to version: its own line
// when supported, else the newest supported release not newer than version, else
// (an older or unreadable version) the oldest supported one. The deployment config
// of a release the builtin generator does not know is still derived by some rule;
// the nearest release's is the best guess of it.
func RulesFor(version string) *Release {
	if r, ok := Lookup(version); ok {
		return r
	}
	major, minor, ok := majorMinor(version)
	if ok {
		for _, r := range catalogue {
			if r.major < major || (r.major == major && r.minor < minor) {
				return r
			}
		}
	}
	return catalogue[len(catalogue)-1]
}

// GateEnabled says whether gate is on in this release for a KubeVirt CR that lists
// enabled and disabled gates.
func (r *Release) GateEnabled(gate string, enabled, disabled []string) bool {
	if r.GateRule == ListedOnly {
		return slices.Contains(enabled, gate)
	}
	state, registered := r.Gates[gate]
	switch {
	case !registered:
		return false
	case state == GA:
		return true
	case slices.Contains(enabled, gate):
		return true
	case slices.Contains(disabled, gate):
		return false
	}
	return state == Beta
}

// File returns one data file of the release ("core.yaml", "schemas/..."); a file
// the release does not have is fs.ErrNotExist.
func (r *Release) File(name string) ([]byte, error) {
	b, err := data.ReadFile(path.Join("data", r.Line, name))
	if err != nil {
		return nil, fmt.Errorf("release %s: %w", r.Line, err)
	}
	return b, nil
}

// Files lists the data files under dir ("schemas"), sorted.
func (r *Release) Files(dir string) ([]string, error) {
	entries, err := fs.ReadDir(data, path.Join("data", r.Line, dir))
	if err != nil {
		return nil, fmt.Errorf("release %s: %w", r.Line, err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			out = append(out, path.Join(dir, e.Name()))
		}
	}
	return out, nil
}
