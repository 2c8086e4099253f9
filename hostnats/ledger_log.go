package hostnats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/recordauth"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workflow"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// ledgerIndexHeader carries the index of a message's first entry, so a
// writer that did not read the ledger itself can learn where it ends.
const ledgerIndexHeader = "Splash-Ledger-Index"

// ledgerRemovedHeader marks the tombstone Remove writes: a rollup that
// leaves the subject holding only itself until it expires.
const ledgerRemovedHeader = "Splash-Ledger-Removed"

// tombstoneTTL is how long a removed ledger's tombstone outlives the
// removal. It only has to be stored for its rollup to take effect; every
// reader treats a subject holding it as holding no ledger, so the shortest
// TTL JetStream takes will do.
const tombstoneTTL = time.Second

// isTombstone reports whether a ledger message is a removal's tombstone.
func isTombstone(h nats.Header) bool { return h.Get(ledgerRemovedHeader) != "" }

// LedgerLog is workflow.Log on the SPLASH_LEDGER stream: the ledger of a
// session is the messages on fabric.LedgerSubject(session), each a sealed batch
// of consecutive entries.
//
// Append is fenced with JetStream's expected last subject sequence: a
// batch lands only if the subject ends where this writer believes it
// does, so a host that lost a session to another cannot add to its
// history (workflow.ErrLedgerConflict). Records are sealed with a key
// derived from the host's key ring and bound to the session and index, so a
// writer without the key cannot make a host replay a history of its own.
//
// It is safe for concurrent use; it starts no goroutine.
type LedgerLog struct {
	js      jetstream.JetStream
	stream  jetstream.Stream
	seal    recordauth.Key
	maxBody int

	mu sync.Mutex
	// tail is, per session this log wrote or read, the entry count and
	// the stream sequence of its last message.
	tail map[string]ledgerTail

	// batched counts the appends stored in atomic batches.
	batched atomic.Int64
}

type ledgerTail struct {
	n   int
	seq uint64
}

// ledgerBatch is one message's body.
type ledgerBatch struct {
	From    int              `json:"from"`
	Entries []workflow.Entry `json:"entries"`
}

var (
	_ workflow.Log      = (*LedgerLog)(nil)
	_ workflow.Rewriter = (*LedgerLog)(nil)
)

// NewLedgerLog binds to SPLASH_LEDGER, which fabric.Provision must have created
// with cfg; key is the host's key ring (or a single frame key): records
// are sealed with its current key and read back with whichever key of the
// ring sealed them.
func NewLedgerLog(ctx context.Context, nc *nats.Conn, cfg fabric.Config, key protocol.Keys) (*LedgerLog, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	seal, err := recordauth.Derive(key, recordauth.StoreLedger)
	if err != nil {
		return nil, fmt.Errorf("%w: ledger: %w", fabric.ErrInvalidConfig, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("hostnats: jetstream: %w", err)
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	st, err := js.Stream(ctx, fabric.StreamLedger)
	if err != nil {
		return nil, fmt.Errorf("hostnats: ledger: stream %s: %w", fabric.StreamLedger, err)
	}
	return &LedgerLog{
		js: js, stream: st, seal: seal,
		// Room for the subject, headers and the seal.
		maxBody: int(cfg.MaxMsgSize) - 1024 - recordauth.Overhead,
		tail:    make(map[string]ledgerTail),
	}, nil
}

// ledgerSubject is the subject of session's ledger. A session id is one
// subject token: the loop makes them of [A-Za-z0-9_-].
func ledgerSubject(session string) (string, error) {
	if err := fabric.ValidateHostID(session); err != nil {
		return "", fmt.Errorf("%w: session %q is not one subject token", workflow.ErrInvalidEntry, clip.String(session, clip.Echo))
	}
	return fabric.LedgerSubject(session), nil
}

// Append implements workflow.Log: entries land at index from, in as few
// messages as MaxMsgSize allows, each fenced on the one before.
//
// A write can be stored while its acknowledgement is lost (the node the
// writer is connected to stops), and the writer then tries it again. The
// fence refuses the second try as if another writer had been there, so a
// conflict is checked against the ledger: when what it holds from index
// from is the start of entries, byte for byte, the earlier try landed, and
// only the rest is written.
func (l *LedgerLog) Append(ctx context.Context, session string, from int, entries []workflow.Entry) error {
	subject, err := ledgerSubject(session)
	if err != nil {
		return err
	}
	batches, err := l.split(from, entries)
	if err != nil {
		return err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	err = l.append(ctx, session, subject, from, batches)
	if !errors.Is(err, workflow.ErrLedgerConflict) {
		return err
	}
	stored, lerr := l.Load(ctx, session)
	if lerr != nil {
		return err
	}
	k, ok := workflow.Landed(stored, from, entries)
	switch {
	case !ok:
		return err
	case k == len(entries):
		return nil
	}
	if batches, err = l.split(from+k, entries[k:]); err != nil {
		return err
	}
	return l.append(ctx, session, subject, from+k, batches)
}

// append writes batches at index from, each fenced on the one before.
func (l *LedgerLog) append(ctx context.Context, session, subject string, from int, batches []encodedBatch) error {
	tail, err := l.tailOf(ctx, session, subject, from)
	if err != nil {
		return err
	}
	for _, b := range batches {
		body := b.encode()
		msg := nats.NewMsg(subject)
		msg.Data = l.seal.Seal(sealName(session, b.From), body)
		msg.Header.Set(ledgerIndexHeader, strconv.Itoa(b.From))
		ack, err := l.publish(ctx, msg, jetstream.WithExpectLastSequencePerSubject(tail.seq))
		if b.From == 0 && fabric.WrongLastSequence(err) {
			// A removed ledger's tombstone may not have expired yet: a
			// new ledger follows it, fenced on it instead of on nothing.
			if last, live, lerr := l.last(ctx, subject); lerr == nil && last != nil && !live {
				ack, err = l.publish(ctx, msg, jetstream.WithExpectLastSequencePerSubject(last.Sequence))
			}
		}
		if err != nil {
			l.forget(session)
			if fabric.WrongLastSequence(err) {
				return fmt.Errorf("%w: %s: %v", workflow.ErrLedgerConflict, session, err)
			}
			return fmt.Errorf("hostnats: ledger %s: %w", session, err)
		}
		tail = ledgerTail{n: b.From + len(b.Entries), seq: ack.Sequence}
		l.setTail(session, tail)
	}
	return nil
}

// Rewrite implements workflow.Rewriter: the whole ledger in one message
// whose rollup drops the messages it replaces, fenced on the subject's
// last sequence as an Append is. A ledger too large for one message takes
// the entries past stored as an Append instead. A retried Rewrite whose
// first try landed finds the ledger holding entries, and takes it.
func (l *LedgerLog) Rewrite(ctx context.Context, session string, stored int, entries []workflow.Entry) error {
	if stored > len(entries) {
		return fmt.Errorf("%w: rewrite of %d entries over %d stored", workflow.ErrInvalidEntry, len(entries), stored)
	}
	subject, err := ledgerSubject(session)
	if err != nil {
		return err
	}
	batches, err := l.split(0, entries)
	if err != nil {
		return err
	}
	if len(batches) != 1 {
		return l.Append(ctx, session, stored, entries[stored:])
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	tail, err := l.tailOf(ctx, session, subject, stored)
	if err == nil {
		msg := nats.NewMsg(subject)
		msg.Data = l.seal.Seal(sealName(session, 0), batches[0].encode())
		msg.Header.Set(ledgerIndexHeader, "0")
		msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
		var ack *jetstream.PubAck
		if ack, err = l.publish(ctx, msg, jetstream.WithExpectLastSequencePerSubject(tail.seq)); err == nil {
			l.setTail(session, ledgerTail{n: len(entries), seq: ack.Sequence})
			return nil
		}
		l.forget(session)
		if !fabric.WrongLastSequence(err) {
			return fmt.Errorf("hostnats: ledger %s: %w", session, err)
		}
		err = fmt.Errorf("%w: %s: %v", workflow.ErrLedgerConflict, session, err)
	}
	if !errors.Is(err, workflow.ErrLedgerConflict) {
		return err
	}
	if have, lerr := l.Load(ctx, session); lerr == nil {
		if k, ok := workflow.Landed(have, 0, entries); ok && k == len(entries) {
			return nil
		}
	}
	return err
}

// ledgerTryWait bounds how long one try of a ledger write waits for its
// acknowledgement. A write whose acknowledgement was lost (the connection
// was cut after the server stored it) is otherwise waited for until the
// write's own deadline, with the session's operations held all that time;
// a NATS request that is answered at all is answered in milliseconds.
const ledgerTryWait = 2 * time.Second

// publish writes msg, trying again within ctx each time a try's
// acknowledgement does not come within ledgerTryWait. Every ledger write
// may be made twice: a batch fenced on its subject's sequence (a try that
// was stored all the same makes the next one fail its fence, which Append
// tells from another writer's by reading the ledger), and a tombstone,
// whose rollup leaves the same subject however often it lands.
func (l *LedgerLog) publish(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	for {
		try, cancel := context.WithTimeout(ctx, ledgerTryWait)
		ack, err := l.js.PublishMsg(try, msg, opts...)
		cancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return ack, err
		}
	}
}

// last reads subject's last message, nil if the subject holds none; live
// reports a ledger's batch rather than a removal's tombstone.
func (l *LedgerLog) last(ctx context.Context, subject string) (m *jetstream.RawStreamMsg, live bool, err error) {
	m, err = l.stream.GetLastMsgForSubject(ctx, subject)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return m, !isTombstone(m.Header), nil
}

// encodedBatch is a batch whose entries are encoded already: each entry
// is marshalled once, to measure it and to send it.
type encodedBatch struct {
	From    int
	Entries [][]byte
}

// encode writes the batch as ledgerBatch's JSON. The entries are joined as
// they are: json.Marshal would check and compact every one again.
func (b encodedBatch) encode() []byte {
	n := len(`{"from":,"entries":[]}`) + 20
	for _, e := range b.Entries {
		n += len(e) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, `{"from":`...)
	out = strconv.AppendInt(out, int64(b.From), 10)
	out = append(out, `,"entries":[`...)
	for i, e := range b.Entries {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, "]}"...)
}

// split cuts entries into batches whose sealed messages fit.
func (l *LedgerLog) split(from int, entries []workflow.Entry) ([]encodedBatch, error) {
	var out []encodedBatch
	cur, size := encodedBatch{From: from}, 0
	for _, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", workflow.ErrInvalidEntry, err)
		}
		if len(b)+64 > l.maxBody {
			return nil, fmt.Errorf("%w: an entry of %d bytes is over the stream's message size", workflow.ErrInvalidEntry, len(b))
		}
		if size+len(b)+64 > l.maxBody && len(cur.Entries) > 0 {
			out = append(out, cur)
			cur, size = encodedBatch{From: cur.From + len(cur.Entries)}, 0
		}
		cur.Entries = append(cur.Entries, b)
		size += len(b) + 1
	}
	if len(cur.Entries) > 0 {
		out = append(out, cur)
	}
	return out, nil
}

// tailOf is where session's ledger ends, which must be at from: known
// from this log's own reads and writes, or else read off the stream.
func (l *LedgerLog) tailOf(ctx context.Context, session, subject string, from int) (ledgerTail, error) {
	l.mu.Lock()
	t, ok := l.tail[session]
	l.mu.Unlock()
	// What this log remembers may be stale (another log removed or
	// wrote the session since): it is trusted only when it agrees with
	// the writer, and the fence checks it anyway.
	switch {
	case ok && t.n == from:
	case from == 0:
		// A new ledger: no read is needed, since the fence on sequence 0
		// refuses the write if the subject holds anything.
		t = ledgerTail{}
	default:
		m, live, err := l.last(ctx, subject)
		switch {
		case err != nil:
			return ledgerTail{}, fmt.Errorf("hostnats: ledger %s: %w", session, err)
		case !live:
			// Nothing, or a removal's tombstone: a writer that still
			// believes in the ledger is told so by the conflict below.
			t = ledgerTail{}
		default:
			b, err := l.open(session, m.Header.Get(ledgerIndexHeader), m.Data)
			if err != nil {
				return ledgerTail{}, err
			}
			t = ledgerTail{n: b.From + len(b.Entries), seq: m.Sequence}
		}
	}
	if t.n != from {
		return ledgerTail{}, fmt.Errorf("%w: %s holds %d entries, the writer expected %d", workflow.ErrLedgerConflict, session, t.n, from)
	}
	return t, nil
}

func (l *LedgerLog) setTail(session string, t ledgerTail) {
	l.mu.Lock()
	l.tail[session] = t
	l.mu.Unlock()
}

func (l *LedgerLog) forget(session string) {
	l.mu.Lock()
	delete(l.tail, session)
	l.mu.Unlock()
}

// Has reports whether session has a ledger, reading only its last
// message's header: cheaper than Load, for a host asked about a session it
// does not drive.
func (l *LedgerLog) Has(ctx context.Context, session string) (bool, error) {
	subject, err := ledgerSubject(session)
	if err != nil {
		return false, err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	_, live, err := l.last(ctx, subject)
	if err != nil {
		return false, fmt.Errorf("hostnats: ledger %s: %w", session, err)
	}
	return live, nil
}

// Load implements workflow.Log. Every message is verified; a ledger with
// a message that fails, or whose batches do not follow on, is refused with
// ErrLedgerRejected rather than replayed in part.
//
// The messages are read one by one with the stream's get-next-by-subject
// request: no consumer is made, so any number of ledgers can be read at
// once, and none is left behind. Compaction (Rewrite) keeps the number of
// messages of a long ledger small.
func (l *LedgerLog) Load(ctx context.Context, session string) ([]workflow.Entry, error) {
	subject, err := ledgerSubject(session)
	if err != nil {
		return nil, err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	var out []workflow.Entry
	var last uint64
	for seq := uint64(1); ; seq = last + 1 {
		m, err := l.stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			if len(out) == 0 {
				return nil, fmt.Errorf("%w: %s", workflow.ErrUnknownLedger, session)
			}
			l.setTail(session, ledgerTail{n: len(out), seq: last})
			return out, nil
		case err != nil:
			return nil, fmt.Errorf("hostnats: ledger %s: %w", session, err)
		}
		last = m.Sequence
		if isTombstone(m.Header) {
			// A rollup leaves nothing before it, so a tombstone is the
			// subject's first message: what follows it, if anything, is a
			// ledger begun after the removal.
			out = out[:0]
			continue
		}
		b, err := l.open(session, m.Header.Get(ledgerIndexHeader), m.Data)
		if err != nil {
			return nil, err
		}
		if b.From != len(out) {
			return nil, fmt.Errorf("%w: %s: a batch at %d follows %d entries", ErrLedgerRejected, session, b.From, len(out))
		}
		out = append(out, b.Entries...)
	}
}

// open verifies and decodes one message.
func (l *LedgerLog) open(session, index string, data []byte) (ledgerBatch, error) {
	from, err := strconv.Atoi(index)
	if err != nil || from < 0 {
		return ledgerBatch{}, fmt.Errorf("%w: %s: index %q", ErrLedgerRejected, session, index)
	}
	body, err := l.seal.Open(sealName(session, from), data)
	if err != nil {
		return ledgerBatch{}, fmt.Errorf("%w: %s at %d: %v", ErrLedgerRejected, session, from, err)
	}
	var b ledgerBatch
	if err := json.Unmarshal(body, &b); err != nil || b.From != from {
		return ledgerBatch{}, fmt.Errorf("%w: %s at %d: body does not decode", ErrLedgerRejected, session, from)
	}
	return b, nil
}

// sealName binds a batch to its session and place, so a sealed batch
// cannot be replayed into another ledger or another position.
func sealName(session string, from int) string {
	return session + "#" + strconv.Itoa(from)
}

// Remove implements workflow.Log. One message removes the ledger: a
// tombstone whose rollup header makes the stream drop every earlier
// message of the subject, and whose TTL then drops the tombstone. It costs
// a publish where a purge costs a JetStream API request, which the server
// serves on its API queue with a JSON request and answer of its own.
func (l *LedgerLog) Remove(ctx context.Context, session string) error {
	subject, err := ledgerSubject(session)
	if err != nil {
		return err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	l.forget(session)
	msg := nats.NewMsg(subject)
	msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	msg.Header.Set(ledgerRemovedHeader, "1")
	if _, err := l.publish(ctx, msg, jetstream.WithMsgTTL(tombstoneTTL)); err != nil {
		return fmt.Errorf("hostnats: ledger %s: %w", session, err)
	}
	return nil
}

// Sessions implements workflow.Log: the sessions whose subject holds a
// ledger. A subject holding one message may hold a tombstone that has not
// expired yet, which is read to tell.
func (l *LedgerLog) Sessions(ctx context.Context) ([]string, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	info, err := l.stream.Info(ctx, jetstream.WithSubjectFilter(fabric.LedgerSubjects))
	if err != nil {
		return nil, fmt.Errorf("hostnats: ledger: %w", err)
	}
	out := make([]string, 0, len(info.State.Subjects))
	for subj, n := range info.State.Subjects {
		if n == 1 {
			// A tombstone, or nothing if it expired since the stream
			// answered, is no ledger.
			_, live, err := l.last(ctx, subj)
			if err != nil {
				return nil, fmt.Errorf("hostnats: ledger: %w", err)
			}
			if !live {
				continue
			}
		}
		out = append(out, strings.TrimPrefix(subj, fabric.LedgerSubject("")))
	}
	return out, nil
}
