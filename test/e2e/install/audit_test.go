package install_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

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
func operatorWrites(t testing.TB, path string, offset int64) []string {
	t.Helper()
	var out []string
	readAudit(t, path, offset, func(ev auditEvent) {
		if w := operatorWrite(ev); w != "" {
			out = append(out, w)
		}
	})
	return out
}

// operatorWrite describes ev if it is a write of the operator's (its lease
// renewals aside), else "".
func operatorWrite(ev auditEvent) string { return writeBy(ev, isOperator) }

// writeBy describes ev if it is a write by one the writer function accepts
// (lease renewals aside), else "".
func writeBy(ev auditEvent, writer func(auditEvent) bool) string {
	if !writer(ev) || !writeVerbs[ev.Verb] || ev.ObjectRef.Resource == "leases" {
		return ""
	}
	return strings.Join([]string{ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Namespace, ev.ObjectRef.Name}, " ")
}

// isOperator: the request is this operator's (in the test process or as
// its binary, whatever credentials it runs with).
func isOperator(ev auditEvent) bool { return ev.UserAgent == operator.UserAgent }

// byUser accepts the requests of one user.
func byUser(name string) func(auditEvent) bool {
	return func(ev auditEvent) bool { return ev.User.Username == name }
}

// waitOperatorQuiet waits until the operator has made no write (its lease
// renewals aside; only to these resources, if any are named) for quiet,
// counted from its last write or from the call, and returns the audit log's
// offset then: a window that must see no write starts there, after the last
// write of whatever came before, however long a busy machine took to get
// there. An operator that never stops writing fails the test after timeout,
// naming its last writes.
func (e *env) waitOperatorQuiet(quiet, timeout time.Duration, resources ...string) int64 {
	e.t.Helper()
	return e.waitQuiet("the operator", isOperator, quiet, timeout, resources...)
}

// waitQuiet is waitOperatorQuiet for another writer (who names it).
func (e *env) waitQuiet(who string, writer func(auditEvent) bool, quiet, timeout time.Duration, resources ...string) int64 {
	e.t.Helper()
	offset := fileSize(e.t, e.audit)
	deadline, last := time.Now().Add(timeout), time.Now()
	var recent []string
	for {
		writes, next := completeAuditLines(e.t, e.audit, offset, writer, resources)
		offset = next
		if len(writes) > 0 {
			last, recent = time.Now(), append(recent, writes...)
			recent = recent[max(0, len(recent)-10):]
		}
		switch {
		case time.Since(last) >= quiet:
			return offset
		case time.Now().After(deadline):
			e.t.Fatalf("%s still writes after %s (none for %s wanted); its last writes:\n  %s", who, timeout, quiet, strings.Join(recent, "\n  "))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// completeAuditLines is the writer's writes (to resources, if any are
// named) among the complete lines of the audit log after offset, and the
// offset after the last of them (the API server may be half-way through
// writing the next).
func completeAuditLines(t testing.TB, path string, offset int64, writer func(auditEvent) bool, resources []string) ([]string, int64) {
	t.Helper()
	end := offset
	if f, err := os.Open(path); err == nil {
		data, err := io.ReadAll(io.NewSectionReader(f, offset, 1<<40))
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
		end += int64(bytes.LastIndexByte(data, '\n') + 1)
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if end == offset {
		return nil, end
	}
	var out []string
	readAuditRange(t, path, offset, end, func(ev auditEvent) {
		if w := writeBy(ev, writer); w != "" && (len(resources) == 0 || slices.Contains(resources, ev.ObjectRef.Resource)) {
			out = append(out, w)
		}
	})
	return out, end
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
