package preflight

import (
	"strings"
	"testing"
)

func TestUpgradePath(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		state    string
		says     []string
	}{
		{"", "v1.9.0", Passed, []string{"a fresh install"}},
		{"v1.8.4", "v1.9.0", Passed, []string{"one minor release up"}},
		{"v1.9.0", "v1.8.4", Passed, []string{"rolls back one minor release"}},
		{"v1.8.3", "v1.8.4", Passed, []string{"stays on one minor release"}},
		{"v1.9.0", "v1.9.0", Passed, []string{"stays on one minor release"}},
		{"v1.7.4", "v1.9.0", Failed, []string{"v1.7.4 -> v1.9.0 skips 1 minor release(s)", "set spec.imageTag to v1.8.4", "in order: v1.8.4, then v1.9.0"}},
		{"v1.9.0", "v1.7.4", Failed, []string{"rolls back over 1 minor release(s)", "v1.8.4, then v1.7.4"}},
		{"v1.5.2", "v1.9.0", Failed, []string{"skips 3 minor release(s)", "v1.6.x, then v1.7.x, then v1.8.4, then v1.9.0"}},
		{"v1.9.0", "v2.0.0", Failed, []string{"changes the major version"}},
		{"v1.8.4", "devel", Passed, []string{"not release versions"}},
		{"sha256:abc", "v1.9.0", Passed, []string{"not release versions"}},
		{"v1.8.4", "v1.10.0-rc.1", Failed, []string{"skips 1 minor release(s)", "v1.9.0, then v1.10.0-rc.1"}},
	} {
		c := UpgradePath(tc.from, tc.to)
		if c.Name != CheckUpgradePath || c.State != tc.state {
			t.Errorf("%s -> %s: %s %s (%s), want %s", tc.from, tc.to, c.Name, c.State, c.Message, tc.state)
		}
		for _, want := range tc.says {
			if !strings.Contains(c.Message, want) {
				t.Errorf("%s -> %s: message %q lacks %q", tc.from, tc.to, c.Message, want)
			}
		}
	}
}
