package workeragent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/outcome"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolproc"
	"github.com/splashfabric/splashfabric/tracing"
)

// processHandler runs a process tool's calls through its supervisor and
// turns how each ended into the handler's answer.
type processHandler struct {
	sup         *toolproc.Supervisor
	idempotent  bool
	cancellable bool
	// serverTool is, for a tool of an MCP server, the server's name of
	// it.
	serverTool string
}

func (p *processHandler) HandleCall(ctx context.Context, call *Call) (Output, error) {
	var inv protocol.Invoke
	if call.e != nil {
		inv = call.e.inv
	} else {
		inv = protocol.Invoke{
			RequestID: call.RequestID, Tool: call.Tool, Input: call.Input, CallIndex: call.CallIndex,
			Attempt: call.Attempt, AttemptLimit: call.AttemptLimit, IdempotencyKey: call.IdempotencyKey,
			OutputLimit: call.OutputLimit,
		}
	}
	if !call.Deadline.IsZero() {
		// The process learns what is left of the deadline now, not what
		// was left when the host claimed the call.
		inv.DeadlineMillis = max(time.Until(call.Deadline).Milliseconds(), 1)
	}
	// The host's request (and a drain) reaches the process as its one
	// cancellation request; a deadline is the watchdog's, which the
	// supervisor arms from call.Deadline. Either way the call ends
	// within the tool's cancel grace: a tool that does not honour
	// cancellation is sent nothing (the agent answered unsupported for
	// it) and is stopped if it runs on past the grace.
	cancel := make(chan struct{})
	var once sync.Once
	stop := context.AfterFunc(ctx, func() {
		cause := context.Cause(ctx)
		if errors.Is(cause, ErrCancelRequested) || p.cancellable && errors.Is(cause, ErrDraining) {
			once.Do(func() { close(cancel) })
		}
	})
	defer stop()
	// The process's call is a span of its own, and the tool is handed
	// its traceparent, so a tool's own spans join the trace.
	tracer := trace.SpanFromContext(ctx).TracerProvider().Tracer(ScopeName)
	ctx, span := tracer.Start(ctx, "process call "+inv.Tool, trace.WithAttributes(tracing.AttrTool.String(inv.Tool)))
	defer span.End()
	tc := propagation.MapCarrier{}
	tracing.Inject(ctx, tc)
	inv.TraceParent, inv.TraceState = tc.Get(fabric.HeaderTraceParent), tc.Get(fabric.HeaderTraceState)
	o := p.sup.Call(ctx, toolproc.Request{
		Invoke:        inv,
		ServerTool:    p.serverTool,
		Deadline:      call.Deadline,
		Chunk:         call.Stream.Write,
		Cancel:        cancel,
		Uncancellable: !p.cancellable,
		Disposition: func(d protocol.CancelDisposition) {
			if d == protocol.CancelUnsupported {
				call.CancelUnsupported()
			}
		},
	})
	span.SetAttributes(attribute.String("splash.process.outcome", o.Kind.String()))
	return p.answer(ctx, o)
}

// answer maps an outcome to the handler's return values.
func (p *processHandler) answer(ctx context.Context, o toolproc.Outcome) (Output, error) {
	switch o.Kind {
	case toolproc.Answered:
		r := o.Result
		switch r.Status {
		case protocol.ResultSucceeded:
			if r.Payload == nil {
				return Result(""), nil
			}
			return outcome.FromPayload(*r.Payload), nil
		case protocol.ResultRetryTransient:
			return Output{}, Retryable(errors.New(r.Error))
		case protocol.ResultRetryRateLimited:
			return Output{}, RateLimited(time.Duration(r.RetryAfterMillis)*time.Millisecond, errors.New(r.Error))
		case protocol.ResultIndeterminate:
			return Output{}, Indeterminate(errors.New(r.Error))
		default:
			return Output{}, Permanent(errors.New(r.Error))
		}
	case toolproc.CancelAcknowledged:
		return Output{}, CancelAcknowledged()
	case toolproc.Lost:
		// The deadline's or a stop's victim, and any call of a tool
		// whose effect must not repeat, may have had its effect: that is
		// indeterminate, never a cancellation. An idempotent tool's call
		// may simply run again.
		// o.Err names why by a reason code and counts, never by what
		// the tool wrote (toolproc.PoisonError): it becomes the call's
		// error, which the host audits and the script sees.
		if o.Watchdog || o.Stopped || !p.idempotent {
			return Output{}, Indeterminate(fmt.Errorf("tool process lost mid-call: %w", o.Err))
		}
		return Output{}, HandBack(fmt.Errorf("tool process lost mid-call: %w", o.Err))
	}
	// NotStarted: nothing ran.
	cause := context.Cause(ctx)
	switch {
	case ctx.Err() != nil && errors.Is(cause, ErrCancelRequested) && !p.cancellable:
		// The host heard unsupported already; the call never reached
		// the process, so it fails without an effect.
		return Output{}, Permanent(errors.New("cancelled before a tool process took the call"))
	case ctx.Err() != nil && errors.Is(cause, ErrCancelRequested):
		return Output{}, CancelAcknowledged()
	case ctx.Err() != nil:
		return Output{}, cause
	}
	return Output{}, Retryable(fmt.Errorf("tool process unavailable: %w", o.Err))
}
