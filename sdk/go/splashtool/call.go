package splashtool

import (
	"context"
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// Handler runs one call. Its context is cancelled with cause ErrCancelled
// when the host cancels the call (Cancellable tools only), when the call's
// deadline passes, and when the session stops (ServeConn's context ends or
// the host sent a bad frame).
//
// A nil error answers the Output as a success. Retryable, RateLimited,
// Permanent and Indeterminate answer the matching failure;
// CancelAcknowledged answers a cancel. Any other error is a transient
// failure (retry_transient); after a cancel it is followed by too_late, since
// the handler did not say it stopped.
type Handler func(ctx context.Context, call *Call) (Output, error)

// Call is what a handler knows about the attempt it runs. The exported
// fields are set before the handler starts and never change; Stream may be
// used from several goroutines.
type Call struct {
	// RequestID names the call within this process session.
	RequestID string
	// Tool is the catalog name the call was made to.
	Tool string
	// IdempotencyKey is stable across every attempt and redelivery of the
	// operation; pass it to downstream systems that deduplicate.
	IdempotencyKey string
	// Input is the call's validated input, text or JSON.
	Input protocol.WorkerPayload
	// CallIndex orders the call among its script's calls.
	CallIndex uint64
	// Attempt counts from 1; AttemptLimit is the most the host will make.
	Attempt, AttemptLimit uint32
	// Deadline is when the host stops waiting; zero means none. The
	// handler's context carries it too.
	Deadline time.Time
	// OutputLimit bounds the result in bytes; zero means unknown.
	OutputLimit int
	// StreamLimits are the bounds of the call's stream policy, or nil when
	// the tool has none (its chunks will be refused).
	StreamLimits *protocol.StreamLimits
	// TraceParent and TraceState are the W3C trace context of the
	// worker's span for this call, empty when the worker does not trace:
	// a tool that traces starts its own spans under them (with
	// OpenTelemetry, propagation.TraceContext{}.Extract over a
	// propagation.MapCarrier holding "traceparent" and "tracestate").
	// They say nothing about who called or what the call may do.
	TraceParent, TraceState string

	s *session
	// cancel ends the handler's context; release frees its deadline timer.
	cancel  context.CancelCauseFunc
	release context.CancelFunc

	// Guarded by s.mu.
	chunks     uint64 // sequence of the last chunk written
	cancelSeen bool   // the host sent its (only) cancel
	cancelled  bool   // ... and the context was cancelled for it
	done       bool   // the terminal frame is written (or the session closed)
}

// Stream sends one progress chunk to the host. It fails with
// ErrStreamClosed once the call has been answered, which is only possible
// from a goroutine the handler left running, or once the session has
// stopped writing.
func (c *Call) Stream(text string) error {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.done {
		return fmt.Errorf("%w: request %q already answered", ErrStreamClosed, c.RequestID)
	}
	msg := protocol.ChunkMessage(protocol.Chunk{RequestID: c.RequestID, Sequence: c.chunks + 1, Text: text})
	if err := s.sendLocked(msg); err != nil {
		return fmt.Errorf("%w: %w", ErrStreamClosed, err)
	}
	c.chunks++
	return nil
}

func newCall(s *session, v protocol.Invoke) *Call {
	c := &Call{
		RequestID:      v.RequestID,
		Tool:           v.Tool,
		IdempotencyKey: v.IdempotencyKey,
		Input:          v.Input,
		CallIndex:      v.CallIndex,
		Attempt:        v.Attempt,
		AttemptLimit:   v.AttemptLimit,
		OutputLimit:    v.OutputLimit,
		StreamLimits:   v.Stream,
		TraceParent:    v.TraceParent,
		TraceState:     v.TraceState,
		s:              s,
	}
	if v.DeadlineMillis > 0 {
		// The host counts the deadline from its claim; counting from
		// receipt here errs late by the transit time, which the host's
		// own watchdog covers.
		c.Deadline = time.Now().Add(time.Duration(v.DeadlineMillis) * time.Millisecond)
	}
	return c
}

// run calls the handler and reports its answer. A panic is answered as a
// transient failure rather than taking every other call of the process
// down with it.
func (c *Call) run(ctx context.Context, h Handler) {
	out, err := func() (out Output, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("handler panicked: %v", p)
			}
		}()
		return h(ctx, c)
	}()
	c.release()
	c.cancel(nil)
	c.s.finish(c, out, err)
}
