package workloadupdate

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

const (
	curImage = "cur-image"
	oldImage = "madeup"
	ns       = "default"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

var both = Methods{LiveMigrate: true, Evict: true}

type vmiOpt func(*v1.VirtualMachineInstance)

func newVMI(name, image string, opts ...vmiOpt) v1.VirtualMachineInstance {
	vmi := v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name)},
		Status: v1.VirtualMachineInstanceStatus{
			Phase:                         v1.VMIRunning,
			LauncherContainerImageVersion: image,
		},
	}
	for _, o := range opts {
		o(&vmi)
	}
	return vmi
}

func cond(t v1.VirtualMachineInstanceConditionType, s corev1.ConditionStatus) vmiOpt {
	return func(v *v1.VirtualMachineInstance) {
		v.Status.Conditions = append(v.Status.Conditions, v1.VirtualMachineInstanceCondition{Type: t, Status: s})
	}
}

var migratable = cond(v1.VMIConditionLiveMigratable, corev1.ConditionTrue)

func annotated(k string) vmiOpt {
	return func(v *v1.VirtualMachineInstance) {
		if v.Annotations == nil {
			v.Annotations = map[string]string{}
		}
		v.Annotations[k] = ""
	}
}

func phase(p v1.VirtualMachineInstancePhase) vmiOpt {
	return func(v *v1.VirtualMachineInstance) { v.Status.Phase = p }
}

func migState(s v1.VirtualMachineInstanceMigrationState) vmiOpt {
	return func(v *v1.VirtualMachineInstance) { v.Status.MigrationState = &s }
}

// many makes n VMIs named prefix-i.
func many(prefix string, n int, image string, opts ...vmiOpt) []v1.VirtualMachineInstance {
	out := make([]v1.VirtualMachineInstance, 0, n)
	for i := range n {
		out = append(out, newVMI(fmt.Sprintf("%s-%03d", prefix, i), image, opts...))
	}
	return out
}

// newMig is a migration for vmi in phase p; wu marks it as the updater's.
func newMig(name, vmi string, p v1.VirtualMachineInstanceMigrationPhase, wu bool) v1.VirtualMachineInstanceMigration {
	m := v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name)},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: vmi},
		Status:     v1.VirtualMachineInstanceMigrationStatus{Phase: p},
	}
	if wu {
		m.Annotations = map[string]string{WorkloadUpdateMigrationAnnotation: ""}
	}
	return m
}

// inputs are the planner's inputs for these VMIs and migrations, in their
// compact forms (as the cache holds them), explained.
func inputs(vmis []v1.VirtualMachineInstance, migs []v1.VirtualMachineInstanceMigration, m Methods) Inputs {
	return Inputs{
		VMIs: CompactVMIs(vmis), Migrations: MigrationsOf(CompactMigrations(migs)), TargetLauncherImage: curImage,
		Settings: Settings{Methods: m}, Now: t0, Seed: 1, Explain: true,
	}
}

// compact is vmi's compact form.
func compact(vmi v1.VirtualMachineInstance) *VMI { return CompactVMI(&vmi) }

// unfinishedOf are the compact unfinished migrations of key among migs.
func unfinishedOf(key Key, migs ...v1.VirtualMachineInstanceMigration) []*Migration {
	return indexUnfinished(CompactMigrations(migs)).byVMI[key]
}

func names(p Plan) (mig, ev []string) {
	for _, r := range p.Migrate {
		mig = append(mig, r.VMI.Name)
	}
	for _, v := range p.Evict {
		ev = append(ev, v.Name)
	}
	return mig, ev
}

// migsOf are migrations as the planner reads them.
func migsOf(migs ...v1.VirtualMachineInstanceMigration) Migrations {
	return MigrationsOf(CompactMigrations(migs))
}
