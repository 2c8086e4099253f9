package mcpserver

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/tracing"
)

// cancelTimeout bounds asking the host to cancel a session's operations
// once the caller went away: the caller's context is over by then.
const cancelTimeout = 5 * time.Second

// submitTimeout bounds a submission. It is not the caller's context
// that bounds it: a caller that cancels while its session is being
// created must still learn the session's id, or the operation it started
// could not be cancelled.
const submitTimeout = 30 * time.Second

// submitContext is the context of a submission on behalf of a call with
// context ctx: ctx's values, submitTimeout's deadline, not its
// cancellation. Run checks ctx right after.
func submitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), submitTimeout)
}

// pollInterval is how often a session is asked for its state once its
// event subscription is lost (the subscriber fell behind).
const pollInterval = 200 * time.Millisecond

// LoopRunner runs sessions on the host's own loop, in process: what the
// host's /mcp endpoint uses. Events must be the loop's broadcaster (the
// one httpapi.Config.Events holds).
type LoopRunner struct {
	Backend httpapi.Backend
	Events  *httpapi.Broadcaster
	// Gate, if set, admits each submission for the API token of the
	// call (in its context) as POST /v1/sessions does, and records the
	// session as that token's owner's; it must be the API's
	// (httpapi.Config.Gate) and front Backend. A call without a token is
	// then refused. Nil submits to Backend unchecked. What the call does
	// with its own session after (following it, cancelling it when the
	// caller leaves) needs no other scope.
	Gate *httpapi.Gate
	// Tracer, if set, traces each call's submission: its span is the
	// parent of the session's (Submission.Trace). Nil traces nothing.
	Tracer trace.TracerProvider
}

var _ Runner = (*LoopRunner)(nil)

// Run implements Runner.
func (r *LoopRunner) Run(ctx context.Context, sub Submission, chunk func(Chunk)) (Outcome, error) {
	sctx, stop := submitContext(ctx)
	submit := r.Backend.Submit
	if r.Gate != nil {
		submit = r.Gate.Submit
	}
	hsub := hostloop.Submission{
		Source: sub.Source, Grants: sub.Grants, Tools: sub.Tools, ToolCallBudget: sub.ToolCallBudget, MaxPending: sub.MaxPending,
	}
	var span trace.Span
	if r.Tracer != nil {
		sctx, span = r.Tracer.Tracer("github.com/splashfabric/splashfabric/mcpserver").Start(sctx, "mcp tools/call",
			trace.WithSpanKind(trace.SpanKindServer))
		hsub.Trace = tracing.TraceParent(span.SpanContext())
	}
	st, err := submit(sctx, hsub)
	if span != nil {
		if err == nil {
			span.SetAttributes(tracing.AttrSession.String(string(st.ID)))
		} else {
			span.SetStatus(codes.Error, "refused")
		}
		span.End()
	}
	stop()
	if err != nil {
		return Outcome{}, err
	}
	id := st.ID
	if loopTerminal(st) {
		return loopOutcome(st), nil
	}
	// The broadcaster keeps a backlog of the session's events, so what
	// happened between Submit and here is replayed.
	ch, unsubscribe := r.Events.Subscribe(id)
	defer unsubscribe()
	for ch != nil {
		select {
		case <-ctx.Done():
			r.cancel(ctx, id)
			return Outcome{Session: string(id)}, ctx.Err()
		case ev, ok := <-ch:
			if !ok {
				ch = nil
				break
			}
			switch ev.Kind {
			case httpapi.EventChunk:
				chunk(Chunk{Tool: ev.Chunk.Tool, Index: ev.Chunk.Index, Text: ev.Chunk.Text})
			case httpapi.EventState:
				if loopTerminal(ev.Status) {
					return loopOutcome(ev.Status), nil
				}
			}
		}
	}
	// Dropped for falling behind: the rest of the chunks are gone, the
	// result is not.
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		st, _, err := r.Backend.Status(ctx, id)
		switch {
		case ctx.Err() != nil:
			r.cancel(ctx, id)
			return Outcome{Session: string(id)}, ctx.Err()
		case err != nil:
			return Outcome{Session: string(id)}, fmt.Errorf("%w: %s: %w", ErrLostSession, id, err)
		case loopTerminal(st):
			return loopOutcome(st), nil
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// cancel asks for the cancellation of every live operation of id.
func (r *LoopRunner) cancel(ctx context.Context, id hostloop.SessionID) {
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer stop()
	st, _, err := r.Backend.Status(cctx, id)
	if err != nil {
		return
	}
	for _, op := range st.Operations {
		// A refusal means the operation already ended or is already
		// being cancelled: either way there is nothing more to ask.
		_ = r.Backend.Cancel(cctx, id, op.ID)
	}
}

func loopTerminal(st hostloop.SessionStatus) bool {
	return st.State.Terminal()
}

func loopOutcome(st hostloop.SessionStatus) Outcome {
	o := Outcome{Session: string(st.ID)}
	if st.State == hostloop.SessionFailed || st.State == hostloop.SessionCancelled {
		o.Failed, o.Error = true, st.Error
		return o
	}
	o.Value = st.Value
	return o
}
