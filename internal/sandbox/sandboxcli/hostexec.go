package sandboxcli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/virt-operator/virt-operator/internal/cliutil"
	"github.com/virt-operator/virt-operator/internal/sandbox/hostexec"
)

// NewHostExecCommand returns the hidden `virt-sandbox hostexec`: the sandbox's
// runner of host-executed pods (package hostexec), started in the background by
// `virt-sandbox up` and stopped by `virt-sandbox down`.
func NewHostExecCommand() *cobra.Command {
	var (
		o                 hostexec.Options
		images            []string
		kubeconfig, ready string
	)
	cmd := &cobra.Command{
		Use:    "hostexec",
		Short:  "Run the sandbox's host-executed pods as host processes (started by virt-sandbox up)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kubeconfig == "" {
				return cliutil.UsageError(errors.New("--kubeconfig is required"))
			}
			o.Programs.Images = map[string]string{}
			for _, m := range images {
				image, prog, ok := strings.Cut(m, "=")
				if !ok || image == "" || prog == "" {
					return cliutil.UsageError(fmt.Errorf("--image %q: want IMAGE=PROGRAM", m))
				}
				o.Programs.Images[image] = prog
			}
			o.Kubeconfig = kubeconfig
			o.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return err
			}
			cfg.QPS, cfg.Burst = 50, 100
			cfg.UserAgent = "virt-operator-sandbox-hostexec"
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			r, err := hostexec.NewRunner(client, o)
			if err != nil {
				return cliutil.UsageError(err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			select {
			case <-r.Ready():
				if ready != "" {
					if err := os.WriteFile(ready, []byte(time.Now().Format(time.RFC3339)+"\n"), 0o644); err != nil {
						stop()
						return errors.Join(err, <-done)
					}
				}
				return <-done
			case err := <-done:
				return err
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "the sandbox's kubeconfig: the runner's API access, and KUBECONFIG of every process")
	f.StringVar(&o.Programs.Default, "binary", "", "host program for images without an --image mapping (the virt-operator binary)")
	f.StringArrayVar(&images, "image", nil, "IMAGE=PROGRAM: run containers of IMAGE (or of its repository without tag) with PROGRAM; repeatable")
	f.StringArrayVar(&o.Selectors, "selector", hostexec.DefaultSelectors, "label selector of host-executed pods besides "+hostexec.Label+"="+hostexec.LabelValue+"; repeatable; \"\" for none")
	f.StringVar(&o.LogDir, "log-dir", "", "directory of the pods' logs (hostexec-NAMESPACE-POD.log)")
	f.StringVar(&o.WorkDir, "work-dir", "", "directory of the pods' working directories")
	f.StringVar(&ready, "ready-file", "", "file written once the runner watches pods")
	f.BoolVar(&o.PodCredentials, "pod-credentials", true, "run each pod's processes with a token of the pod's ServiceAccount (its RBAC, as in a pod), not with --kubeconfig's credentials")
	f.DurationVar(&o.Timeout, "timeout", hostexec.DefaultTimeout, "longest run of one pod (a shorter activeDeadlineSeconds wins)")
	f.IntVar(&o.Concurrency, "concurrency", hostexec.DefaultConcurrency, "pods run at once")
	f.StringVar(&o.GOGC, "gogc", "", "GOGC of every process whose container sets none (empty: the programs' own)")
	return cmd
}
