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

// operatorBinaryName is the base name an executable must have to be taken as the
// default Options.OperatorBinary.
const operatorBinaryName = "virt-operator"

// hostExec is the sandbox's set-up of host-executed pods.
type hostExec struct {
	binary    string   // DIR/bin/virt-operator; "" when no runner starts
	selectors []string // Options.HostExecSelectors (nil: the runner's defaults)
	images    map[string]string
	stages    []byte // kwok stages leaving the selected pods alone
	readyFile string // written by the runner once it watches pods
}

func newHostExec(dir string, o Options) (hostExec, error) {
	m, err := hostexec.NewMatcher(o.HostExecSelectors)
	if err != nil {
		return hostExec{}, err
	}
	hx := hostExec{
		selectors: o.HostExecSelectors,
		images:    o.HostExecImages,
		stages:    renderStages(m.StageExpression()),
		readyFile: filepath.Join(dir, "hostexec.ready"),
	}
	src, err := operatorBinary(o.OperatorBinary)
	if err != nil || src == "" {
		return hx, err
	}
	// A private link (or copy): `go run ... sandbox up` deletes its binary on exit and
	// a rebuild must not change what a running sandbox executes.
	hx.binary = filepath.Join(dir, "bin", operatorBinaryName)
	if err := linkOrCopy(src, hx.binary); err != nil {
		return hx, fmt.Errorf("hostexec: installing %s: %w", src, err)
	}
	return hx, nil
}

// operatorBinary is the explicit binary, which must be executable, or else this
// executable if it is a virt-operator binary, or else "".
func operatorBinary(explicit string) (string, error) {
	if explicit == "" {
		exe, err := os.Executable()
		if err == nil && filepath.Base(exe) == operatorBinaryName {
			return exe, nil
		}
		return "", nil // not known to be a virt-operator binary: no runner
	}
	abs, err := filepath.Abs(explicit)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("hostexec: operator binary: %w", err)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("hostexec: operator binary %s is not an executable file", abs)
	}
	return abs, nil
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
		"sandbox", "hostexec",
		"--kubeconfig=" + l.Kubeconfig,
		"--binary=" + hx.binary,
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
