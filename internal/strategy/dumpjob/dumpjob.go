// Package dumpjob owns the install-strategy Job: the Job that generates a
// deployment's strategy by running a virt-operator image in upstream's
// --dump-install-strategy mode, its deterministic name, its attempts and their
// backoff, and how a finished one is read.
package dumpjob

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// Strings of the install-strategy Job, as upstream names them.
const (
	// NamePrefix starts every strategy Job's name (and so its pods').
	NamePrefix = "virt-operator-install-strategy-"
	// AppLabelValue is the Job's and its pods' metadata.AppLabel.
	AppLabelValue = "virt-operator-strategy-dumper"
	// AttemptAnnotation counts failed Jobs for one deployment ID, for the backoff.
	AttemptAnnotation = "virt-operator.kubevirt.io/strategy-attempt"
	// IDPrefixLength is how much of the deployment ID a Job's name holds.
	IDPrefixLength = 16
)

// New is the Job that generates and stores the install strategy of cfg,
// speaking upstream's protocol so that any release's operator image can be its
// image: it runs `virt-operator --dump-install-strategy` with the config in
// upstream's shape in TARGET_DEPLOYMENT_CONFIG. The image is cfg.VirtOperatorImage:
// this operator's own for a release the builtin generator knows, the release's own
// operator otherwise (deployid.setImages). The Job carries the deployment ID in its
// identifier annotation so the operator finds it again after a restart, and its
// name is Name's, so one attempt is never created twice.
func New(cfg *deployid.Config, serviceAccount string, attempt int) *batchv1.Job {
	labels := map[string]string{
		metadata.AppLabel:             AppLabelValue,
		metadata.ManagedByLabel:       metadata.ManagedByValue,
		metadata.InstallStrategyLabel: "",
	}
	annotations := map[string]string{
		metadata.InstallStrategyIdentifierAnnotation: cfg.ID,
		metadata.InstallStrategyVersionAnnotation:    cfg.KubeVirtVersion,
		metadata.InstallStrategyRegistryAnnotation:   cfg.Registry,
		AttemptAnnotation:                            strconv.Itoa(attempt),
	}
	image := cfg.Image(deployid.Operator)
	env := append([]corev1.EnvVar{
		{Name: "VIRT_OPERATOR_IMAGE", Value: image},
		{Name: "TARGET_DEPLOYMENT_CONFIG", Value: cfg.UpstreamJSON()},
		// Deprecated names upstream still sets, for releases that read them.
		{Name: "TARGET_INSTALL_NAMESPACE", Value: cfg.Namespace},
		{Name: "TARGET_IMAGE_PULL_POLICY", Value: string(cfg.ImagePullPolicy())},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
	}, cfg.PassthroughEnv()...)
	pod := corev1.PodSpec{
		ServiceAccountName: serviceAccount,
		RestartPolicy:      corev1.RestartPolicyNever,
		ImagePullSecrets:   cfg.ImagePullSecrets(),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:            "install-strategy-upload",
			Image:           image,
			ImagePullPolicy: cfg.ImagePullPolicy(),
			Command:         []string{"virt-operator", "--dump-install-strategy"},
			Env:             env,
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		}},
	}
	// Placed as the control plane: spec.infra, else control-plane nodes (upstream).
	apply.InjectPlacement(&pod, cfg.Infra, apply.ControlPlane)
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        Name(cfg.ID, attempt),
			Namespace:   cfg.Namespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0), // the operator retries with its own backoff and reports each failure
			ActiveDeadlineSeconds: ptr.To[int64](600),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
					metadata.AppLabel: AppLabelValue,
					"np.kubevirt.io/allow-access-cluster-services": "true",
				}},
				Spec: pod,
			},
		},
	}
}

// Name names the Job of one attempt for one deployment ID: the
// prefix, the ID's first 16 characters and the attempt (at most 52 characters,
// within the 63 a Job's name may have for its pods' job-name label).
func Name(id string, attempt int) string {
	return fmt.Sprintf("%s%.*s-%d", NamePrefix, IDPrefixLength, id, attempt)
}

// Outcome is where an install-strategy Job stands.
type Outcome struct {
	// JobName is the Job's name.
	JobName          string
	Finished, Failed bool
	// Message is the Job's failure message.
	Message string
	// FinishedAt is when the Job completed or failed.
	FinishedAt time.Time
}

// OutcomeOf reads a Job's terminal conditions.
func OutcomeOf(job *batchv1.Job) Outcome {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return Outcome{JobName: job.Name, Finished: true, FinishedAt: c.LastTransitionTime.Time}
		case batchv1.JobFailed:
			msg := c.Message
			if msg == "" {
				msg = c.Reason
			}
			return Outcome{JobName: job.Name, Finished: true, Failed: true, Message: msg, FinishedAt: c.LastTransitionTime.Time}
		}
	}
	return Outcome{JobName: job.Name}
}

// PodFailureMessage is the termination message of a Job's failed container:
// the program's own error, which the Job's condition does not carry.
func PodFailureMessage(pods []corev1.Pod) string {
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 && t.Message != "" {
				return strings.TrimSpace(t.Message)
			}
		}
	}
	return ""
}

// Attempt is how many strategy Jobs have already been tried for this ID.
func Attempt(job *batchv1.Job) int {
	n, _ := strconv.Atoi(job.Annotations[AttemptAnnotation])
	return n
}

// RetryDelay is the backoff before a failed strategy Job is replaced:
// 5s, 10s, 20s ... capped at 5 minutes.
func RetryDelay(attempt int) time.Duration {
	d := 5 * time.Second
	for i := 0; i < attempt && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}
