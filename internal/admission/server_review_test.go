package admission

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A body larger than the API server sends is refused as such, unread beyond
// the limit, instead of failing to decode somewhere in its middle.
func TestReviewRefusesAnOversizedBody(t *testing.T) {
	s, _ := newServer(t)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	for _, tc := range []struct {
		size int
		want int
		says string
	}{
		{maxReviewBytes + 1, http.StatusRequestEntityTooLarge, "the AdmissionReview is over 8 MiB"},
		{maxReviewBytes, http.StatusBadRequest, "not an AdmissionReview"},
	} {
		resp, err := http.Post(ts.URL+PathUpdate, "application/json", bytes.NewReader(bytes.Repeat([]byte(" "), tc.size)))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != tc.want || !strings.Contains(string(msg), tc.says) {
			t.Errorf("%d bytes: status %d, %q; want %d, %q", tc.size, resp.StatusCode, msg, tc.want, tc.says)
		}
	}
}

// Reviews past maxReviews wait unread for one to finish, and give up with
// their request: requests in any number cannot hold a body each.
func TestReviewsInFlightAreBounded(t *testing.T) {
	s, _ := newServer(t)
	h := s.Handler()
	s.reviewsOnce.Do(func() { s.reviews = make(chan struct{}, maxReviews) })
	for range maxReviews {
		s.reviews <- struct{}{} // reviews under way
	}
	read := false
	body := readFunc(func([]byte) (int, error) { read = true; return 0, io.EOF })
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodPost, PathUpdate, body))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "busy") || read {
		t.Errorf("with %d reviews under way: %d %q, body read: %v", maxReviews, rec.Code, rec.Body, read)
	}
	<-s.reviews // one finishes
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodPost, PathUpdate, strings.NewReader("not json")))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("once one finished: %d %q, want the request read (400)", rec.Code, rec.Body)
	}
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }
