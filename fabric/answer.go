package fabric

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// A call of an Idempotent tool keeps no journal record: its terminal
// answer, published on AnswerSubject, is the record. A delivery that may
// repeat an earlier one reads the subject's last message back with a
// direct get (LookupAnswer) and, if it finds an answer, replays it instead
// of running the call again. The answer lives as long as StreamEvents keeps
// it (Config.EventsMaxAge).

// LookupAnswer returns the answer stored for the Idempotent call of tool
// keyed idempotencyKey and sent to hostID: the last message on
// AnswerSubject(hostID, tool, idempotencyKey) in events, a handle on
// StreamEvents. codec is the ring of tool's pool.
// It reports false when the subject holds none. The stored answer is bound
// to the request and attempt that produced it; the caller re-binds it.
//
// Only a terminal worker frame is an answer: a result that is not
// retryable (retryables are never stored) or an acknowledged
// cancellation. Anything else on the subject wraps ErrForged. The request
// id is not compared with the caller's: the subject is the key's, and a
// host that restarts dispatches the same key under a new request id.
//
// The read is a direct get by subject ($JS.API.DIRECT.GET.<stream>.<subject>),
// the only read a worker is allowed on the stream; a handle whose stream
// does not allow direct gets fails with ErrNoDirectGet rather than fall
// back to a message get by sequence.
func LookupAnswer(ctx context.Context, events jetstream.Stream, codec *Codec, hostID, tool, idempotencyKey string) (protocol.WorkerMessage, bool, error) {
	if err := ValidateHostID(hostID); err != nil {
		return protocol.WorkerMessage{}, false, err
	}
	if err := protocol.ValidateToolName(tool); err != nil {
		return protocol.WorkerMessage{}, false, err
	}
	if info := events.CachedInfo(); info == nil || !info.Config.AllowDirect {
		return protocol.WorkerMessage{}, false, fmt.Errorf("%w: %s", ErrNoDirectGet, StreamEvents)
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	m, err := events.GetLastMsgForSubject(ctx, AnswerSubject(hostID, tool, idempotencyKey))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return protocol.WorkerMessage{}, false, nil
	}
	if err != nil {
		return protocol.WorkerMessage{}, false, fmt.Errorf("fabric: stored answer of %q: %w", clip.String(idempotencyKey, clip.Echo), err)
	}
	msg, _, err := codec.OpenWorker(m.Header, m.Data)
	if err != nil {
		return protocol.WorkerMessage{}, false, err
	}
	if !storedAnswer(msg) {
		return protocol.WorkerMessage{}, false, wrongKind(msg.Kind, "a terminal result or an acknowledged cancellation")
	}
	return msg, true, nil
}

// storedAnswer reports whether msg is an answer a worker stores on an
// answer subject.
func storedAnswer(msg protocol.WorkerMessage) bool {
	switch {
	case msg.Result != nil:
		switch msg.Result.Status {
		case protocol.ResultSucceeded, protocol.ResultFailed, protocol.ResultIndeterminate:
			return true
		}
	case msg.CancelDisp != nil:
		return msg.CancelDisp.Disposition == protocol.CancelAcknowledged
	}
	return false
}
