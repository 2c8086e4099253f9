package demotools_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workeragent"
)

// call builds the Call an agent would hand the handler for attempt of a
// text input.
func call(tool, input string, attempt uint32) *workeragent.Call {
	return &workeragent.Call{
		Tool: tool, RequestID: "req-1", IdempotencyKey: "idem-1",
		Input: protocol.TextPayload(input), Attempt: attempt, AttemptLimit: 3,
		// The zero writer refuses every chunk, as for a tool without a
		// stream policy.
		Stream: &workeragent.ChunkWriter{},
	}
}

func jsonCall(tool, input string) *workeragent.Call {
	c := call(tool, "", 1)
	c.Input = protocol.JSONPayload([]byte(input))
	return c
}

func run(t *testing.T, ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
	t.Helper()
	h, err := demotools.Handler(c.Tool)
	if err != nil {
		t.Fatalf("Handler(%q): %v", c.Tool, err)
	}
	return h.HandleCall(ctx, c)
}

// outcome names what a handler's error asks the agent to do.
func outcome(err error) string {
	var (
		rt   *workeragent.RetryableError
		rl   *workeragent.RateLimitedError
		perm *workeragent.PermanentError
		ack  *workeragent.CancelAcknowledgedError
	)
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &ack):
		return "cancel_ack"
	case errors.As(err, &perm):
		return "permanent"
	case errors.As(err, &rl):
		return "rate_limited " + rl.After.String()
	case errors.As(err, &rt):
		return "retryable"
	default:
		return "plain"
	}
}

func TestHandlers(t *testing.T) {
	tests := []struct {
		name    string
		call    *workeragent.Call
		want    protocol.WorkerPayload
		outcome string
		wantErr error
	}{
		{"echo", call(demotools.Echo, "hello", 1), protocol.TextPayload("hello"), "ok", nil},
		{"echo empty", call(demotools.Echo, "", 1), protocol.TextPayload(""), "ok", nil},
		{"upper", call(demotools.Upper, "Release v1", 1), protocol.TextPayload("RELEASE V1"), "ok", nil},
		{"sleep short", call(demotools.Sleep, "1ms", 1), protocol.TextPayload("slept 1ms"), "ok", nil},
		{"sleep bad input", call(demotools.Sleep, "soon", 1), protocol.WorkerPayload{}, "permanent", demotools.ErrInvalidInput},
		{"sleep negative", call(demotools.Sleep, "-1s", 1), protocol.WorkerPayload{}, "permanent", demotools.ErrInvalidInput},
		{"flaky attempt 1 of 2", call(demotools.Flaky, "2", 1), protocol.WorkerPayload{}, "retryable", nil},
		{"flaky attempt 2 of 2", call(demotools.Flaky, "2", 2), protocol.WorkerPayload{}, "retryable", nil},
		{"flaky attempt 3", call(demotools.Flaky, "2", 3), protocol.TextPayload("ok after 2"), "ok", nil},
		{"flaky never fails", call(demotools.Flaky, "0", 1), protocol.TextPayload("ok after 0"), "ok", nil},
		{"flaky bad input", call(demotools.Flaky, "two", 1), protocol.WorkerPayload{}, "permanent", demotools.ErrInvalidInput},
		{"ratelimited first", call(demotools.RateLimited, "300ms", 1), protocol.WorkerPayload{}, "rate_limited 300ms", nil},
		{"ratelimited second", call(demotools.RateLimited, "300ms", 2), protocol.TextPayload("ok after rate limit of 300ms"), "ok", nil},
		{"ratelimited bad input", call(demotools.RateLimited, "x", 1), protocol.WorkerPayload{}, "permanent", demotools.ErrInvalidInput},
		{"stream without policy", call(demotools.Stream, "3", 1), protocol.WorkerPayload{}, "permanent", workeragent.ErrStreamNotAllowed},
		{"stream bad input", call(demotools.Stream, "0", 1), protocol.WorkerPayload{}, "permanent", demotools.ErrInvalidInput},
		{"sum", jsonCall(demotools.JSONSum, `{"numbers":[1,2,3.5]}`), protocol.JSONPayload([]byte(`{"sum":6.5}`)), "ok", nil},
		{"sum empty", jsonCall(demotools.JSONSum, `{"numbers":[]}`), protocol.JSONPayload([]byte(`{"sum":0}`)), "ok", nil},
		{"sum missing numbers", jsonCall(demotools.JSONSum, `{}`), protocol.WorkerPayload{}, "permanent", demotools.ErrInvalidInput},
		{"sum extra field", jsonCall(demotools.JSONSum, `{"numbers":[1],"x":1}`), protocol.WorkerPayload{}, "permanent", demotools.ErrInvalidInput},
		{"sum not numbers", jsonCall(demotools.JSONSum, `{"numbers":["1"]}`), protocol.WorkerPayload{}, "permanent", demotools.ErrInvalidInput},
		{"sum overflow", jsonCall(demotools.JSONSum, `{"numbers":[1e308,1e308]}`), protocol.WorkerPayload{}, "permanent", demotools.ErrInvalidInput},
		{"sum text input", call(demotools.JSONSum, `{"numbers":[1]}`, 1), protocol.WorkerPayload{}, "permanent", demotools.ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, t.Context(), tt.call)
			if got := outcome(err); got != tt.outcome {
				t.Fatalf("outcome %q (%v), want %q", got, err, tt.outcome)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			got := out.Payload()
			if got.Format != tt.want.Format || got.Text != tt.want.Text || string(got.JSON) != string(tt.want.JSON) {
				t.Fatalf("output %+v (json %s), want %+v (json %s)", got, got.JSON, tt.want, tt.want.JSON)
			}
		})
	}
}

// TestSleepEnds checks that how the handler's context ends decides the
// answer: the cause is what the agent sets, so each case builds it the
// same way.
func TestSleepEnds(t *testing.T) {
	tests := []struct {
		name    string
		cause   error
		outcome string
		wantErr error
	}{
		{"cancellation request", workeragent.ErrCancelRequested, "cancel_ack", nil},
		{"deadline", workeragent.ErrDeadlineElapsed, "permanent", workeragent.ErrDeadlineElapsed},
		{"drain", workeragent.ErrDraining, "plain", workeragent.ErrDraining},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(t.Context())
			cancel(tt.cause)
			start := time.Now()
			_, err := run(t, ctx, call(demotools.Sleep, "1h", 1))
			if got := outcome(err); got != tt.outcome {
				t.Fatalf("outcome %q (%v), want %q", got, err, tt.outcome)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if d := time.Since(start); d > time.Minute {
				t.Fatalf("sleep ran %v after its context ended", d)
			}
		})
	}
}

// The catalog's redaction rule for demo.stream hides Secret.
func TestStreamRedactor(t *testing.T) {
	def, err := demotools.Definition(demotools.Stream)
	if err != nil {
		t.Fatal(err)
	}
	got := def.Redactor()("chunk 2/3 token=" + demotools.Secret)
	if want := "chunk 2/3 token=" + demotools.Redacted; got != want {
		t.Fatalf("redacted %q, want %q", got, want)
	}
}
