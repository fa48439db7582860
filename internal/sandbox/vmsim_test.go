package sandbox

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestVMSimStartsWithTheRunnerUnlessDisabled(t *testing.T) {
	bins := hostBinaries{sandbox: "/sb/bin/virt-sandbox"}
	for _, tc := range []struct {
		name  string
		o     Options
		bins  hostBinaries
		start bool
	}{
		{"binary", Options{MigrationDuration: time.Second}, bins, true},
		{"no binary", Options{}, hostBinaries{operator: "/sb/bin/virt-operator"}, false},
		{"disabled for KubeVirt's own virt-controller", Options{NoVMSim: true}, bins, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs, err := newVMSim("/sb", tc.o, tc.bins)
			if err != nil {
				t.Fatal(err)
			}
			if (vs.binary != "") != tc.start {
				t.Errorf("binary %q, want started=%v", vs.binary, tc.start)
			}
			var names []string
			for _, crd := range vs.crds {
				names = append(names, crd.Name)
				if len(crd.Spec.Versions) == 0 || crd.Spec.Versions[0].Schema == nil {
					t.Errorf("CRD %s without a schema", crd.Name)
				}
			}
			if want := map[bool]int{true: 3, false: 0}[tc.start]; len(names) != want {
				t.Errorf("CRDs %v, want the %d of the VM kinds", names, want)
			}
		})
	}

	l := newLayout("/sb", []int{1, 2, 3}, "")
	args := strings.Join(vmSimArgs(l, vmSim{binary: "/sb/bin/virt-sandbox", readyFile: "/sb/vmsim.ready", duration: 300 * time.Millisecond}), " ")
	if want := "vmsim --kubeconfig=/sb/kubeconfig --ready-file=/sb/vmsim.ready --migration-duration=300ms"; args != want {
		t.Errorf("args\n%s\nwant\n%s", args, want)
	}
	if args := vmSimArgs(l, vmSim{readyFile: "/sb/vmsim.ready"}); strings.Contains(strings.Join(args, " "), "duration") || strings.Contains(strings.Join(args, " "), "skip") {
		t.Errorf("defaults passed: %v", args)
	}
	o := Options{LeanVMs: true}
	vs, err := newVMSim(t.TempDir(), o, bins)
	if err != nil {
		t.Fatal(err)
	}
	if args := vmSimArgs(l, vs); !slices.Contains(args, "--skip-transitional-phases") || !slices.Contains(args, "--podless") || !slices.Contains(args, "--updater-window=1s") {
		t.Errorf("LeanVMs: args %v lack --podless --skip-transitional-phases", args)
	}
}
