package workeragent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolproc"
)

// How a process tool's call ends becomes the handler's answer: a lost
// process is indeterminate when the watchdog or a stop won or the tool is
// not idempotent, and a hand back (another delivery) for an idempotent
// one; nothing written means nothing ran.
func TestProcessOutcomeAnswers(t *testing.T) {
	lost := errors.New("lost")
	text := protocol.TextPayload("ok")
	cancelled, cancel := context.WithCancelCause(context.Background())
	cancel(ErrCancelRequested)
	draining, drain := context.WithCancelCause(context.Background())
	drain(ErrDraining)
	for _, tc := range []struct {
		name       string
		idempotent bool
		ctx        context.Context
		o          toolproc.Outcome
		want       verdictKind
	}{
		{"succeeded", false, nil, toolproc.Outcome{Kind: toolproc.Answered, Result: protocol.Result{Status: protocol.ResultSucceeded, Payload: &text}}, verdictSucceeded},
		{"failed", false, nil, toolproc.Outcome{Kind: toolproc.Answered, Result: protocol.Result{Status: protocol.ResultFailed, Error: "no"}}, verdictFailed},
		{"transient", false, nil, toolproc.Outcome{Kind: toolproc.Answered, Result: protocol.Result{Status: protocol.ResultRetryTransient, Error: "again"}}, verdictRetryTransient},
		{"rate limited", false, nil, toolproc.Outcome{Kind: toolproc.Answered, Result: protocol.Result{Status: protocol.ResultRetryRateLimited, Error: "slow", RetryAfterMillis: 5}}, verdictRetryRateLimited},
		{"tool says indeterminate", true, nil, toolproc.Outcome{Kind: toolproc.Answered, Result: protocol.Result{Status: protocol.ResultIndeterminate, Error: "?"}}, verdictIndeterminate},
		{"acknowledged", false, cancelled, toolproc.Outcome{Kind: toolproc.CancelAcknowledged}, verdictCancelled},
		{"watchdog", true, nil, toolproc.Outcome{Kind: toolproc.Lost, Watchdog: true, Err: lost}, verdictIndeterminate},
		{"stopped", true, nil, toolproc.Outcome{Kind: toolproc.Lost, Stopped: true, Err: lost}, verdictIndeterminate},
		{"crash, claimed", false, nil, toolproc.Outcome{Kind: toolproc.Lost, Err: lost}, verdictIndeterminate},
		{"crash, idempotent", true, nil, toolproc.Outcome{Kind: toolproc.Lost, Err: lost}, verdictGiveBack},
		{"never started, cancelled", false, cancelled, toolproc.Outcome{Kind: toolproc.NotStarted, Err: ErrCancelRequested}, verdictCancelled},
		{"never started, draining", false, draining, toolproc.Outcome{Kind: toolproc.NotStarted, Err: ErrDraining}, verdictGiveBack},
		{"no process", false, nil, toolproc.Outcome{Kind: toolproc.NotStarted, Err: toolproc.ErrStartFailed}, verdictRetryTransient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			p := &processHandler{idempotent: tc.idempotent, cancellable: true}
			out, err := p.answer(ctx, tc.o)
			v := classify(out, err, ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrCancelRequested), errors.Is(context.Cause(ctx), ErrDraining))
			if v.kind != tc.want {
				t.Fatalf("verdict %v (%v), want %v", v.label(), err, verdict{kind: tc.want}.label())
			}
			if tc.name == "rate limited" && v.retryAfter != 5*time.Millisecond {
				t.Errorf("retry after %v, want 5ms", v.retryAfter)
			}
		})
	}
}

// A contract names the definition an invocation was made under; a tool
// registered under another refuses it.
func TestContractMismatch(t *testing.T) {
	reg := &tool{name: "a.b", spec: toolSpec{digest: "sha256:aaaa", idempotent: true}}
	for _, tc := range []struct {
		name string
		c    *protocol.Contract
		want bool
	}{
		{"no contract", nil, false},
		{"same", &protocol.Contract{Digest: "sha256:aaaa", Idempotent: true}, false},
		{"other digest", &protocol.Contract{Digest: "sha256:bbbb", Idempotent: true}, true},
		{"same digest, idempotence differs", &protocol.Contract{Digest: "sha256:aaaa"}, true},
		{"same digest, cancellability differs", &protocol.Contract{Digest: "sha256:aaaa", Idempotent: true, Cancellable: true}, true},
	} {
		if got := reg.contractMismatch(tc.c) != ""; got != tc.want {
			t.Errorf("%s: mismatch %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A call of a tool that honours no cancellation, cancelled before a
// process took it, ran nothing: it fails (the host heard unsupported),
// since no tool acknowledged a cancellation.
func TestProcessNotStartedUncancellable(t *testing.T) {
	cancelled, cancel := context.WithCancelCause(context.Background())
	cancel(ErrCancelRequested)
	p := &processHandler{cancellable: false}
	out, err := p.answer(cancelled, toolproc.Outcome{Kind: toolproc.NotStarted, Err: ErrCancelRequested})
	if v := classify(out, err, false, false); v.kind != verdictFailed {
		t.Fatalf("verdict %v (%v), want failed", v.label(), err)
	}
}
