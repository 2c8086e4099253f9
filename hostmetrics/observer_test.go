package hostmetrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostmetrics"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/metrics"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

// catalog registers the tools the loop tests call: a plain one, one with
// two attempts, a streaming one whose redactor upper-cases, and a
// cancellable one.
func catalog(tb testing.TB) func(*host.Runtime) error {
	tools := tooltest.Catalog[*host.Runtime](tb,
		toolspec.Spec{Name: "t.echo", Description: "test tool"},
		toolspec.Spec{Name: "t.flaky", Description: "test tool", MaxAttempts: 2},
		toolspec.Spec{Name: "t.stream", Description: "test tool",
			Stream: &toolspec.StreamPolicy{MaxChunks: 4, MaxChunkBytes: 16, MaxSourceBytes: 64, MaxReleasedBytes: 64}},
		toolspec.Spec{Name: "t.sleep", Description: "cancellable test tool", Cancellable: true})
	return func(rt *host.Runtime) error {
		if err := tools(rt); err != nil {
			return err
		}
		return rt.SetExternalStreamRedactor("t.stream", strings.ToUpper)
	}
}

type loopFixture struct {
	reg  *prometheus.Registry
	tr   *chanTransport
	loop *hostloop.Loop
}

func startLoop(t *testing.T) *loopFixture {
	t.Helper()
	reg := prometheus.NewRegistry()
	obs := hostmetrics.New(metrics.NewHost(reg))
	tr := newChanTransport()
	loop, err := hostloop.StartLoop(hostloop.LoopConfig{
		Transport:    tr,
		HostID:       "h1",
		Catalog:      catalog(t),
		Observer:     obs,
		RetryInitial: time.Millisecond,
		RetryMax:     time.Millisecond,
	})
	if err != nil {
		t.Fatalf("StartLoop: %v", err)
	}
	t.Cleanup(loop.Stop)
	return &loopFixture{reg: reg, tr: tr, loop: loop}
}

func (f *loopFixture) submit(t *testing.T, src string) hostloop.SessionID {
	t.Helper()
	s, err := f.loop.Submit(context.Background(), hostloop.Submission{Source: src})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	return s.ID
}

// want waits until every series has its value: the observer runs on the
// loop goroutine, after the command that caused it has answered.
func (f *loopFixture) want(t *testing.T, values map[string]float64) {
	t.Helper()
	for key, v := range values {
		name, labels, _ := strings.Cut(key, "{")
		labels = strings.TrimSuffix(labels, "}")
		testwait.Until(t, 0, key, func() bool { return series(t, f.reg, name, labels) == v })
	}
}

func result(inv protocol.Invoke, status protocol.ResultStatus, text string) protocol.WorkerMessage {
	p := protocol.TextPayload(text)
	return protocol.ResultMessage(protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt, Status: status, Payload: &p})
}

func TestObserverSuccessfulOperation(t *testing.T) {
	f := startLoop(t)
	f.submit(t, `await tool.start("t.echo", "hi")`)
	inv := testwait.Receive(t, 0, "invoke", f.tr.invokes)
	f.want(t, map[string]float64{
		"splash_operations_started_total{tool=t.echo}": 1,
		"splash_operations_pending{tool=t.echo}":       1,
		"splash_operations_claimed{tool=t.echo}":       0,
		"splash_sessions_active":                       1,
	})
	f.tr.send(result(inv, protocol.ResultSucceeded, "hi"))
	f.want(t, map[string]float64{
		"splash_operations_finished_total{outcome=succeeded,tool=t.echo}": 1,
		"splash_operation_duration_seconds{tool=t.echo}":                  1,
		"splash_dispatch_latency_seconds{tool=t.echo}":                    1,
		"splash_operations_pending{tool=t.echo}":                          0,
		"splash_sessions_total{state=completed}":                          1,
		"splash_sessions_active":                                          0,
	})
}

func TestObserverRetry(t *testing.T) {
	f := startLoop(t)
	f.submit(t, `await tool.start("t.flaky", "x")`)
	first := testwait.Receive(t, 0, "attempt 1", f.tr.invokes)
	f.tr.send(protocol.ResultMessage(protocol.Result{RequestID: first.RequestID, Attempt: 1, Status: protocol.ResultRetryTransient, Error: "busy"}))
	second := testwait.Receive(t, 0, "attempt 2", f.tr.invokes)
	if second.Attempt != 2 {
		t.Fatalf("attempt %d, want 2", second.Attempt)
	}
	f.want(t, map[string]float64{
		"splash_retries_total{class=transient,tool=t.flaky}":    1,
		"splash_retries_total{class=rate_limited,tool=t.flaky}": 0,
		"splash_operations_pending{tool=t.flaky}":               1,
		"splash_operations_started_total{tool=t.flaky}":         1,
	})
	f.tr.send(protocol.ResultMessage(protocol.Result{RequestID: second.RequestID, Attempt: 2, Status: protocol.ResultFailed, Error: "no"}))
	f.want(t, map[string]float64{
		"splash_operations_finished_total{outcome=failed,tool=t.flaky}": 1,
		"splash_dispatch_latency_seconds{tool=t.flaky}":                 2,
		"splash_sessions_total{state=failed}":                           1,
	})
}

func TestObserverStream(t *testing.T) {
	f := startLoop(t)
	f.submit(t, `await tool.start("t.stream", "x")`)
	inv := testwait.Receive(t, 0, "invoke", f.tr.invokes)
	f.tr.send(protocol.ChunkMessage(protocol.Chunk{RequestID: inv.RequestID, Sequence: 1, Text: "abc"}))
	f.want(t, map[string]float64{
		"splash_stream_chunks_total{source=source,tool=t.stream}":   1,
		"splash_stream_chunks_total{source=redacted,tool=t.stream}": 1,
		"splash_stream_bytes_total{source=source,tool=t.stream}":    3,
		"splash_operations_claimed{tool=t.stream}":                  1,
		"splash_operations_pending{tool=t.stream}":                  0,
	})
	// Over max_chunk_bytes: denied, and counted at its source size.
	f.tr.send(protocol.ChunkMessage(protocol.Chunk{RequestID: inv.RequestID, Sequence: 2, Text: strings.Repeat("z", 20)}))
	f.want(t, map[string]float64{
		"splash_stream_chunks_total{source=denied,tool=t.stream}": 1,
		"splash_stream_bytes_total{source=denied,tool=t.stream}":  20,
		"splash_stream_bytes_total{source=source,tool=t.stream}":  23,
		"splash_frames_rejected_total{reason=invalid_message}":    0,
	})
	f.tr.send(result(inv, protocol.ResultIndeterminate, ""))
	f.want(t, map[string]float64{
		"splash_operations_finished_total{outcome=indeterminate,tool=t.stream}": 1,
		"splash_operations_claimed{tool=t.stream}":                              0,
	})
}

func TestObserverCancellation(t *testing.T) {
	tests := []struct {
		name        string
		disposition protocol.CancelDisposition
		want        map[string]float64
	}{
		{"acknowledged", protocol.CancelAcknowledged, map[string]float64{
			"splash_cancellations_total{disposition=acknowledged,tool=t.sleep}":    1,
			"splash_operations_finished_total{outcome=cancelled,tool=t.sleep}":     1,
			"splash_operations_pending{tool=t.sleep}":                              0,
			"splash_cancellations_total{disposition=unsupported,tool=t.sleep}":     0,
			"splash_cancellation_requests_total{tool=t.sleep}":                     1,
			"splash_operations_finished_total{outcome=succeeded,tool=t.sleep}":     0,
			"splash_operations_finished_total{outcome=indeterminate,tool=t.sleep}": 0,
		}},
		{"unsupported", protocol.CancelUnsupported, map[string]float64{
			"splash_cancellations_total{disposition=unsupported,tool=t.sleep}":  1,
			"splash_cancellations_total{disposition=acknowledged,tool=t.sleep}": 0,
			"splash_cancellation_requests_total{tool=t.sleep}":                  1,
			"splash_operations_claimed{tool=t.sleep}":                           1,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startLoop(t)
			id := f.submit(t, `await tool.start("t.sleep", "1s")`)
			inv := testwait.Receive(t, 0, "invoke", f.tr.invokes)
			ops, err := f.loop.Operations(context.Background())
			if err != nil || len(ops) != 1 {
				t.Fatalf("Operations: %v, %v", ops, err)
			}
			if err := f.loop.Cancel(context.Background(), id, ops[0].ID); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			testwait.Receive(t, 0, "cancel", f.tr.cancels)
			f.tr.send(protocol.CancelReplyMessage(protocol.CancelReply{RequestID: inv.RequestID, Attempt: 1, Disposition: tt.disposition}))
			f.want(t, tt.want)
		})
	}
}

func TestObserverRejected(t *testing.T) {
	tests := []struct {
		reason string
		err    error
		want   string // reason label of splash_frames_rejected_total, "" for none
	}{
		{"unknown_request", host.ErrUnknownOperation, metrics.RejectUnknownOperation},
		{"stale_attempt", host.ErrWrongState, metrics.RejectWrongAttempt},
		{"unexpected_kind", host.ErrWrongState, metrics.RejectInvalidMessage},
		{"chunk", host.ErrDeadlineElapsed, metrics.RejectLate},
		{"chunk", host.ErrStreamLimitExceeded, ""},
		{"chunk", errors.New("other"), metrics.RejectInvalidMessage},
		{"complete", host.ErrWrongState, metrics.RejectContradictory},
		{"cancel_confirm", host.ErrWrongState, metrics.RejectContradictory},
		{"retry", host.ErrWrongState, metrics.RejectContradictory},
	}
	for _, tt := range tests {
		t.Run(tt.reason+"/"+tt.want, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			hostmetrics.New(metrics.NewHost(reg)).Rejected(tt.reason, tt.err)
			total := 0.0
			for _, r := range []string{metrics.RejectMalformed, metrics.RejectTooLarge, metrics.RejectInvalidMessage,
				metrics.RejectUnknownOperation, metrics.RejectWrongAttempt, metrics.RejectContradictory, metrics.RejectLate} {
				total += series(t, reg, "splash_frames_rejected_total", "reason="+r)
			}
			switch {
			case tt.want == "" && total != 0:
				t.Fatalf("counted %v rejections, want none", total)
			case tt.want != "" && (total != 1 || series(t, reg, "splash_frames_rejected_total", "reason="+tt.want) != 1):
				t.Fatalf("want one rejection with reason %s", tt.want)
			}
		})
	}
}

func TestObserverTransportAndAPIRejections(t *testing.T) {
	tests := []struct {
		call   func(o *hostmetrics.Observer)
		metric string
		labels string
	}{
		{func(o *hostmetrics.Observer) { o.FrameRejected("bad_tag", "s", nil) }, "splash_auth_failures_total", "reason=bad_tag"},
		{func(o *hostmetrics.Observer) { o.FrameRejected("wrong_role", "s", nil) }, "splash_auth_failures_total", "reason=wrong_role"},
		{func(o *hostmetrics.Observer) { o.FrameRejected("session_mismatch", "s", nil) }, "splash_auth_failures_total", "reason=wrong_session"},
		{func(o *hostmetrics.Observer) { o.FrameRejected("sequence", "s", nil) }, "splash_auth_failures_total", "reason=sequence"},
		{func(o *hostmetrics.Observer) { o.FrameRejected("unexpected_kind", "s", nil) }, "splash_auth_failures_total", "reason=wrong_subject"},
		{func(o *hostmetrics.Observer) { o.FrameRejected("replayed", "s", nil) }, "splash_frames_rejected_total", "reason=late"},
		{func(o *hostmetrics.Observer) { o.FrameRejected("invalid_message", "s", nil) }, "splash_frames_rejected_total", "reason=invalid_message"},
		{func(o *hostmetrics.Observer) { o.FrameRejected("malformed", "s", nil) }, "splash_frames_rejected_total", "reason=malformed"},
		{func(o *hostmetrics.Observer) { o.APIAuthFailure("missing_token") }, "splash_auth_failures_total", "reason=missing_token"},
		{func(o *hostmetrics.Observer) { o.APIAuthFailure("invalid_token") }, "splash_auth_failures_total", "reason=wrong_token"},
	}
	for _, tt := range tests {
		t.Run(tt.labels, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			tt.call(hostmetrics.New(metrics.NewHost(reg)))
			if got := series(t, reg, tt.metric, tt.labels); got != 1 {
				t.Fatalf("%s{%s} = %v, want 1", tt.metric, tt.labels, got)
			}
		})
	}
}

// TestObserverSessionsOverBudget: a session failed for going over one of
// its budgets is counted by budget, and as failed.
func TestObserverSessionsOverBudget(t *testing.T) {
	for _, tc := range []struct {
		budget string
		sub    hostloop.Submission
	}{
		{budget: metrics.BudgetMemory, sub: hostloop.Submission{Source: `"x".repeat(2**30)`}},
		{budget: metrics.BudgetExecution, sub: hostloop.Submission{Source: `while (true) {}`, ExecutionBudget: 20 * time.Millisecond}},
		{budget: metrics.BudgetPending, sub: hostloop.Submission{Source: `tool.start("t.echo", "a"); tool.start("t.echo", "b")`, MaxPending: 1}},
	} {
		t.Run(tc.budget, func(t *testing.T) {
			f := startLoop(t)
			s, err := f.loop.Submit(context.Background(), tc.sub)
			if err != nil {
				t.Fatalf("Submit: %v", err)
			}
			if s.State != hostloop.SessionFailed {
				t.Fatalf("session %+v, want failed", s)
			}
			f.want(t, map[string]float64{
				"splash_sessions_over_budget_total{budget=" + tc.budget + "}": 1,
				"splash_sessions_total{state=failed}":                         1,
			})
		})
	}
}
