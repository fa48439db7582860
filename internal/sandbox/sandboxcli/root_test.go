package sandboxcli

import (
	"slices"
	"testing"

	"github.com/virt-operator/virt-operator/internal/cliutil"
	"github.com/virt-operator/virt-operator/internal/cliutil/clitest"
)

// virt-sandbox has what `virt-operator sandbox` had, the background processes
// hidden.
func TestRootCommands(t *testing.T) {
	var visible, hidden []string
	for _, c := range NewRootCommand().Commands() {
		if c.Hidden {
			hidden = append(hidden, c.Name())
		} else {
			visible = append(visible, c.Name())
		}
	}
	for _, want := range []string{"up", "down", "run", "vms"} {
		if !slices.Contains(visible, want) {
			t.Errorf("commands %v lack %s", visible, want)
		}
	}
	if slices.Sort(hidden); !slices.Equal(hidden, []string{"hostexec", "vmsim"}) {
		t.Errorf("hidden commands %v, want hostexec and vmsim", hidden)
	}
	_, err := clitest.Run(t, NewRootCommand(), "up", "--no-such-flag")
	if cliutil.ExitCode(err) != cliutil.ExitUsage {
		t.Errorf("a bad flag: %v, want a usage error", err)
	}
}
