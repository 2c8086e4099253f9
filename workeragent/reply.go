package workeragent

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/protocol"
)

// openInvoke authenticates an invocation and returns it with the host that
// waits for the answer.
func (a *Agent) openInvoke(m jetstream.Msg) (protocol.Invoke, string, error) {
	host := m.Headers().Get(fabric.HeaderHost)
	if err := fabric.ValidateHostID(host); err != nil {
		return protocol.Invoke{}, "", err
	}
	inv, err := a.codec.OpenInvoke(m.Headers(), m.Data())
	if err != nil {
		return protocol.Invoke{}, "", err
	}
	return inv, host, nil
}

// publishChunk JetStream-publishes one chunk to the host's events subject
// without waiting for the stream: the call's result follows on the same
// connection and subject, so the stream stores (and the host's consumer
// delivers) the chunks before it. A failure arrives later at
// onChunkPublishError; the message id dedupes a republish of frame k.
func (a *Agent) publishChunk(e *execution, c protocol.Chunk, k uint32) error {
	m, err := a.codec.SealWorker(e.inv.RequestID, e.inv.Attempt, k, protocol.ChunkMessage(c))
	if err != nil {
		return err
	}
	m.Subject = fabric.EventsSubject(e.host, e.inv.Tool)
	m.Header.Set(fabric.HeaderMsgID, a.codec.ChunkMsgID(e.inv.RequestID, e.inv.Attempt, k))
	m.Header.Set(fabric.HeaderWorker, a.cfg.WorkerID)
	m.Header.Set(fabric.HeaderTool, e.inv.Tool)
	if _, err := a.chunkJS.PublishMsgAsync(m); err != nil {
		a.chunkPublishFailed(m, err)
		return err
	}
	return nil
}

// onChunkPublishError is the chunk context's async error handler, run on a
// client goroutine when the stream refuses a chunk or its ack times out.
// The chunk is not retried: the host sees a gap in Chunk.Sequence, and the
// result still carries the whole answer.
func (a *Agent) onChunkPublishError(_ jetstream.JetStream, m *nats.Msg, err error) {
	a.chunkPublishFailed(m, err)
}

func (a *Agent) chunkPublishFailed(m *nats.Msg, err error) {
	a.stats.chunkPublishErrors.Add(1)
	a.log.Warn("chunk not stored", "msg_id", m.Header.Get(fabric.HeaderMsgID), "err", err)
}

// eventKind names a terminal event in its message id. Dispositions carry
// theirs, so an unsupported answer does not dedupe away the too_late or
// acknowledged one that may follow in the same attempt.
func eventKind(msg protocol.WorkerMessage) protocol.MessageKind {
	if msg.CancelDisp != nil {
		return msg.Kind + "_" + protocol.MessageKind(msg.CancelDisp.Disposition)
	}
	return msg.Kind
}

// sendEvent seals msg as frame k (at least 1) and starts its JetStream
// publish to the host's events subject; the future reports when the
// stream has stored it. The message id makes a replay of the same answer
// a no-op within the duplicate window.
func (a *Agent) sendEvent(e *execution, msg protocol.WorkerMessage, k uint32) (jetstream.PubAckFuture, error) {
	m, err := a.sealEvent(e, msg, k)
	if err != nil {
		return nil, err
	}
	m.Subject = fabric.EventsSubject(e.host, e.inv.Tool)
	return a.js.PublishMsgAsync(m)
}

// sealEvent seals msg as frame k (at least 1) of the execution's attempt,
// with the headers every terminal event carries.
func (a *Agent) sealEvent(e *execution, msg protocol.WorkerMessage, k uint32) (*nats.Msg, error) {
	m, err := a.codec.SealWorker(e.inv.RequestID, e.inv.Attempt, max(k, 1), msg)
	if err != nil {
		return nil, err
	}
	m.Header.Set(fabric.HeaderMsgID, a.codec.EventMsgID(e.inv.RequestID, e.inv.Attempt, eventKind(msg)))
	m.Header.Set(fabric.HeaderWorker, a.cfg.WorkerID)
	m.Header.Set(fabric.HeaderTool, e.inv.Tool)
	return m, nil
}

// publishStored JetStream-publishes the answer of an Idempotent call as
// frame k on its operation's answer subject and waits for the stream to
// store it: the stored answer is the call's record (see
// fabric.LookupAnswer). With first, the stream stores it only while the
// subject holds nothing, so the first answer stored stays the key's, as
// the journal's Store kept the first result; a later one fails with
// errAnswerStored.
func (a *Agent) publishStored(e *execution, msg protocol.WorkerMessage, k uint32, first bool) error {
	m, err := a.sealEvent(e, msg, k)
	if err != nil {
		return err
	}
	m.Subject = fabric.AnswerSubject(e.host, e.inv.Tool, e.inv.IdempotencyKey)
	if first {
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	}
	f, err := a.js.PublishMsgAsync(m)
	if err != nil {
		return err
	}
	err = awaitStored(f)
	if fabric.WrongLastSequence(err) {
		return fmt.Errorf("%w: %w", errAnswerStored, err)
	}
	return err
}

// lookupAnswer reads the stored answer of the execution's Idempotent call
// back from its answer subject. A message there that fails
// authentication is counted and taken for no answer: the call runs, and
// its own answer is what the host gets.
func (a *Agent) lookupAnswer(ctx context.Context, host, tool, key string) (protocol.WorkerMessage, bool, error) {
	msg, found, err := fabric.LookupAnswer(ctx, a.events, a.codec, host, tool, key)
	if errors.Is(err, fabric.ErrForged) {
		a.forged(err, "rejected stored answer", "subject", fabric.AnswerSubject(host, tool, key))
		return protocol.WorkerMessage{}, false, nil
	}
	if err != nil {
		return protocol.WorkerMessage{}, false, fmt.Errorf("workeragent: %w", err)
	}
	return msg, found, nil
}

// publishEvent JetStream-publishes an event as frame k and waits for the
// stream to store it.
func (a *Agent) publishEvent(e *execution, msg protocol.WorkerMessage, k uint32) error {
	f, err := a.sendEvent(e, msg, k)
	if err != nil {
		return err
	}
	return awaitStored(f)
}

// awaitStored waits for the stream's answer to a publish; the client's
// async publish timeout (opTimeout) bounds the wait.
func awaitStored(f jetstream.PubAckFuture) error {
	select {
	case <-f.Ok():
		return nil
	case err := <-f.Err():
		return err
	}
}

// cancelNoted consults the local copy of the cancel records; sure is false
// when a miss cannot be trusted and the bucket must be read.
func (a *Agent) cancelNoted(inv protocol.Invoke) (covered, sure bool) {
	return a.cancels.covers(fabric.CancelKey(a.poolOf(inv.Tool), inv.RequestID), inv, a.reconnects())
}

// cancelRecorded reports whether the host recorded a cancellation covering
// inv, reading the bucket. A record that fails authentication is counted
// and ignored.
func (a *Agent) cancelRecorded(ctx context.Context, inv protocol.Invoke) (bool, error) {
	_, ok, err := fabric.LookupCancel(ctx, a.cancelKV, a.codec, a.poolOf(inv.Tool), inv)
	if errors.Is(err, fabric.ErrForged) {
		a.forged(err, "rejected cancel record", "request", inv.RequestID)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("workeragent: %w", err)
	}
	return ok, nil
}
