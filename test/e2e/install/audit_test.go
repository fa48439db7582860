package install_test

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/virt-operator/virt-operator/internal/operator"
)

// auditEvent is the part of an API server audit event the tests read.
type auditEvent struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
}

var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// operatorWrites lists the operator's write requests in the audit log after
// byte offset, except its leader-election lease renewals.
func operatorWrites(t *testing.T, path string, offset int64) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.UserAgent != operator.UserAgent || !writeVerbs[ev.Verb] || ev.ObjectRef.Resource == "leases" {
			continue
		}
		out = append(out, strings.Join([]string{ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Namespace, ev.ObjectRef.Name}, " "))
	}
	return out
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
