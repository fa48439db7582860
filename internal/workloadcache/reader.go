package workloadcache

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// Reader answers as a Cache does by listing through a client on every call:
// for the unit tests' fake clients, and for callers without a running
// Cache. It holds nothing, costs a list per call, and announces no changes.
// A kind that is not served reads as none.
type Reader struct {
	Client client.Reader
}

// Synced: a Reader reads the API as it is.
func (Reader) Synced() bool { return true }

// VMIs lists the VMIs.
func (r Reader) VMIs() []*core.VMI {
	list := &v1.VirtualMachineInstanceList{}
	if err := r.Client.List(context.Background(), list); err != nil {
		return nil
	}
	return core.CompactVMIs(list.Items)
}

// VMI reads one VMI.
func (r Reader) VMI(k core.Key) *core.VMI {
	vmi := &v1.VirtualMachineInstance{}
	if err := r.Client.Get(context.Background(), client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, vmi); err != nil {
		return nil
	}
	return core.CompactVMI(vmi)
}

// AllMigrations lists the migrations.
func (r Reader) AllMigrations() []*core.Migration {
	list := &v1.VirtualMachineInstanceMigrationList{}
	if err := r.Client.List(context.Background(), list); err != nil && !meta.IsNoMatchError(err) {
		return nil
	}
	return core.CompactMigrations(list.Items)
}

// Migrations lists the migrations, as a plan reads them.
func (r Reader) Migrations() core.Migrations { return core.MigrationsOf(r.AllMigrations()) }

// Migration reads one migration.
func (r Reader) Migration(namespace, name string) *core.Migration {
	m := &v1.VirtualMachineInstanceMigration{}
	if err := r.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, m); err != nil {
		return nil
	}
	return core.CompactMigration(m)
}

// OnVMI: a Reader announces nothing.
func (Reader) OnVMI(Handler[core.VMI]) {}

// OnMigration: a Reader announces nothing.
func (Reader) OnMigration(Handler[core.Migration]) {}
