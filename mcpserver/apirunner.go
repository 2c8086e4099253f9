package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/splashfabric/splashfabric/apiclient"
)

// APIRunner runs sessions on a host reached over its HTTP API, with the
// client's token: what `splash mcp` uses. The host applies that token's
// scopes and tools.
type APIRunner struct {
	Client *apiclient.Client
}

var _ Runner = (*APIRunner)(nil)

// Run implements Runner.
func (r *APIRunner) Run(ctx context.Context, sub Submission, chunk func(Chunk)) (Outcome, error) {
	sctx, stop := submitContext(ctx)
	s, err := r.Client.Submit(sctx, apiclient.SubmitRequest{
		Source: sub.Source, Grants: sub.Grants, Tools: sub.Tools, ToolCallBudget: sub.ToolCallBudget, MaxPending: sub.MaxPending,
	})
	stop()
	if err != nil {
		return Outcome{}, err
	}
	if s.Terminal() {
		return apiOutcome(s), nil
	}
	if final, ok := r.follow(ctx, s.ID, chunk); ok {
		return apiOutcome(final), nil
	}
	// The stream could not be had or ended early: poll.
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		if ctx.Err() == nil {
			s, err = r.Client.Session(ctx, s.ID)
		}
		switch {
		case ctx.Err() != nil:
			r.cancel(ctx, s.ID)
			return Outcome{Session: s.ID}, ctx.Err()
		case errors.Is(err, apiclient.ErrUnknownSession):
			return Outcome{Session: s.ID}, fmt.Errorf("%w: %s: %w", ErrLostSession, s.ID, err)
		case err == nil && s.Terminal():
			return apiOutcome(s), nil
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// follow reads the session's event stream to its terminal state; ok is
// false when the stream ended before it.
func (r *APIRunner) follow(ctx context.Context, id string, chunk func(Chunk)) (apiclient.Session, bool) {
	stream, err := r.Client.Events(ctx, id)
	if err != nil {
		return apiclient.Session{}, false
	}
	defer stream.Close()
	for {
		ev, err := stream.Next()
		if errors.Is(err, io.EOF) || err != nil {
			return apiclient.Session{}, false
		}
		switch ev.Kind {
		case apiclient.EventChunk:
			chunk(Chunk{Tool: ev.Chunk.Tool, Index: ev.Chunk.Index, Text: ev.Chunk.Text})
		case apiclient.EventState:
			if ev.State.Terminal() {
				return ev.State, true
			}
		}
	}
}

// cancel asks for the cancellation of every live operation of id.
func (r *APIRunner) cancel(ctx context.Context, id string) {
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer stop()
	s, err := r.Client.Session(cctx, id)
	if err != nil {
		return
	}
	for _, op := range s.Operations {
		_, _ = r.Client.Cancel(cctx, id, op.ID)
	}
}

func apiOutcome(s apiclient.Session) Outcome {
	o := Outcome{Session: s.ID}
	if s.State == apiclient.StateFailed {
		o.Failed, o.Error = true, s.Error
		return o
	}
	if s.Value != nil {
		o.Value = *s.Value
	}
	return o
}
