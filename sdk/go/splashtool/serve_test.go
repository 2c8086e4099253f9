package splashtool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/sdk/go/splashtool"
)

func upperByWord(ctx context.Context, call *splashtool.Call) (splashtool.Output, error) {
	words := strings.Fields(call.Input.Text)
	for i, w := range words {
		if err := call.Stream(fmt.Sprintf("word %d/%d: %s", i+1, len(words), w)); err != nil {
			return splashtool.Output{}, err
		}
	}
	return splashtool.Text(strings.ToUpper(call.Input.Text)), nil
}

func TestResultWithChunks(t *testing.T) {
	c := serve(t, upperByWord)
	c.send(invoke("c1", "a b c"))
	for i, w := range []string{"a", "b", "c"} {
		wantChunk(t, c.next(), "c1", uint64(i+1), fmt.Sprintf("word %d/3: %s", i+1, w))
	}
	r := wantResult(t, c.next(), "c1", protocol.ResultSucceeded)
	if r.Attempt != 1 || r.Payload.Format != protocol.FormatText || r.Payload.Text != "A B C" {
		t.Fatalf("result %+v payload %+v", r, r.Payload)
	}
	if err := c.end(); err != nil {
		t.Fatalf("ServeConn after EOF: %v", err)
	}
	c.expectClosed()
}

func TestCallFields(t *testing.T) {
	got := make(chan *splashtool.Call, 1)
	c := serve(t, func(ctx context.Context, call *splashtool.Call) (splashtool.Output, error) {
		if _, ok := ctx.Deadline(); !ok {
			return splashtool.Output{}, splashtool.Permanent(errors.New("context has no deadline"))
		}
		got <- call
		return splashtool.Text("ok"), nil
	})
	inv := protocol.Invoke{
		RequestID: "c1", Tool: toolName, Input: protocol.TextPayload("x"), CallIndex: 4, Attempt: 2, AttemptLimit: 3,
		IdempotencyKey: "op-c1", OutputLimit: 100, DeadlineMillis: 60_000,
		Stream: &protocol.StreamLimits{MaxChunks: 5},
	}
	c.send(protocol.InvokeMessage(inv))
	r := wantResult(t, c.next(), "c1", protocol.ResultSucceeded)
	call := <-got
	if call.RequestID != "c1" || call.Tool != toolName || call.IdempotencyKey != "op-c1" || call.CallIndex != 4 ||
		call.Attempt != 2 || call.AttemptLimit != 3 || call.OutputLimit != 100 || call.StreamLimits.MaxChunks != 5 ||
		call.Deadline.IsZero() || r.Attempt != 2 {
		t.Fatalf("call %+v, result %+v", call, r)
	}
	// A goroutine the handler left behind cannot stream past the result.
	if err := call.Stream("late"); !errors.Is(err, splashtool.ErrStreamClosed) {
		t.Fatalf("Stream after the result: %v", err)
	}
}

func TestJSONPayload(t *testing.T) {
	c := serve(t, func(ctx context.Context, call *splashtool.Call) (splashtool.Output, error) {
		var in struct{ N int }
		if err := json.Unmarshal(call.Input.JSON, &in); err != nil {
			return splashtool.Output{}, splashtool.Permanent(err)
		}
		if in.N < 0 {
			return splashtool.JSON(json.RawMessage(`{"broken":`)), nil
		}
		return splashtool.JSON(json.RawMessage(fmt.Sprintf(`{"double":%d}`, 2*in.N))), nil
	})
	inv := *invoke("j1", "").Invoke
	inv.Input = protocol.JSONPayload(json.RawMessage(`{"n":21}`))
	c.send(protocol.InvokeMessage(inv))
	r := wantResult(t, c.next(), "j1", protocol.ResultSucceeded)
	if r.Payload.Format != protocol.FormatJSON || string(r.Payload.JSON) != `{"double":42}` {
		t.Fatalf("payload %+v", r.Payload)
	}

	// Output that is not JSON is answered as a failure, not sent.
	inv.RequestID, inv.Input = "j2", protocol.JSONPayload(json.RawMessage(`{"n":-1}`))
	c.send(protocol.InvokeMessage(inv))
	r = wantResult(t, c.next(), "j2", protocol.ResultFailed)
	if !strings.Contains(r.Error, "invalid handler output") {
		t.Fatalf("error %q", r.Error)
	}
}

func TestFailures(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name       string
		err        error
		panics     bool
		wantStatus protocol.ResultStatus
		wantError  string
		wantAfter  int64
	}{
		{"retryable", splashtool.Retryable(boom), false, protocol.ResultRetryTransient, "boom", 0},
		{"rate limited rounds up", splashtool.RateLimited(1500*time.Millisecond+time.Microsecond, boom), false,
			protocol.ResultRetryRateLimited, "boom", 1501},
		{"permanent", fmt.Errorf("wrapped: %w", splashtool.Permanent(boom)), false, protocol.ResultFailed, "boom", 0},
		{"permanent without text", splashtool.Permanent(errors.New("")), false, protocol.ResultFailed, "failed", 0},
		{"indeterminate", splashtool.Indeterminate(boom), false, protocol.ResultIndeterminate, "boom", 0},
		{"plain error", boom, false, protocol.ResultRetryTransient, "boom", 0},
		{"ack without a cancel", splashtool.CancelAcknowledged(), false, protocol.ResultFailed,
			"cancellation acknowledged without a cancel", 0},
		{"panic", nil, true, protocol.ResultRetryTransient, "handler panicked: boom", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := serve(t, func(ctx context.Context, call *splashtool.Call) (splashtool.Output, error) {
				if tt.panics {
					panic("boom")
				}
				return splashtool.Output{}, tt.err
			})
			c.send(invoke("f1", "x"))
			r := wantResult(t, c.next(), "f1", tt.wantStatus)
			if r.Error != tt.wantError || r.RetryAfterMillis != tt.wantAfter || r.Payload != nil {
				t.Fatalf("result %+v", r)
			}
		})
	}
}

// stopOnCancel streams "started", then waits for its context and reports
// how it ended with outcome.
func stopOnCancel(outcome func(cause error) (splashtool.Output, error)) splashtool.Handler {
	return func(ctx context.Context, call *splashtool.Call) (splashtool.Output, error) {
		if err := call.Stream("started"); err != nil {
			return splashtool.Output{}, err
		}
		<-ctx.Done()
		return outcome(context.Cause(ctx))
	}
}

func TestCancelAcknowledged(t *testing.T) {
	c := serve(t, stopOnCancel(func(cause error) (splashtool.Output, error) {
		if !errors.Is(cause, splashtool.ErrCancelled) {
			return splashtool.Output{}, splashtool.Permanent(fmt.Errorf("cause %v", cause))
		}
		return splashtool.Output{}, splashtool.CancelAcknowledged()
	}), splashtool.Cancellable(true))
	c.send(invoke("c1", "x"))
	wantChunk(t, c.next(), "c1", 1, "started")
	c.send(cancelMsg("c1"))
	wantDisposition(t, c.next(), "c1", protocol.CancelAcknowledged)
	if err := c.end(); err != nil {
		t.Fatal(err)
	}
	c.expectClosed() // no result after an acknowledgement
}

func TestCancelNotHonouredIsTooLate(t *testing.T) {
	c := serve(t, stopOnCancel(func(error) (splashtool.Output, error) {
		return splashtool.Text("finished anyway"), nil
	}), splashtool.Cancellable(true))
	c.send(invoke("c1", "x"))
	wantChunk(t, c.next(), "c1", 1, "started")
	c.send(cancelMsg("c1"))
	wantResult(t, c.next(), "c1", protocol.ResultSucceeded)
	wantDisposition(t, c.next(), "c1", protocol.CancelTooLate)

	// A plain error after the cancel is transient, then too_late as well.
	c2 := serve(t, stopOnCancel(func(cause error) (splashtool.Output, error) { return splashtool.Output{}, cause }),
		splashtool.Cancellable(true))
	c2.send(invoke("c2", "x"))
	wantChunk(t, c2.next(), "c2", 1, "started")
	c2.send(cancelMsg("c2"))
	r := wantResult(t, c2.next(), "c2", protocol.ResultRetryTransient)
	if r.Error != splashtool.ErrCancelled.Error() {
		t.Fatalf("error %q", r.Error)
	}
	wantDisposition(t, c2.next(), "c2", protocol.CancelTooLate)
}

func TestCancelAfterResultIsTooLate(t *testing.T) {
	c := serve(t, upperByWord, splashtool.Cancellable(true))
	c.send(invoke("c1", "x"))
	wantChunk(t, c.next(), "c1", 1, "word 1/1: x")
	wantResult(t, c.next(), "c1", protocol.ResultSucceeded)
	c.send(cancelMsg("c1"))
	wantDisposition(t, c.next(), "c1", protocol.CancelTooLate)
}

func TestCancelUnsupported(t *testing.T) {
	release := make(chan struct{})
	c := serve(t, func(ctx context.Context, call *splashtool.Call) (splashtool.Output, error) {
		if err := call.Stream("started"); err != nil {
			return splashtool.Output{}, err
		}
		<-release
		return splashtool.Text(fmt.Sprintf("context err: %v", ctx.Err())), nil
	})
	c.send(invoke("c1", "x"))
	wantChunk(t, c.next(), "c1", 1, "started")
	c.send(cancelMsg("c1"))
	wantDisposition(t, c.next(), "c1", protocol.CancelUnsupported) // at once, while the call runs
	close(release)
	r := wantResult(t, c.next(), "c1", protocol.ResultSucceeded)
	if r.Payload.Text != "context err: <nil>" {
		t.Fatalf("the call's context was cancelled: %q", r.Payload.Text)
	}
}

func TestConcurrentCalls(t *testing.T) {
	const n = 8
	// Every handler waits until all n have started: with calls run one
	// at a time this would never finish.
	started := make(chan struct{}, n)
	all := make(chan struct{})
	go func() {
		for range n {
			<-started
		}
		close(all)
	}()
	c := serve(t, func(ctx context.Context, call *splashtool.Call) (splashtool.Output, error) {
		started <- struct{}{}
		select {
		case <-all:
		case <-ctx.Done():
			return splashtool.Output{}, ctx.Err()
		}
		if err := call.Stream("go"); err != nil {
			return splashtool.Output{}, err
		}
		return splashtool.Text(call.Input.Text), nil
	})
	for i := range n {
		c.send(invoke(fmt.Sprintf("c%d", i), fmt.Sprint(i)))
	}
	results := map[string]string{}
	for len(results) < n {
		m := c.next()
		if m.Kind == protocol.KindResult {
			results[m.Result.RequestID] = m.Result.Payload.Text
		}
	}
	for i := range n {
		if got := results[fmt.Sprintf("c%d", i)]; got != fmt.Sprint(i) {
			t.Errorf("c%d answered %q", i, got)
		}
	}
	if err := c.end(); err != nil {
		t.Fatal(err)
	}
}

func TestEOFWaitsForRunningCalls(t *testing.T) {
	release := make(chan struct{})
	c := serve(t, func(ctx context.Context, call *splashtool.Call) (splashtool.Output, error) {
		_ = call.Stream("started")
		<-release
		return splashtool.Text("done"), nil
	})
	c.send(invoke("c1", "x"))
	wantChunk(t, c.next(), "c1", 1, "started")
	_ = c.CloseInput()
	close(release)
	wantResult(t, c.next(), "c1", protocol.ResultSucceeded)
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
}
