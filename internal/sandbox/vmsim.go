package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// vmSimName is the VM simulator's component name in state.json and logs/.
const vmSimName = "vmsim"

// vmSimKinds are the kubevirt.io kinds the simulator watches; it starts only when
// the sandbox installs their CRDs.
var vmSimKinds = []string{"VirtualMachine", "VirtualMachineInstance", "VirtualMachineInstanceMigration"}

// vmSim is the sandbox's set-up of the VM simulator (package vmsim).
type vmSim struct {
	binary    string // the virt-operator binary; "" when the simulator does not start
	duration  time.Duration
	readyFile string // written by the simulator once its caches are synced
}

// newVMSim runs the simulator with the host-exec runner's binary when CRDDir
// defines the VM kinds.
func newVMSim(dir string, o Options, hx hostExec) (vmSim, error) {
	vs := vmSim{duration: o.MigrationDuration, readyFile: filepath.Join(dir, "vmsim.ready")}
	if hx.binary == "" || o.CRDDir == "" {
		return vs, nil
	}
	crds, err := readCRDs(o.CRDDir)
	if err != nil {
		return vs, err
	}
	for _, kind := range vmSimKinds {
		if !slices.ContainsFunc(crds, func(c *apiextensionsv1.CustomResourceDefinition) bool {
			return c.Spec.Group == "kubevirt.io" && c.Spec.Names.Kind == kind
		}) {
			return vs, nil
		}
	}
	vs.binary = hx.binary
	return vs, nil
}

// vmSimArgs is the simulator's command line (after the binary).
func vmSimArgs(l layout, vs vmSim) []string {
	args := []string{
		"sandbox", "vmsim",
		"--kubeconfig=" + l.Kubeconfig,
		"--ready-file=" + vs.readyFile,
	}
	if vs.duration > 0 {
		args = append(args, "--migration-duration="+vs.duration.String())
	}
	return args
}

func (vs vmSim) ready(context.Context) (bool, error) {
	_, err := os.Stat(vs.readyFile)
	return err == nil, nil
}
