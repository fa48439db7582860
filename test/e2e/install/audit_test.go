package install_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/virt-operator/virt-operator/internal/operator"
)

// auditEvent is the part of an API server audit event the tests read.
type auditEvent struct {
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// readAudit calls each with every event of the audit log at path after byte
// offset; lines that are not events are skipped.
func readAudit(t testing.TB, path string, offset int64, each func(auditEvent)) {
	t.Helper()
	readAuditRange(t, path, offset, -1, each)
}

// readAuditRange is readAudit up to byte end (-1: the end of the file).
func readAuditRange(t testing.TB, path string, offset, end int64, each func(auditEvent)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		t.Fatal(err)
	}
	var r io.Reader = f
	if end >= 0 {
		r = io.LimitReader(f, end-offset)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			each(ev)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// operatorWrites lists the operator's write requests in the audit log after
// byte offset, except its leader-election lease renewals.
func operatorWrites(t *testing.T, path string, offset int64) []string {
	t.Helper()
	var out []string
	readAudit(t, path, offset, func(ev auditEvent) {
		if ev.UserAgent == operator.UserAgent && writeVerbs[ev.Verb] && ev.ObjectRef.Resource != "leases" {
			out = append(out, strings.Join([]string{ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Namespace, ev.ObjectRef.Name}, " "))
		}
	})
	return out
}

// fileSize is the size of path, 0 while it does not exist yet.
func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
