package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// vmSimName is the VM simulator's component name in state.json and logs/.
const vmSimName = "vmsim"

// vmSimCRDs are the CRDs of the kinds the simulator watches. The sandbox installs
// them from the default release's install strategy (the operator later writes the
// same ones), so VMs can be made before, or without, a KubeVirt install.
var vmSimCRDs = []string{
	"virtualmachines.kubevirt.io", "virtualmachineinstances.kubevirt.io", "virtualmachineinstancemigrations.kubevirt.io",
}

// vmSim is the sandbox's set-up of the VM simulator (package vmsim).
type vmSim struct {
	binary    string // the virt-sandbox binary; "" when the simulator does not start
	duration  time.Duration
	lean      bool   // --podless --skip-transitional-phases
	readyFile string // written by the simulator once its caches are synced
	crds      []*apiextensionsv1.CustomResourceDefinition
}

// newVMSim runs the simulator with the sandbox binary, when it is known, unless
// Options.NoVMSim (the real virt-controller stands in instead).
func newVMSim(dir string, o Options, b hostBinaries) (vmSim, error) {
	vs := vmSim{duration: o.MigrationDuration, lean: o.LeanVMs, readyFile: filepath.Join(dir, "vmsim.ready")}
	if b.sandbox == "" || o.NoVMSim {
		return vs, nil
	}
	all, err := generate.ReleaseCRDs(release.Default())
	if err != nil {
		return vs, err
	}
	for _, crd := range all {
		if slices.Contains(vmSimCRDs, crd.Name) {
			vs.crds = append(vs.crds, crd)
		}
	}
	vs.binary = b.sandbox
	return vs, nil
}

// vmSimArgs is the simulator's command line (after the binary).
func vmSimArgs(l layout, vs vmSim) []string {
	args := []string{
		"vmsim",
		"--kubeconfig=" + l.Kubeconfig,
		"--ready-file=" + vs.readyFile,
	}
	if vs.duration > 0 {
		args = append(args, "--migration-duration="+vs.duration.String())
	}
	if vs.lean {
		args = append(args, "--podless", "--skip-transitional-phases", "--updater-window=1s")
	}
	return args
}

func (vs vmSim) ready(context.Context) (bool, error) {
	_, err := os.Stat(vs.readyFile)
	return err == nil, nil
}
