package apiclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/apiclient"
)

// A host's refusals for now are typed: a quota's 429 and a short-of-
// memory 503 say when to try again.
func TestRefusalsSayWhenToRetry(t *testing.T) {
	tests := []struct {
		status     int
		code       string
		retryAfter string
		want       []error
		notWant    error
	}{
		{http.StatusTooManyRequests, "submission_rate", "3", []error{apiclient.ErrQuota, apiclient.ErrTooManyRequests}, apiclient.ErrUnavailable},
		{http.StatusTooManyRequests, "session_quota", "1", []error{apiclient.ErrQuota, apiclient.ErrTooManyRequests}, nil},
		{http.StatusTooManyRequests, "host_busy", "1", []error{apiclient.ErrTooManyRequests}, apiclient.ErrQuota},
		{http.StatusServiceUnavailable, "memory_pressure", "1", []error{apiclient.ErrMemoryPressure, apiclient.ErrUnavailable}, apiclient.ErrTooManyRequests},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", tt.retryAfter)
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(`{"error":{"code":"` + tt.code + `","message":"refused"}}`))
			}))
			defer srv.Close()
			c, _ := apiclient.New(srv.URL, "t")
			_, err := c.Submit(context.Background(), apiclient.SubmitRequest{Source: "1"})
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("%v is not %v", err, w)
				}
			}
			if tt.notWant != nil && errors.Is(err, tt.notWant) {
				t.Errorf("%v is %v", err, tt.notWant)
			}
			var apiErr *apiclient.Error
			if !errors.As(err, &apiErr) || apiErr.RetryAfter.String() != tt.retryAfter+"s" {
				t.Fatalf("RetryAfter of %v, want %ss", err, tt.retryAfter)
			}
		})
	}
}

// A session's budget and pending limit are the submission's to ask for
// (splash run --budget and --pending send them): a script with more calls
// in flight than the host's default of 256 runs when it asks for room.
func TestSubmitAsksForBudgetAndPending(t *testing.T) {
	c, _ := newClient(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := `const ps = []; for (let i = 0; i < 300; i++) ps.push(tool.start("demo.echo", "x")); (await Promise.all(ps)).length`
	s, err := c.Submit(ctx, apiclient.SubmitRequest{Source: src, WaitMS: 10_000})
	if err != nil || s.State != apiclient.StateFailed || s.ErrorCode != "pending_limit" {
		t.Fatalf("with the default: %+v, %v; want failed with pending_limit", s, err)
	}
	s, err = c.Submit(ctx, apiclient.SubmitRequest{Source: src, MaxPending: 300, ToolCallBudget: 300, WaitMS: 10_000})
	if err != nil || s.State != apiclient.StateCompleted || s.Value == nil || *s.Value != "300" {
		t.Fatalf("asking for 300: %+v, %v", s, err)
	}
	s, err = c.Submit(ctx, apiclient.SubmitRequest{Source: src, MaxPending: 300, ToolCallBudget: 299, WaitMS: 10_000})
	if err != nil || s.State != apiclient.StateFailed || s.ErrorCode != "" && s.ErrorCode != "budget_exhausted" {
		t.Fatalf("a budget of 299 for 300 calls: %+v, %v", s, err)
	}
}
