package operator

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeReviews answers TokenReviews from users (token → user) and
// SubjectAccessReviews from allowed (user → may get /metrics), counting them.
type fakeReviews struct {
	users        map[string]string
	allowed      map[string]bool
	tokenReviews int
	accessChecks int
	fail         bool
}

func (f *fakeReviews) reviewer(now func() time.Time) *reviewer {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.tokenReviews++
		if f.fail {
			return true, nil, errors.New("connection refused")
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		if u, ok := f.users[tr.Spec.Token]; ok {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: u, Groups: []string{"system:serviceaccounts"}}}
		}
		return true, tr, nil
	})
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.accessChecks++
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		attrs := sar.Spec.NonResourceAttributes
		sar.Status.Allowed = f.allowed[sar.Spec.User] && attrs != nil && attrs.Path == "/metrics" && attrs.Verb == "get" && len(sar.Spec.Groups) == 1
		return true, sar, nil
	})
	return &reviewer{tokens: cs.AuthenticationV1().TokenReviews(), access: cs.AuthorizationV1().SubjectAccessReviews(),
		now: now, decisions: map[[sha256.Size]byte]decision{}}
}

func TestMetricsScrapesAreAuthenticatedAndAuthorized(t *testing.T) {
	f := &fakeReviews{users: map[string]string{"prom": "system:serviceaccount:monitoring:prometheus-k8s", "other": "system:serviceaccount:default:other"},
		allowed: map[string]bool{"system:serviceaccount:monitoring:prometheus-k8s": true}}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rv := f.reviewer(func() time.Time { return now })
	h := rv.handler(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	get := func(auth string) int {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"not a bearer token", "Basic cHJvbTpwcm9t", http.StatusUnauthorized},
		{"an unknown token", "Bearer nobody", http.StatusUnauthorized},
		{"a user without the reader role", "Bearer other", http.StatusForbidden},
		{"Prometheus", "Bearer prom", http.StatusOK},
	} {
		if got := get(tc.auth); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	// Within the TTL a scrape costs no review; after it, one again.
	reviews := f.tokenReviews
	get("Bearer prom")
	if f.tokenReviews != reviews {
		t.Errorf("a second scrape within %v asked the API server again", scrapeDecisionTTL)
	}
	now = now.Add(scrapeDecisionTTL + time.Second)
	get("Bearer prom")
	if f.tokenReviews != reviews+1 {
		t.Errorf("after the TTL: %d token reviews, want %d", f.tokenReviews, reviews+1)
	}
	// An API server that cannot be asked lets nothing through.
	f.fail = true
	now = now.Add(scrapeDecisionTTL + time.Second)
	if got := get("Bearer prom"); got != http.StatusInternalServerError {
		t.Errorf("reviews failing: %d, want 500", got)
	}
}

// A flood of distinct tokens does not grow the cache past its bound.
func TestScrapeDecisionsAreBounded(t *testing.T) {
	f := &fakeReviews{users: map[string]string{}}
	rv := f.reviewer(time.Now)
	for i := range maxScrapeDecisions + 10 {
		if _, err := rv.review(context.Background(), string(rune('a'+i%26))+time.Duration(i).String(), "get", "/metrics"); err != nil {
			t.Fatal(err)
		}
	}
	if len(rv.decisions) > maxScrapeDecisions {
		t.Fatalf("%d cached decisions, bound %d", len(rv.decisions), maxScrapeDecisions)
	}
}
