package host

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/toolspec"
)

func TestRetryKeepsIdentityAndConsumesNoBudget(t *testing.T) {
	r, _ := newTestRuntime(t, Config{ToolCallBudget: 1})
	register(t, r, toolspec.Spec{Name: "text.remote", MaxAttempts: 3})
	start(t, r, "text.remote", "release")
	first := claim(t, r)
	retry, err := r.RetryExternalTool(first.ID, RetryRateLimited)
	must(t, err)
	if retry.ID != first.ID || retry.Input != first.Input || retry.CallIndex != first.CallIndex ||
		retry.IdempotencyKey != first.IdempotencyKey || retry.Attempt != 2 || retry.AttemptLimit != 3 {
		t.Fatalf("retry %+v of %+v", retry, first)
	}
	if r.CallsUsed() != 1 {
		t.Fatalf("calls used = %d", r.CallsUsed())
	}
	if _, ok := r.ClaimNextExternalTool(); ok {
		t.Fatal("retried op went back to the claim queue")
	}
	ev := r.Audit()
	last := ev[len(ev)-1]
	if last.Outcome != AuditRetryScheduled || last.RetryClass != RetryRateLimited || last.Attempt != 2 || last.Detail != "rate_limited" {
		t.Fatalf("audit %+v", last)
	}
	_, err = r.RetryExternalTool(first.ID, RetryClass(9))
	wantErr(t, err, ErrInvalidInput)
}

func TestRetryDefaultMaxAttemptsRefused(t *testing.T) {
	r, _ := newTestRuntime(t, Config{})
	register(t, r, toolspec.Spec{Name: "text.remote"})
	start(t, r, "text.remote", "x")
	inv := claim(t, r)
	before := snapshot(r)
	_, err := r.RetryExternalTool(inv.ID, RetryTransient)
	wantErr(t, err, ErrRetryLimitReached)
	if snapshot(r) != before {
		t.Fatal("refused retry changed state")
	}
}

func TestRetryAfterDeadlineRefused(t *testing.T) {
	r, clock := newTestRuntime(t, Config{})
	register(t, r, toolspec.Spec{Name: "text.remote", MaxAttempts: 5, Deadline: toolspec.Duration(time.Second)})
	start(t, r, "text.remote", "x")
	inv := claim(t, r)
	clock.Advance(time.Second)
	_, err := r.RetryExternalTool(inv.ID, RetryTransient)
	wantErr(t, err, ErrDeadlineElapsed)
	ids, _ := r.ExpireTimedOutTools()
	if len(ids) != 1 || ids[0] != inv.ID {
		t.Fatalf("expired %v", ids)
	}
}

func TestIdempotencyKeyStableAcrossAttemptsDistinctAcrossOperations(t *testing.T) {
	r, _ := newTestRuntime(t, Config{})
	register(t, r, toolspec.Spec{Name: "text.remote", MaxAttempts: 2})
	start(t, r, "text.remote", "a")
	start(t, r, "text.remote", "a")
	a, b := claim(t, r), claim(t, r)
	if a.IdempotencyKey == b.IdempotencyKey {
		t.Fatal("two operations share a key")
	}
	ra, err := r.RetryExternalTool(a.ID, RetryTransient)
	must(t, err)
	if ra.IdempotencyKey != a.IdempotencyKey {
		t.Fatal("key changed across attempts")
	}
	want := IdempotencyKeyPrefix + testNonce.String() + "-1"
	if a.IdempotencyKey != want {
		t.Fatalf("key %q, want %q", a.IdempotencyKey, want)
	}
}

func TestIdempotencyKeyDistinctAcrossSessions(t *testing.T) {
	key := func() string {
		r := NewRuntime(Config{Clock: NewManualClock(t0)}) // crypto/rand nonce
		register(t, r, toolspec.Spec{Name: "text.remote"})
		start(t, r, "text.remote", "a")
		return claim(t, r).IdempotencyKey
	}
	a, b := key(), key()
	if a == b || !strings.HasPrefix(a, IdempotencyKeyPrefix) || !strings.HasSuffix(a, "-1") {
		t.Fatalf("keys %q %q", a, b)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("no entropy") }

func TestEntropyFailureRefusesExternalRegistration(t *testing.T) {
	for name, src := range map[string]io.Reader{
		"error": failingReader{},
		"short": strings.NewReader("too short"),
	} {
		t.Run(name, func(t *testing.T) {
			r := NewRuntime(Config{Entropy: src, Clock: NewManualClock(t0)})
			wantErr(t, r.RegisterTool(tooltest.Text(t, "text.remote")), ErrEntropyUnavailable)
			wantErr(t, r.RegisterTool(tooltest.Tool(t, toolspec.Spec{Name: "json.remote", Format: toolspec.FormatJSON})), ErrEntropyUnavailable)
			_, err := r.Start("text.remote", "x")
			wantErr(t, err, ErrUnknownTool)
			// Local tools need no nonce.
			must(t, r.RegisterLocalTool(NewToolPolicy("text.local"), func(s string) (string, error) { return s, nil }))
		})
	}
}

func TestInjectedNonceUsedAsGiven(t *testing.T) {
	n := NewCapabilitySessionNonce([16]byte{15: 1})
	r := NewRuntime(Config{SessionNonce: &n, Entropy: failingReader{}, Clock: NewManualClock(t0)})
	register(t, r, toolspec.Spec{Name: "text.remote"})
	if r.SessionNonce() != n {
		t.Fatal("nonce replaced")
	}
	start(t, r, "text.remote", "x")
	if k := claim(t, r).IdempotencyKey; k != "sk1-00000000000000000000000000000001-1" {
		t.Fatalf("key %q", k)
	}
}
