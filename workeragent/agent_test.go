package workeragent_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

func upper(effects *atomic.Int64) workeragent.Handler {
	return workeragent.HandlerFunc(func(_ context.Context, c *workeragent.Call) (workeragent.Output, error) {
		effects.Add(1)
		return workeragent.Result(strings.ToUpper(c.Input.Text)), nil
	})
}

func TestRunsOnceAndAnswers(t *testing.T) {
	e := newEnv(t)
	var effects atomic.Int64
	var seen atomic.Pointer[workeragent.Call]
	a := e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "text.remote"), workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
			seen.Store(c)
			return upper(&effects).HandleCall(ctx, c)
		})))
	})
	inv := e.newInvoke("text.remote", "hello")
	inv.DeadlineMillis = 60_000
	e.publish(inv)
	res := e.result(t)
	if res.Status != protocol.ResultSucceeded || res.Payload == nil || res.Payload.Text != "HELLO" ||
		res.RequestID != inv.RequestID || res.Attempt != inv.Attempt {
		t.Fatalf("result = %+v", res)
	}
	c := seen.Load()
	if c.IdempotencyKey != inv.IdempotencyKey || c.Attempt != 1 || c.AttemptLimit != 3 || c.Tool != "text.remote" ||
		c.RequestID != inv.RequestID || c.Deadline.IsZero() || time.Until(c.Deadline) > time.Minute {
		t.Fatalf("call = %+v", c)
	}
	if got := effects.Load(); got != 1 {
		t.Fatalf("effects = %d, want 1", got)
	}
	testwait.Until(t, 0, "job acked", func() bool { return e.pending(t, "text.remote") == 0 })
	if s := a.Stats(); s.Executed != 1 || s.Received != 1 || s.DedupeHits != 0 || s.Forged != 0 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestFailureAnswers(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name       string
		ret        func() (workeragent.Output, error)
		wantStatus protocol.ResultStatus
		wantAfter  int64
		wantErr    string
		wantJSON   string
	}{
		{name: "retryable", ret: func() (workeragent.Output, error) { return workeragent.Output{}, workeragent.Retryable(boom) },
			wantStatus: protocol.ResultRetryTransient, wantErr: "boom"},
		{name: "rate limited", ret: func() (workeragent.Output, error) {
			return workeragent.Output{}, workeragent.RateLimited(300*time.Millisecond, boom)
		}, wantStatus: protocol.ResultRetryRateLimited, wantAfter: 300, wantErr: "boom"},
		{name: "plain error", ret: func() (workeragent.Output, error) { return workeragent.Output{}, boom },
			wantStatus: protocol.ResultRetryTransient, wantErr: "boom"},
		{name: "permanent", ret: func() (workeragent.Output, error) { return workeragent.Output{}, workeragent.Permanent(boom) },
			wantStatus: protocol.ResultFailed, wantErr: "boom"},
		{name: "json", ret: func() (workeragent.Output, error) { return workeragent.JSONResult([]byte(`{"n":1}`)), nil },
			wantStatus: protocol.ResultSucceeded, wantJSON: `{"n":1}`},
	}
	e := newEnv(t)
	var effects atomic.Int64
	rets := make(map[string]func() (workeragent.Output, error))
	for _, tt := range tests {
		rets[tt.name] = tt.ret
	}
	e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "fail"), workeragent.HandlerFunc(func(_ context.Context, c *workeragent.Call) (workeragent.Output, error) {
			effects.Add(1)
			return rets[c.Input.Text]()
		})))
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := e.newInvoke("fail", tt.name)
			e.publish(inv)
			res := e.result(t)
			if res.RequestID != inv.RequestID || res.Status != tt.wantStatus || res.RetryAfterMillis != tt.wantAfter ||
				res.Error != tt.wantErr {
				t.Fatalf("result = %+v", res)
			}
			if tt.wantJSON != "" && (res.Payload == nil || string(res.Payload.JSON) != tt.wantJSON) {
				t.Fatalf("payload = %+v", res.Payload)
			}
		})
	}
	if got := effects.Load(); got != int64(len(tests)) {
		t.Fatalf("effects = %d, want %d", got, len(tests))
	}
}

func TestRetryAttemptRunsAgain(t *testing.T) {
	// A retryable answer is not stored: the host's next attempt under the
	// same key runs the tool again.
	e := newEnv(t)
	var effects atomic.Int64
	e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "flaky"), workeragent.HandlerFunc(func(_ context.Context, c *workeragent.Call) (workeragent.Output, error) {
			effects.Add(1)
			if c.Attempt < 2 {
				return workeragent.Output{}, workeragent.Retryable(errors.New("later"))
			}
			return workeragent.Result(fmt.Sprint("attempt ", c.Attempt)), nil
		})))
	})
	inv := e.newInvoke("flaky", "x")
	e.publish(inv)
	if res := e.result(t); res.Status != protocol.ResultRetryTransient {
		t.Fatalf("attempt 1: %+v", res)
	}
	inv.Attempt = 2
	e.publish(inv)
	if res := e.result(t); res.Status != protocol.ResultSucceeded || res.Payload.Text != "attempt 2" || res.Attempt != 2 {
		t.Fatalf("attempt 2: %+v", res)
	}
	if got := effects.Load(); got != 2 {
		t.Fatalf("effects = %d, want 2", got)
	}
}

func TestStreamLimit(t *testing.T) {
	e := newEnv(t)
	errs := make(chan error, 8)
	e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "stream"), workeragent.HandlerFunc(func(_ context.Context, c *workeragent.Call) (workeragent.Output, error) {
			for i := range 5 {
				err := c.Stream.Write(fmt.Sprintf("part %d", i+1))
				errs <- err
				if errors.Is(err, workeragent.ErrStreamLimitExceeded) {
					break
				}
			}
			return workeragent.Result(fmt.Sprint(c.Stream.Chunks(), " chunks")), nil
		})))
	})
	inv := e.newInvoke("stream", "go")
	inv.Stream = &protocol.StreamLimits{MaxChunks: 3, MaxChunkBytes: 64, MaxSourceBytes: 1024, MaxReleasedBytes: 1024}
	e.publish(inv)
	for i := range 3 {
		c := testwait.Receive(t, 0, "chunk", e.chunks)
		if c.RequestID != inv.RequestID || c.Sequence != uint64(i+1) || c.Text != fmt.Sprintf("part %d", i+1) {
			t.Fatalf("chunk %d = %+v", i+1, c)
		}
	}
	res := e.result(t)
	if res.Status != protocol.ResultSucceeded || res.Payload.Text != "3 chunks" {
		t.Fatalf("result = %+v", res)
	}
	for i := range 4 {
		err := testwait.Receive(t, 0, "write error", errs)
		if i < 3 && err != nil {
			t.Fatalf("write %d: %v", i+1, err)
		}
		if i == 3 && !errors.Is(err, workeragent.ErrStreamLimitExceeded) {
			t.Fatalf("write 4: %v, want ErrStreamLimitExceeded", err)
		}
	}
	select {
	case c := <-e.chunks:
		t.Fatalf("chunk past the limit: %+v", c)
	default:
	}
}

func TestCancelRunningCall(t *testing.T) {
	e := newEnv(t)
	started := make(chan struct{}, 1)
	causes := make(chan error, 1)
	a := e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Tool(t, toolspec.Spec{Name: "slow", Cancellable: true}), workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
			started <- struct{}{}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return workeragent.Output{}, workeragent.CancelAcknowledged()
		})))
	})
	inv := e.newInvoke("slow", "x")
	e.publish(inv)
	testwait.Receive(t, 0, "handler start", started)
	e.cancel(inv, false)
	if cause := testwait.Receive(t, 0, "handler cancelled", causes); !errors.Is(cause, workeragent.ErrCancelRequested) {
		t.Fatalf("cause = %v", cause)
	}
	d := e.disposition(t)
	if d.Disposition != protocol.CancelAcknowledged || d.RequestID != inv.RequestID || d.Attempt != inv.Attempt {
		t.Fatalf("disposition = %+v", d)
	}
	if s := a.Stats(); s.CancelRequests != 1 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestCancelResultWinsRace(t *testing.T) {
	// A cancellable handler that finishes anyway answers with its result,
	// then too_late.
	e := newEnv(t)
	started := make(chan struct{}, 1)
	e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Tool(t, toolspec.Spec{Name: "racy", Cancellable: true}), workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
			started <- struct{}{}
			<-ctx.Done()
			return workeragent.Result("done anyway"), nil
		})))
	})
	inv := e.newInvoke("racy", "x")
	e.publish(inv)
	testwait.Receive(t, 0, "handler start", started)
	e.cancel(inv, false)
	if res := e.result(t); res.Status != protocol.ResultSucceeded || res.Payload.Text != "done anyway" {
		t.Fatalf("result = %+v", res)
	}
	if d := e.disposition(t); d.Disposition != protocol.CancelTooLate {
		t.Fatalf("disposition = %+v", d)
	}
}

func TestCancelUnsupported(t *testing.T) {
	e := newEnv(t)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	var cancelled atomic.Bool
	e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "stubborn"), workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
			started <- struct{}{}
			<-release
			cancelled.Store(ctx.Err() != nil)
			return workeragent.Result("finished"), nil
		})))
	})
	inv := e.newInvoke("stubborn", "x")
	e.publish(inv)
	testwait.Receive(t, 0, "handler start", started)
	e.cancel(inv, false)
	if d := e.disposition(t); d.Disposition != protocol.CancelUnsupported || d.RequestID != inv.RequestID {
		t.Fatalf("disposition = %+v", d)
	}
	close(release)
	if res := e.result(t); res.Status != protocol.ResultSucceeded || res.Payload.Text != "finished" {
		t.Fatalf("result = %+v", res)
	}
	if cancelled.Load() {
		t.Fatal("handler context of a non-cancellable tool was cancelled")
	}
}

func TestCancelledBeforePickup(t *testing.T) {
	e := newEnv(t)
	var effects atomic.Int64
	inv := e.newInvoke("queued", "x")
	e.cancel(inv, true)
	e.publish(inv)
	a := e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Tool(t, toolspec.Spec{Name: "queued", Cancellable: true}), upper(&effects)))
	})
	if d := e.disposition(t); d.Disposition != protocol.CancelAcknowledged || d.RequestID != inv.RequestID {
		t.Fatalf("disposition = %+v", d)
	}
	// A later duplicate of the same attempt is still not run.
	e.publishAs(inv, inv.IdempotencyKey+"/1-again")
	testwait.Until(t, 0, "duplicate answered", func() bool { return a.Stats().DedupeHits == 1 })
	if got := effects.Load(); got != 0 {
		t.Fatalf("effects = %d, want 0", got)
	}
	if s := a.Stats(); s.CancelledBeforeStart != 1 || s.Executed != 0 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestDuplicateDeliveries(t *testing.T) {
	e := newEnv(t)
	var effects atomic.Int64
	gate := make(chan struct{})
	a := e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "dup"), workeragent.HandlerFunc(func(_ context.Context, c *workeragent.Call) (workeragent.Output, error) {
			effects.Add(1)
			<-gate
			return workeragent.Result("once"), nil
		})))
	})
	inv := e.newInvoke("dup", "x")
	e.publish(inv)
	testwait.Until(t, 0, "first copy running", func() bool { return effects.Load() == 1 })
	// The host republishes the same attempt under a new message id (the
	// stream's own dedupe cannot catch it): the journal must.
	e.publishAs(inv, inv.IdempotencyKey+"/1-republished")
	testwait.Until(t, 0, "second copy deferred", func() bool { return a.Stats().Deferred >= 1 })
	close(gate)
	if res := e.result(t); res.Status != protocol.ResultSucceeded || res.Payload.Text != "once" {
		t.Fatalf("result = %+v", res)
	}
	testwait.Until(t, 0, "second copy replayed", func() bool { return a.Stats().DedupeHits == 1 })
	// A third copy after completion is answered from the journal at once.
	e.publishAs(inv, inv.IdempotencyKey+"/1-third")
	testwait.Until(t, 0, "third copy replayed", func() bool { return a.Stats().DedupeHits == 2 })
	testwait.Until(t, 0, "queue empty", func() bool { return e.pending(t, "dup") == 0 })
	if got := effects.Load(); got != 1 {
		t.Fatalf("effects = %d, want 1", got)
	}
	if s := a.Stats(); s.Redeliveries < 1 || s.Executed != 1 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestCrashMidCall(t *testing.T) {
	tests := []struct {
		name        string
		idempotent  bool
		wantEffects int64
		wantStatus  protocol.ResultStatus
	}{
		{name: "idempotent runs again", idempotent: true, wantEffects: 2, wantStatus: protocol.ResultSucceeded},
		{name: "non-idempotent is indeterminate", wantEffects: 1, wantStatus: protocol.ResultIndeterminate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			var effects atomic.Int64
			keys := make(chan string, 2)
			gate := make(chan struct{})
			defer close(gate)
			h := workeragent.HandlerFunc(func(_ context.Context, c *workeragent.Call) (workeragent.Output, error) {
				keys <- c.IdempotencyKey
				if effects.Add(1) == 1 {
					<-gate // the first worker never finishes in time
				}
				return workeragent.Result("ok"), nil
			})
			effect := tooltest.Tool(t, toolspec.Spec{Name: "effect", Idempotent: tt.idempotent})
			crashed := e.startAgentConn("w1", e.srv.Connect(), func(a *workeragent.Agent) { must(t, a.HandleTool(effect, h)) })
			inv := e.newInvoke("effect", "x")
			e.publish(inv)
			testwait.Until(t, 0, "first run", func() bool { return effects.Load() == 1 })
			crashed.nc.Close()
			survivor := e.startAgent("w2", func(a *workeragent.Agent) { must(t, a.HandleTool(effect, h)) })
			res := e.result(t)
			if res.Status != tt.wantStatus || res.RequestID != inv.RequestID {
				t.Fatalf("result = %+v", res)
			}
			if got := effects.Load(); got != tt.wantEffects {
				t.Fatalf("effects = %d, want %d", got, tt.wantEffects)
			}
			for range tt.wantEffects {
				if k := testwait.Receive(t, 0, "key", keys); k != inv.IdempotencyKey {
					t.Fatalf("key = %q", k)
				}
			}
			if s := survivor.Stats(); s.TakenOver != 1 || s.Redeliveries < 1 {
				t.Fatalf("survivor stats = %+v", s)
			}
		})
	}
}

func TestForgedInvoke(t *testing.T) {
	e := newEnv(t)
	var effects atomic.Int64
	a := e.startAgent("w1", func(a *workeragent.Agent) { must(t, a.HandleTool(tooltest.Text(t, "guarded"), upper(&effects))) })
	subject, err := fabric.InvokeSubject("guarded")
	must(t, err)
	evil := e.newInvoke("guarded", "evil")
	cancelFrame, err := e.codec.SealCancel(protocol.Cancel{RequestID: evil.RequestID, Tool: evil.Tool, Attempt: 1, IdempotencyKey: evil.IdempotencyKey})
	must(t, err)
	sealed, err := e.codec.SealInvoke(evil)
	must(t, err)
	otherTool := e.newInvoke("other", "evil")
	otherSealed, err := e.codec.SealInvoke(otherTool)
	must(t, err)
	forgeries := []struct {
		name string
		data *nats.Msg
		host string
	}{
		{name: "garbage", data: &nats.Msg{Data: []byte("not a frame\n")}, host: e.hostID},
		{name: "cancel frame on the invoke subject", data: cancelFrame, host: e.hostID},
		{name: "no host header", data: sealed},
		{name: "invoke of another tool", data: otherSealed, host: e.hostID},
	}
	for i, f := range forgeries {
		m := &nats.Msg{Subject: subject, Header: nats.Header{}, Data: f.data.Data}
		for k, v := range f.data.Header {
			m.Header[k] = v
		}
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("forged-%d", i))
		if f.host != "" {
			m.Header.Set(fabric.HeaderHost, f.host)
		}
		_, err := e.js.PublishMsg(context.Background(), m)
		must(t, err)
	}
	e.publishForged(evil) // sealed with the wrong key
	good := e.newInvoke("guarded", "good")
	e.publish(good)
	res := e.result(t)
	if res.RequestID != good.RequestID || res.Payload.Text != "GOOD" {
		t.Fatalf("result = %+v", res)
	}
	want := uint64(len(forgeries) + 1)
	testwait.Until(t, 0, "forgeries counted", func() bool { return a.Stats().Forged == want })
	testwait.Until(t, 0, "queue empty", func() bool { return e.pending(t, "guarded") == 0 })
	if got := effects.Load(); got != 1 {
		t.Fatalf("effects = %d, want 1", got)
	}
}

func TestDrainGivesBackUnfinishedWork(t *testing.T) {
	e := newEnv(t)
	var effects atomic.Int64
	started := make(chan string, 2)
	h := workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
		effects.Add(1)
		started <- c.IdempotencyKey
		if c.Input.Text == "slow" && effects.Load() == 1 {
			<-ctx.Done()
			return workeragent.Output{}, ctx.Err()
		}
		return workeragent.Result("done"), nil
	})
	first := e.startAgentWith("w1", func(cfg *workeragent.Config) { cfg.DrainGrace = 100 * time.Millisecond },
		func(a *workeragent.Agent) { must(t, a.HandleTool(tooltest.Text(t, "work"), h)) })
	inv := e.newInvoke("work", "slow")
	e.publish(inv)
	testwait.Receive(t, 0, "first start", started)
	first.stop() // Run's context ends: grace, then cancel and hand back
	if err := first.err(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if s := first.Stats(); s.GivenBack != 1 {
		t.Fatalf("first stats = %+v", s)
	}
	e.startAgent("w2", func(a *workeragent.Agent) { must(t, a.HandleTool(tooltest.Text(t, "work"), h)) })
	if res := e.result(t); res.Status != protocol.ResultSucceeded || res.RequestID != inv.RequestID {
		t.Fatalf("result = %+v", res)
	}
	if got := effects.Load(); got != 2 {
		t.Fatalf("effects = %d, want 2", got)
	}
}

func TestStopLetsInFlightFinish(t *testing.T) {
	e := newEnv(t)
	started := make(chan struct{}, 1)
	gate := make(chan struct{})
	w := e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "work"), workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
			started <- struct{}{}
			<-gate
			return workeragent.Result("finished"), nil
		})))
	})
	e.publish(e.newInvoke("work", "x"))
	testwait.Receive(t, 0, "start", started)
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	close(gate)
	if err := testwait.Receive(t, 0, "stop", stopped); err != nil {
		t.Fatalf("Stop = %v", err)
	}
	if res := e.result(t); res.Status != protocol.ResultSucceeded {
		t.Fatalf("result = %+v", res)
	}
	if err := w.err(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func TestStopAndCancelHandsBack(t *testing.T) {
	e := newEnv(t)
	started := make(chan struct{}, 1)
	w := e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "work"), workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
			started <- struct{}{}
			<-ctx.Done()
			return workeragent.Output{}, context.Cause(ctx)
		})))
	})
	e.publish(e.newInvoke("work", "x"))
	testwait.Receive(t, 0, "start", started)
	if err := w.StopAndCancel(context.Background()); err != nil {
		t.Fatalf("StopAndCancel = %v", err)
	}
	if s := w.Stats(); s.GivenBack != 1 || s.InFlight != 0 {
		t.Fatalf("stats = %+v", s)
	}
	testwait.Until(t, 0, "message back in the queue", func() bool { return e.pending(t, "work") == 1 })
}

// TestHandleRejects covers the agent's own refusals; a definition with an
// illegal name never reaches it (toolspec's Compile refuses it).
func TestHandleRejects(t *testing.T) {
	e := newEnv(t)
	nc := e.srv.Connect()
	a, err := workeragent.New(nc, e.config("w1", nc))
	must(t, err)
	h := workeragent.HandlerFunc(func(context.Context, *workeragent.Call) (workeragent.Output, error) {
		return workeragent.Output{}, nil
	})
	must(t, a.HandleTool(tooltest.Text(t, "ok"), h))
	tests := []struct {
		name    string
		tool    *toolspec.Tool
		h       workeragent.Handler
		opts    []workeragent.ToolOption
		wantErr error
	}{
		{name: "nil definition", h: h, wantErr: workeragent.ErrInvalidTool},
		{name: "nil handler", tool: tooltest.Text(t, "x"), wantErr: workeragent.ErrInvalidTool},
		{name: "zero concurrency", tool: tooltest.Text(t, "x"), h: h, opts: []workeragent.ToolOption{workeragent.Concurrency(0)}, wantErr: workeragent.ErrInvalidTool},
		{name: "duplicate", tool: tooltest.Text(t, "ok"), h: h, wantErr: workeragent.ErrDuplicateTool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := a.HandleTool(tt.tool, tt.h, tt.opts...); !errors.Is(err, tt.wantErr) {
				t.Fatalf("HandleTool = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestNewRejectsConfig(t *testing.T) {
	e := newEnv(t)
	nc := e.srv.Connect()
	tests := []struct {
		name   string
		mutate func(*workeragent.Config)
	}{
		{name: "no worker id", mutate: func(c *workeragent.Config) { c.WorkerID = "" }},
		{name: "no journal", mutate: func(c *workeragent.Config) { c.Journal = nil }},
		{name: "no key", mutate: func(c *workeragent.Config) { c.Key = protocol.SessionKey{} }},
		{name: "heartbeat not under lease", mutate: func(c *workeragent.Config) { c.HeartbeatInterval = c.LeaseDuration }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := e.config("w1", nc)
			tt.mutate(&cfg)
			if _, err := workeragent.New(nc, cfg); !errors.Is(err, workeragent.ErrInvalidConfig) {
				t.Fatalf("New = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestDeadlineCancelsHandler(t *testing.T) {
	e := newEnv(t)
	causes := make(chan error, 1)
	e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "late"), workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return workeragent.Output{}, workeragent.Permanent(ctx.Err())
		})))
	})
	inv := e.newInvoke("late", "x")
	inv.DeadlineMillis = 200
	e.publish(inv)
	if cause := testwait.Receive(t, 0, "deadline", causes); !errors.Is(cause, workeragent.ErrDeadlineElapsed) {
		t.Fatalf("cause = %v", cause)
	}
	if res := e.result(t); res.Status != protocol.ResultFailed {
		t.Fatalf("result = %+v", res)
	}
}

func TestConcurrencyBound(t *testing.T) {
	e := newEnv(t)
	var now, peak, done atomic.Int64
	gate := make(chan struct{})
	e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "bounded"), workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
			n := now.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			<-gate
			now.Add(-1)
			done.Add(1)
			return workeragent.Result("ok"), nil
		}), workeragent.Concurrency(2)))
	})
	const calls = 6
	for range calls {
		e.publish(e.newInvoke("bounded", "x"))
	}
	testwait.Until(t, 0, "two running", func() bool { return now.Load() == 2 })
	close(gate)
	for range calls {
		if res := e.result(t); res.Status != protocol.ResultSucceeded {
			t.Fatalf("result = %+v", res)
		}
	}
	if p := peak.Load(); p != 2 {
		t.Fatalf("peak concurrency = %d, want 2", p)
	}
}

func TestForgedCancelIgnored(t *testing.T) {
	e := newEnv(t)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	var cancelled atomic.Bool
	a := e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Tool(t, toolspec.Spec{Name: "victim", Cancellable: true}), workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				cancelled.Store(true)
				return workeragent.Output{}, workeragent.CancelAcknowledged()
			case <-release:
				return workeragent.Result("kept"), nil
			}
		})))
	})
	inv := e.newInvoke("victim", "x")
	e.publish(inv)
	testwait.Receive(t, 0, "start", started)
	other, err := protocol.GenerateSessionKey(rand.Reader)
	must(t, err)
	forger, err := fabric.NewCodec(other)
	must(t, err)
	data, err := forger.SealCancel(protocol.Cancel{RequestID: inv.RequestID, Tool: inv.Tool, Attempt: 1, IdempotencyKey: inv.IdempotencyKey})
	must(t, err)
	data.Subject = fabric.CancelSubject(inv.Tool)
	must(t, e.nc.PublishMsg(data))
	testwait.Until(t, 0, "forged cancel counted", func() bool { return a.Stats().Forged == 1 })
	close(release)
	if res := e.result(t); res.Status != protocol.ResultSucceeded || res.Payload.Text != "kept" {
		t.Fatalf("result = %+v", res)
	}
	if cancelled.Load() || a.Stats().CancelRequests != 0 {
		t.Fatalf("forged cancel acted on: stats %+v", a.Stats())
	}
}
