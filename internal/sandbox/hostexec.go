package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/virt-operator/virt-operator/internal/sandbox/hostexec"
)

// hostExecName is the runner's component name in state.json and logs/.
const hostExecName = "hostexec"

// Base names of the two binaries: an executable so named is taken as the default
// Options.SandboxBinary, and the operator is looked for beside it.
const (
	sandboxBinaryName  = "virt-sandbox"
	operatorBinaryName = "virt-operator"
)

// hostBinaries are the sandbox's private links (or copies) of the two binaries in
// DIR/bin: `go run` deletes its binary on exit and a rebuild must not change what
// a running sandbox executes.
type hostBinaries struct {
	sandbox  string // DIR/bin/virt-sandbox: runs the hostexec runner and the VM simulator; "" when unknown
	operator string // DIR/bin/virt-operator: runs host-executed pods of the operator's image; "" when unknown
}

// installBinaries resolves Options.SandboxBinary and OperatorBinary (with their
// defaults) and links them into DIR/bin.
func installBinaries(dir string, o Options) (hostBinaries, error) {
	sandboxSrc, operatorSrc, err := resolveBinaries(o.SandboxBinary, o.OperatorBinary)
	if err != nil {
		return hostBinaries{}, err
	}
	var b hostBinaries
	for _, bin := range []struct {
		src, name string
		dst       *string
	}{{sandboxSrc, sandboxBinaryName, &b.sandbox}, {operatorSrc, operatorBinaryName, &b.operator}} {
		if bin.src == "" {
			continue
		}
		*bin.dst = filepath.Join(dir, "bin", bin.name)
		if err := linkOrCopy(bin.src, *bin.dst); err != nil {
			return b, fmt.Errorf("installing %s: %w", bin.src, err)
		}
	}
	return b, nil
}

// resolveBinaries is the explicit binaries, which must be executable files, with
// the defaults: the sandbox binary is this executable if it is named
// virt-sandbox, the operator binary a virt-operator beside the sandbox binary.
// "" is a binary not known.
func resolveBinaries(sandboxBin, operatorBin string) (string, string, error) {
	sandboxBin, err := executableFile(sandboxBin)
	if err != nil {
		return "", "", fmt.Errorf("sandbox binary: %w", err)
	}
	operatorBin, err = executableFile(operatorBin)
	if err != nil {
		return "", "", fmt.Errorf("operator binary: %w", err)
	}
	if sandboxBin == "" {
		if exe, err := os.Executable(); err == nil && filepath.Base(exe) == sandboxBinaryName {
			sandboxBin = exe
		}
	}
	if operatorBin == "" && sandboxBin != "" {
		// Not there (a lone virt-sandbox): no runner, host-executed pods stay Pending.
		operatorBin, _ = executableFile(filepath.Join(filepath.Dir(sandboxBin), operatorBinaryName))
	}
	return sandboxBin, operatorBin, nil
}

// executableFile is path made absolute if it is an executable file; "" stays "".
func executableFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", abs)
	}
	return abs, nil
}

// hostExec is the sandbox's set-up of host-executed pods.
type hostExec struct {
	binary    string   // the runner, DIR/bin/virt-sandbox; "" when no runner starts
	program   string   // what runs the pods, DIR/bin/virt-operator
	selectors []string // Options.HostExecSelectors (nil: the runner's defaults)
	images    map[string]string
	stages    []byte // kwok stages leaving the selected pods alone
	readyFile string // written by the runner once it watches pods
	gogc      string // Options.HostExecGOGC
}

// newHostExec runs the runner with the sandbox binary when both binaries are
// known: the operator's pods are what it is for.
func newHostExec(dir string, o Options, b hostBinaries) (hostExec, error) {
	m, err := hostexec.NewMatcher(o.HostExecSelectors)
	if err != nil {
		return hostExec{}, err
	}
	hx := hostExec{
		selectors: o.HostExecSelectors,
		images:    o.HostExecImages,
		stages:    renderStages(m.StageExpression()),
		readyFile: filepath.Join(dir, "hostexec.ready"),
		gogc:      o.HostExecGOGC,
	}
	if b.sandbox != "" && b.operator != "" {
		hx.binary, hx.program = b.sandbox, b.operator
	}
	return hx, nil
}

func linkOrCopy(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// hostExecArgs is the runner's command line (after the binary).
func hostExecArgs(l layout, hx hostExec) []string {
	args := []string{
		"hostexec",
		"--kubeconfig=" + l.Kubeconfig,
		"--binary=" + hx.program,
		"--log-dir=" + filepath.Join(l.Dir, "logs"),
		"--work-dir=" + filepath.Join(l.Dir, "hostexec"),
		"--ready-file=" + hx.readyFile,
	}
	if hx.selectors != nil && len(hx.selectors) == 0 {
		args = append(args, "--selector=") // none besides the label
	}
	for _, s := range hx.selectors {
		args = append(args, "--selector="+s)
	}
	if hx.gogc != "" {
		args = append(args, "--gogc="+hx.gogc)
	}
	for _, image := range slices.Sorted(maps.Keys(hx.images)) {
		args = append(args, "--image="+image+"="+hx.images[image])
	}
	return args
}

func (hx hostExec) ready(context.Context) (bool, error) {
	_, err := os.Stat(hx.readyFile)
	return err == nil, nil
}

// defaultStageExpression is the host-exec match that stages.yaml spells out; Up
// replaces it with the expression of Options.HostExecSelectors.
var defaultStageExpression = func() string {
	m, err := hostexec.NewMatcher(nil)
	if err != nil {
		panic(err)
	}
	return m.StageExpression()
}()

// renderStages is stages.yaml with expr as the host-exec match.
func renderStages(expr string) []byte {
	return bytes.ReplaceAll(stagesYAML, []byte(defaultStageExpression), []byte(expr))
}
