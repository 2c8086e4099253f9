package hostnats

import (
	"context"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/splashfabric/splashfabric/workflow"
)

// Headers of a JetStream atomic batch (ADR-50): every message names the
// batch and its place in it; the last commits it, and only the last is
// answered.
const (
	batchIDHeader     = "Nats-Batch-Id"
	batchSeqHeader    = "Nats-Batch-Sequence"
	batchCommitHeader = "Nats-Batch-Commit"
)

// maxAtomicBatch is the most messages JetStream takes in one atomic batch
// by default.
const maxAtomicBatch = 1000

var _ workflow.BatchAppender = (*LedgerLog)(nil)

// AppendBatch implements workflow.BatchAppender: the writes of several
// sessions go to the stream as one atomic batch, each message fenced on
// its own subject's last sequence as Append fences it, so the stream
// answers once for them all. A write this log cannot fence without a read
// (a tail it has not cached), one that needs more than one message, or a
// batch the stream refuses (a fence that does not hold, a stream without
// atomic publishing) is written by Append instead, one by one, which tells
// a conflict from a landed retry.
func (l *LedgerLog) AppendBatch(ctx context.Context, writes []workflow.SessionAppend) []error {
	errs := make([]error, len(writes))
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	type staged struct {
		i   int
		msg *nats.Msg
	}
	var batch []staged
	var alone []int
	for i, w := range writes {
		m, ok := l.stage(w)
		if !ok || len(batch) == maxAtomicBatch {
			alone = append(alone, i)
			continue
		}
		batch = append(batch, staged{i: i, msg: m})
	}
	if len(batch) == 1 {
		alone = append(alone, batch[0].i)
		batch = nil
	}
	if len(batch) > 1 {
		id := nuid.Next()
		nc := l.js.Conn()
		var err error
		for k, s := range batch {
			s.msg.Header.Set(batchIDHeader, id)
			s.msg.Header.Set(batchSeqHeader, strconv.Itoa(k+1))
			if k < len(batch)-1 {
				if err = nc.PublishMsg(s.msg); err != nil {
					break
				}
			}
		}
		var ack *jetstream.PubAck
		if err == nil {
			last := batch[len(batch)-1].msg
			last.Header.Set(batchCommitHeader, "1")
			ack, err = l.js.PublishMsg(ctx, last)
		}
		if err == nil {
			l.batched.Add(int64(len(batch)))
		}
		for k, s := range batch {
			if err != nil {
				// Refused whole: nothing of it was stored.
				alone = append(alone, s.i)
				continue
			}
			// An atomic batch is stored as one run of sequences.
			w := writes[s.i]
			l.setTail(w.Session, ledgerTail{n: w.UpTo(), seq: ack.Sequence - uint64(len(batch)-1-k)})
		}
	}
	for _, i := range alone {
		w := writes[i]
		errs[i] = l.Append(ctx, w.Session, w.From, w.Entries)
	}
	return errs
}

// stage builds w's one message, fenced on the tail this log cached for
// its session (a new ledger's on an empty subject); ok is false when w
// needs a read or more than a message.
func (l *LedgerLog) stage(w workflow.SessionAppend) (*nats.Msg, bool) {
	subject, err := ledgerSubject(w.Session)
	if err != nil {
		return nil, false
	}
	l.mu.Lock()
	t, known := l.tail[w.Session]
	l.mu.Unlock()
	switch {
	case known && t.n == w.From:
	case !known && w.From == 0:
		t = ledgerTail{}
	default:
		return nil, false
	}
	batches, err := l.split(w.From, w.Entries)
	if err != nil || len(batches) != 1 {
		return nil, false
	}
	msg := nats.NewMsg(subject)
	msg.Data = l.seal.Seal(sealName(w.Session, w.From), batches[0].encode())
	msg.Header.Set(ledgerIndexHeader, strconv.Itoa(w.From))
	msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(t.seq, 10))
	return msg, true
}
