package generate

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/virt-operator/virt-operator/config/crd"
)

// ownCRDs are the kubevirt.io CRDs of our own API types, installed with the
// schemas controller-gen generates (config/crd/bases). The KubeVirt CRD is also
// there but ships with the operator, not the strategy.
var ownCRDs = []string{
	"virtualmachineinstances.kubevirt.io",
	"virtualmachines.kubevirt.io",
	"virtualmachineinstancemigrations.kubevirt.io",
}

// crdDef describes a CRD whose types this operator does not define: it is
// installed with upstream's group, names, scope and versions, and an open schema.
type crdDef struct {
	group, kind, plural string
	shortNames          []string
	cluster             bool     // cluster-scoped
	storage             string   // the storage version, served
	older               []string // older versions, served and deprecated
	status, scale       bool     // subresources
	all                 bool     // in the "all" category
}

var foreignCRDs = []crdDef{
	{group: groupKubeVirt, kind: "VirtualMachineInstancePreset", plural: "virtualmachineinstancepresets",
		shortNames: []string{"vmipreset", "vmipresets"}, storage: "v1", older: []string{"v1alpha3"}, all: true},
	{group: groupKubeVirt, kind: "VirtualMachineInstanceReplicaSet", plural: "virtualmachineinstancereplicasets",
		shortNames: []string{"vmirs", "vmirss"}, storage: "v1", older: []string{"v1alpha3"}, status: true, scale: true, all: true},

	{group: groupSnapshot, kind: "VirtualMachineSnapshot", plural: "virtualmachinesnapshots",
		shortNames: []string{"vmsnapshot", "vmsnapshots"}, storage: "v1beta1", older: []string{"v1alpha1"}, status: true},
	{group: groupSnapshot, kind: "VirtualMachineSnapshotContent", plural: "virtualmachinesnapshotcontents",
		shortNames: []string{"vmsnapshotcontent", "vmsnapshotcontents"}, storage: "v1beta1", older: []string{"v1alpha1"}, status: true},
	{group: groupSnapshot, kind: "VirtualMachineRestore", plural: "virtualmachinerestores",
		shortNames: []string{"vmrestore", "vmrestores"}, storage: "v1beta1", older: []string{"v1alpha1"}, status: true},

	{group: groupInstancetype, kind: "VirtualMachineInstancetype", plural: "virtualmachineinstancetypes",
		shortNames: []string{"vminstancetype", "vminstancetypes", "vmf", "vmfs"}, storage: "v1beta1", older: []string{"v1alpha1", "v1alpha2"}},
	{group: groupInstancetype, kind: "VirtualMachineClusterInstancetype", plural: "virtualmachineclusterinstancetypes",
		shortNames: []string{"vmclusterinstancetype", "vmclusterinstancetypes", "vmcf", "vmcfs"}, cluster: true,
		storage: "v1beta1", older: []string{"v1alpha1", "v1alpha2"}},
	{group: groupInstancetype, kind: "VirtualMachinePreference", plural: "virtualmachinepreferences",
		shortNames: []string{"vmpref", "vmprefs", "vmp", "vmps"}, storage: "v1beta1", older: []string{"v1alpha1", "v1alpha2"}},
	{group: groupInstancetype, kind: "VirtualMachineClusterPreference", plural: "virtualmachineclusterpreferences",
		shortNames: []string{"vmcp", "vmcps"}, cluster: true, storage: "v1beta1", older: []string{"v1alpha1", "v1alpha2"}},

	{group: groupPool, kind: "VirtualMachinePool", plural: "virtualmachinepools",
		shortNames: []string{"vmpool", "vmpools"}, storage: "v1beta1", older: []string{"v1alpha1"}, status: true, scale: true, all: true},
	{group: groupMigrations, kind: "MigrationPolicy", plural: "migrationpolicies", cluster: true, storage: "v1alpha1", status: true},
	{group: groupExport, kind: "VirtualMachineExport", plural: "virtualmachineexports",
		shortNames: []string{"vmexport", "vmexports"}, storage: "v1beta1", older: []string{"v1alpha1"}, status: true},
	{group: groupClone, kind: "VirtualMachineClone", plural: "virtualmachineclones",
		shortNames: []string{"vmclone", "vmclones"}, storage: "v1beta1", older: []string{"v1alpha1"}, status: true},
	{group: groupBackup, kind: "VirtualMachineBackup", plural: "virtualmachinebackups",
		shortNames: []string{"vmbackup", "vmbackups"}, storage: "v1alpha1", status: true},
	{group: groupBackup, kind: "VirtualMachineBackupTracker", plural: "virtualmachinebackuptrackers",
		shortNames: []string{"vmbackuptracker", "vmbackuptrackers"}, storage: "v1alpha1", status: true},
	{group: groupPlugin, kind: "Plugin", plural: "plugins", cluster: true, storage: "v1alpha1", status: true},
}

func (b *builder) crds() {
	for _, name := range ownCRDs {
		c, err := crd.Get(name)
		if err != nil {
			b.fail(err)
			return
		}
		c.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
		b.add(c)
	}
	for _, d := range foreignCRDs {
		b.add(d.build())
	}
}

func (d crdDef) build() *apiextensionsv1.CustomResourceDefinition {
	singular := d.plural[:len(d.plural)-1]
	if d.plural == "migrationpolicies" {
		singular = "migrationpolicy"
	}
	scope := apiextensionsv1.NamespaceScoped
	if d.cluster {
		scope = apiextensionsv1.ClusterScoped
	}
	names := apiextensionsv1.CustomResourceDefinitionNames{
		Kind: d.kind, ListKind: d.kind + "List", Plural: d.plural, Singular: singular,
		ShortNames: append([]string(nil), d.shortNames...),
	}
	if d.all {
		names.Categories = []string{"all"}
	}
	versions := []apiextensionsv1.CustomResourceDefinitionVersion{d.version(d.storage, true)}
	for _, v := range d.older {
		versions = append(versions, d.version(v, false))
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: meta(d.plural+"."+d.group, "", nil),
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: d.group, Names: names, Scope: scope, Versions: versions,
		},
	}
}

func (d crdDef) version(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
	preserve := true
	v := apiextensionsv1.CustomResourceDefinitionVersion{
		Name: name, Served: true, Storage: storage,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", XPreserveUnknownFields: &preserve,
		}},
	}
	if !storage {
		v.Deprecated = true
	}
	if d.status || d.scale {
		v.Subresources = &apiextensionsv1.CustomResourceSubresources{}
	}
	if d.status {
		v.Subresources.Status = &apiextensionsv1.CustomResourceSubresourceStatus{}
	}
	if d.scale {
		selector := ".status.labelSelector"
		v.Subresources.Scale = &apiextensionsv1.CustomResourceSubresourceScale{
			SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: &selector,
		}
	}
	return v
}
