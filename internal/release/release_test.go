package release

import (
	"strings"
	"testing"
)

func TestLookupByLine(t *testing.T) {
	for version, want := range map[string]string{
		"v1.9.0": "v1.9", "v1.9.1": "v1.9", "1.9.0": "v1.9", "v1.9.0-rc.1": "v1.9", "v1.9.0-crashloop": "v1.9",
		"v1.8.4": "v1.8", "v1.8.0": "v1.8",
		"v1.7.4": "", "v1.10.0": "", "latest": "", "devel": "", "sha256:abc": "", "v1.9": "", "": "",
	} {
		r, ok := Lookup(version)
		if got := map[bool]string{true: lineOf(r), false: ""}[ok]; got != want {
			t.Errorf("Lookup(%q) = %q, want %q", version, got, want)
		}
	}
}

func lineOf(r *Release) string {
	if r == nil {
		return ""
	}
	return r.Line
}

func TestRulesForNearestRelease(t *testing.T) {
	for version, want := range map[string]string{
		"v1.9.3": "v1.9", "v1.10.0": "v1.9", "v2.0.0": "v1.9", "v1.8.1": "v1.8", "v1.7.4": "v1.8", "latest": "v1.8",
	} {
		if got := RulesFor(version).Line; got != want {
			t.Errorf("RulesFor(%q) = %s, want %s", version, got, want)
		}
	}
}

func TestGateEnabled(t *testing.T) {
	v19, _ := Lookup("v1.9.0")
	v18, _ := Lookup("v1.8.4")
	for _, tc := range []struct {
		r                 *Release
		gate              string
		enabled, disabled []string
		want              bool
	}{
		{v19, "Template", nil, nil, true},                                             // Beta: on by default
		{v19, "Template", nil, []string{"Template"}, false},                           // disabled
		{v19, "Template", []string{"Template"}, []string{"Template"}, true},           // enable beats disable
		{v19, "Plugins", nil, nil, false},                                             // Alpha: off
		{v19, "Plugins", []string{"Plugins"}, nil, true},                              // listed
		{v19, "PersistentReservation", []string{"PersistentReservation"}, nil, false}, // not a registered gate in v1.9
		{v18, "Template", nil, nil, false},                                            // v1.8 counts only listed gates
		{v18, "ExternalNetResourceInjection", nil, nil, false},                        // even Beta ones
		{v18, "Template", []string{"Template"}, nil, true},
	} {
		if got := tc.r.GateEnabled(tc.gate, tc.enabled, tc.disabled); got != tc.want {
			t.Errorf("%s GateEnabled(%s, %v, %v) = %v, want %v", tc.r.Line, tc.gate, tc.enabled, tc.disabled, got, tc.want)
		}
	}
}

// v1.8's own operator writes virt-exportproxy only with VMExport listed (v1.7's
// too, whose rules are v1.8's); v1.9's always, the gate being GA there.
func TestExportProxyGate(t *testing.T) {
	for version, want := range map[string]string{"v1.9.0": "", "v1.10.0": "", "v1.8.4": "VMExport", "v1.7.4": "VMExport"} {
		if got := RulesFor(version).ExportProxyGate; got != want {
			t.Errorf("%s: export proxy gate %q, want %q", version, got, want)
		}
	}
	v18, _ := Lookup("v1.8.4")
	if v18.GateEnabled(v18.ExportProxyGate, nil, nil) || !v18.GateEnabled(v18.ExportProxyGate, []string{"VMExport"}, nil) {
		t.Error("v1.8: VMExport is on exactly when listed")
	}
}

// Every supported release has its data files, and the catalogue's default is the newest.
func TestEveryReleaseHasItsData(t *testing.T) {
	for _, r := range Supported() {
		for _, f := range []string{"core.yaml", "crds.yaml", "monitoring.yaml", "virt-template.yaml", "instancetypes.yaml", "preferences.yaml"} {
			if _, err := r.File(f); err != nil {
				t.Errorf("%s: %v", r.Line, err)
			}
		}
		schemas, err := r.Files("schemas")
		if err != nil || len(schemas) < 18 {
			t.Errorf("%s: %d schemas, %v", r.Line, len(schemas), err)
		}
		if !strings.HasPrefix(r.Version, r.Line+".") {
			t.Errorf("%s holds the content of %s", r.Line, r.Version)
		}
	}
	if Default() != Supported()[0] || Lines() != "v1.9, v1.8" {
		t.Errorf("default %s, lines %s", Default().Line, Lines())
	}
	if _, err := Default().File("nope.yaml"); err == nil {
		t.Error("a missing file is no error")
	}
}
