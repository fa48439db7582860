package kubevirt

import (
	"testing"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// A pass that fails returns its error alone (controller-runtime retries it
// with backoff, and warns about a requeue returned beside an error); a pass
// that succeeds asks for the look again its phases want.
func TestNoRequeueBesideAnError(t *testing.T) {
	e := newUpgradeEnv(t, func(*v1.KubeVirtSpec) {})
	e.failWrites = "CustomResourceDefinition"
	res, err := e.reconcile()
	if err == nil {
		t.Fatal("the refused write was not an error")
	}
	if res.RequeueAfter != 0 || res.Requeue { //nolint:staticcheck // Requeue is what must stay unset
		t.Fatalf("a failed pass asks to requeue after %v beside its error", res.RequeueAfter)
	}
}
