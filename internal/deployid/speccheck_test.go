package deployid

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func TestCheckImageTag(t *testing.T) {
	for _, ok := range []string{"", "v1.9.0", "v1.9.0-rc.1", "v1.10.0-alpha.0.123-gabcdef0", "latest", "devel_2026", strings.Repeat("x", 63),
		"sha256:" + strings.Repeat("0f", 32)} {
		if err := CheckImageTag(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"v1.9.0-" + strings.Repeat("pre", 23): "is no label value",
		strings.Repeat("x", 129):              "is not an image tag",
		"v1.9.0+build":                        "is not an image tag",
		".v1":                                 "is not an image tag",
		"-v1":                                 "is not an image tag",
		"_v1":                                 "is no label value",
		"v1.9.0_":                             "is no label value",
		"v 1":                                 "is not an image tag",
		"sha256:abc":                          "is neither an image tag nor a digest",
	} {
		if err := CheckImageTag(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", bad, err, want)
		}
	}
}

func TestCheckImageRegistry(t *testing.T) {
	for _, ok := range []string{"", "quay.io", "quay.io/kubevirt", "registry.local:5000", "registry.local:5000/a/b-c/d__e", "localhost/kubevirt",
		"mirror", "my_org/kv", "[::1]:5000/kv", "Registry.Example.COM/kubevirt"} {
		if err := CheckImageRegistry(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"quay.io/KubeVirt", "https://quay.io/kubevirt", "quay.io//kubevirt", "quay.io/kubevirt/", " quay.io",
		"quay.io/kubevirt:v1", "quay.io/kubevirt@sha256:ab", "-quay.io/kv", "quay.io:port/kv", "kv/" + strings.Repeat("a", 230)} {
		if err := CheckImageRegistry(bad); err == nil || !strings.Contains(err.Error(), "spec.imageRegistry") && !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// Every duration of the spec is found, named by its path, wherever it is.
func TestInvalidDurationsNamesEveryDurationField(t *testing.T) {
	const bad = `"7d"`
	spec := &v1.KubeVirtSpec{}
	raw := `{
	  "handlerRollout": {"bakeTime": ` + bad + `, "progressDeadline": ` + bad + `, "maxMigrationWait": ` + bad + `,
	                     "dataPlaneChecks": {"migrationProbe": {"timeout": ` + bad + `}}},
	  "workloadUpdateStrategy": {"batchEvictionInterval": ` + bad + `},
	  "workloadUpdates": {"batchEvictionInterval": ` + bad + `, "retryBackoff": ` + bad + `, "maxRetryBackoff": ` + bad + `,
	                      "windows": [{"start": "01:00", "duration": "1h"}, {"start": "01:00", "duration": ` + bad + `}]},
	  "certificateRotateStrategy": {"selfSigned": {"ca": {"duration": ` + bad + `, "renewBefore": ` + bad + `},
	                                               "server": {"duration": ` + bad + `, "renewBefore": ` + bad + `}}},
	  "rolloutWindows": [{"start": "01:00", "duration": ` + bad + `}]
	}`
	if err := json.Unmarshal([]byte(raw), spec); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, err := range InvalidDurations(spec) {
		got = append(got, err.Error()[:strings.Index(err.Error(), ":")])
	}
	want := []string{
		"spec.workloadUpdateStrategy.batchEvictionInterval",
		"spec.workloadUpdates.batchEvictionInterval", "spec.workloadUpdates.retryBackoff", "spec.workloadUpdates.maxRetryBackoff",
		"spec.workloadUpdates.windows[1].duration",
		"spec.certificateRotateStrategy.selfSigned.ca.duration", "spec.certificateRotateStrategy.selfSigned.ca.renewBefore",
		"spec.certificateRotateStrategy.selfSigned.server.duration", "spec.certificateRotateStrategy.selfSigned.server.renewBefore",
		"spec.handlerRollout.bakeTime", "spec.handlerRollout.progressDeadline", "spec.handlerRollout.maxMigrationWait",
		"spec.handlerRollout.dataPlaneChecks.migrationProbe.timeout",
		"spec.rolloutWindows[0].duration",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("named\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The test above sets every duration field the spec has (a new one fails
	// here, so this list and the CRD's are looked at again).
	if n := countDurationFields(reflect.TypeFor[v1.KubeVirtSpec](), map[reflect.Type]bool{}); n != len(want) {
		t.Errorf("KubeVirtSpec has %d duration fields, the test sets %d", n, len(want))
	}
	if errs := InvalidDurations(&v1.KubeVirtSpec{}); len(errs) != 0 {
		t.Errorf("an empty spec: %v", errs)
	}
}

func countDurationFields(t reflect.Type, seen map[reflect.Type]bool) int {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return countDurationFields(t.Elem(), seen)
	case reflect.Struct:
		if t == durationType {
			return 1
		}
		if seen[t] { // a type that holds itself: counted where it starts
			return 0
		}
		seen[t] = true
		defer delete(seen, t)
		n := 0
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				n += countDurationFields(t.Field(i).Type, seen)
			}
		}
		return n
	}
	return 0
}
