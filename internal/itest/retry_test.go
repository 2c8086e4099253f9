package itest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// failing fails the first n attempts of every call with fail, then echoes.
func failing(n uint32, fail func() error) func(context.Context, *workeragent.Call) (workeragent.Output, error) {
	return func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
		if c.Attempt <= n {
			return workeragent.Output{}, fail()
		}
		return echo(ctx, c)
	}
}

const catchScript = `let r;
try { r = "ok: " + await tool.start(%q, "x"); } catch (e) { r = "caught: " + e.message; }
r`

// Scenario 2: a transient failure twice, then success. With three attempts
// the worker sees attempts 1, 2, 3 under one key with growing gaps; with
// two the script sees the failure.
func TestTransientRetries(t *testing.T) {
	const initial = 50 * time.Millisecond
	tests := []struct {
		name         string
		maxAttempts  int
		wantAttempts []uint32
		wantValue    string
	}{
		{name: "third attempt succeeds", maxAttempts: 3, wantAttempts: []uint32{1, 2, 3}, wantValue: "ok: x"},
		{name: "attempts run out", maxAttempts: 2, wantAttempts: []uint32{1, 2}, wantValue: "caught: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ht := tool("it.flaky")
			ht.MaxAttempts = tt.maxAttempts
			c := newCluster(t, options{tools: []toolspec.Spec{ht}, retryInitial: initial, retryMax: 2 * time.Second})
			fx := newEffects()
			c.startWorker("w1", func(a *workeragent.Agent) {
				must(t, a.HandleTool(c.tool("it.flaky"), counting(fx, failing(2, func() error {
					return workeragent.Retryable(errors.New("flaky backend"))
				}))))
			})
			s := c.wait(c.submit(sprintf(catchScript, "it.flaky")), 0)
			wantValuePrefix(t, s, tt.wantValue)
			if tt.maxAttempts == 2 && !strings.Contains(s.Value, "flaky backend") {
				t.Errorf("failure = %q, want the worker's error", s.Value)
			}
			got := fx.attempts()
			if len(got) != len(tt.wantAttempts) {
				t.Fatalf("worker saw %d attempts, want %d", len(got), len(tt.wantAttempts))
			}
			for i, a := range got {
				if a.attempt != tt.wantAttempts[i] || a.key != got[0].key {
					t.Errorf("attempt %d = %d under key %q, want %d under %q", i, a.attempt, a.key, tt.wantAttempts[i], got[0].key)
				}
			}
			// Backoff is exponential with ±50% jitter: the first wait is at
			// least initial/2, the second at least initial. Only lower
			// bounds are asserted; a loaded machine may be slower.
			for i := 1; i < len(got); i++ {
				gap := got[i].started.Sub(got[i-1].returned)
				floor := initial / 2 << (i - 1)
				if gap < floor {
					t.Errorf("gap before attempt %d = %v, want >= %v", got[i].attempt, gap, floor)
				}
				t.Logf("gap before attempt %d: %v", got[i].attempt, gap)
			}
		})
	}
}

// Scenario 3: a rate-limited answer with retry-after 300ms: the next
// attempt starts no earlier than 300ms after the answer.
func TestRateLimitedWaitsRetryAfter(t *testing.T) {
	const after = 300 * time.Millisecond
	ht := tool("it.limited")
	ht.MaxAttempts = 2
	// A tiny transient backoff, so only the retry-after can explain the wait.
	c := newCluster(t, options{tools: []toolspec.Spec{ht}, retryInitial: time.Millisecond})
	fx := newEffects()
	c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.limited"), counting(fx, failing(1, func() error {
			return workeragent.RateLimited(after, errors.New("slow down"))
		}))))
	})
	wantCompleted(t, c.wait(c.submit(sprintf(catchScript, "it.limited")), 0), "ok: x")
	got := fx.attempts()
	if len(got) != 2 || got[0].attempt != 1 || got[1].attempt != 2 || got[0].key != got[1].key {
		t.Fatalf("attempts = %+v", got)
	}
	if gap := got[1].started.Sub(got[0].returned); gap < after {
		t.Fatalf("second attempt started %v after the rate-limited answer, want >= %v", gap, after)
	}
}
