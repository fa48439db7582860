package cliutil

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestIgnoreCanceled(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		err, want error
	}{
		{nil, nil},
		{context.Canceled, nil},
		{fmt.Errorf("waiting for etcd: %w", context.Canceled), nil},
		{context.DeadlineExceeded, context.DeadlineExceeded},
		{boom, boom},
	} {
		if got := IgnoreCanceled(tc.err); !errors.Is(got, tc.want) || (tc.want == nil && got != nil) {
			t.Errorf("IgnoreCanceled(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
