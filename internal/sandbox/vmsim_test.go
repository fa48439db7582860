package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestVMSimStartsWithBinaryAndVMCRDs(t *testing.T) {
	crdDir, err := filepath.Abs(filepath.Join("..", "..", "config", "crd", "bases"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(crdDir); err != nil {
		t.Skip("CRDs not generated")
	}
	hx := hostExec{binary: "/sb/bin/virt-operator"}
	for _, tc := range []struct {
		name  string
		o     Options
		hx    hostExec
		start bool
	}{
		{"binary and VM CRDs", Options{CRDDir: crdDir, MigrationDuration: time.Second}, hx, true},
		{"no binary", Options{CRDDir: crdDir}, hostExec{}, false},
		{"no CRDs", Options{}, hx, false},
		{"CRDs without the VM kinds", Options{CRDDir: t.TempDir()}, hx, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs, err := newVMSim("/sb", tc.o, tc.hx)
			if err != nil {
				t.Fatal(err)
			}
			if (vs.binary != "") != tc.start {
				t.Errorf("binary %q, want started=%v", vs.binary, tc.start)
			}
		})
	}

	l := newLayout("/sb", []int{1, 2, 3}, "")
	args := strings.Join(vmSimArgs(l, vmSim{binary: "/sb/bin/virt-operator", readyFile: "/sb/vmsim.ready", duration: 300 * time.Millisecond}), " ")
	if want := "sandbox vmsim --kubeconfig=/sb/kubeconfig --ready-file=/sb/vmsim.ready --migration-duration=300ms"; args != want {
		t.Errorf("args\n%s\nwant\n%s", args, want)
	}
	if args := vmSimArgs(l, vmSim{readyFile: "/sb/vmsim.ready"}); strings.Contains(strings.Join(args, " "), "duration") {
		t.Errorf("default duration passed: %v", args)
	}
}
