package realkubevirt_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

type auditEvent struct {
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// auditOf counts user's requests in the audit log and lists the refused ones
// (403 Forbidden).
func auditOf(t *testing.T, path, user string) (int, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	n := 0
	var refused []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.User.Username != user {
			continue
		}
		n++
		if ev.ResponseStatus.Code == 403 {
			refused = append(refused, fmt.Sprintf("%s %s", ev.Verb, ev.RequestURI))
		}
	}
	return n, refused
}
