package manager

import "testing"

func TestPriorityClass(t *testing.T) {
	pc, err := PriorityClass()
	if err != nil {
		t.Fatal(err)
	}
	if pc.Name != "kubevirt-cluster-critical" || pc.Value != 1_000_000_000 || pc.GlobalDefault {
		t.Errorf("%+v", pc)
	}
}
