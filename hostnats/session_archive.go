package hostnats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/internal/recordauth"
	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// SessionArchive is hostloop.SessionArchive over the splash_sessions bucket.
//
// Record never waits for the server: it encodes the status, queues it and
// wakes the writer goroutine, which publishes the queued records to the
// bucket's subjects with PublishMsgAsync and resolves their acks in order.
// Until its ack, a record is answered by Lookup from memory, so a session
// the loop forgets right after it finished is never briefly unknown. A
// failed or dropped write is counted (Stats) and reported to
// WithErrorHandler; it is not retried.
//
// Every record is sealed (internal/recordauth) with a key derived from the
// host's key ring, which NATS never sees, and bound to its bucket key. Lookup
// and Incarnation verify it and refuse one that fails, with
// hostloop.ErrRecordRejected, reporting it to WithRecordRejectHandler: a
// writer with access to the bucket but not the key can delete records,
// never make the host answer with one of its own.
//
// Register writes an incarnation record and waits for it. A refresher
// goroutine then rewrites every registered incarnation each quarter of
// fabric.Config.SessionRetention, so the bucket's TTL forgets an incarnation only
// once its process has been gone that long.
//
// Goroutines: the writer and the refresher, both started here and stopped
// by Close.
type SessionArchive struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	seal   recordauth.Key
	cfg    fabric.Config
	opts   options
	budget int

	// wake signals the writer that queue grew; done is closed by Close,
	// which also cancels ctx, the parent of the refresher's calls.
	wake   chan struct{}
	done   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu guards every field below. It is never held across a network
	// call.
	mu sync.Mutex
	// queue holds encoded records Record took and the writer has not;
	// pending holds each id's latest record until its write resolved.
	queue   []archiveWrite
	pending map[hostloop.SessionID]archiveWrite
	// seq numbers records as Record takes them; resolved is the highest
	// seq whose write resolved (in order), which Flush waits on.
	seq, resolved uint64
	waiters       []flushWaiter
	incarnations  []archiveIncarnation
	refreshing    bool
	closed        bool
	stats         ArchiveStats

	closeOnce sync.Once
}

// ArchiveStats counts what a SessionArchive did with the records it took.
type ArchiveStats struct {
	// Recorded counts Record calls; Stored and Failed the writes that
	// resolved; Dropped the records refused because the queue was full
	// or the archive closed; Truncated the records cut to fit.
	Recorded, Stored, Failed, Dropped, Truncated uint64
}

type archiveWrite struct {
	seq  uint64
	id   hostloop.SessionID
	key  string
	data []byte
}

type archiveIncarnation struct {
	key  string
	data []byte
}

type flushWaiter struct {
	seq uint64
	ch  chan error
}

var _ hostloop.SessionArchive = (*SessionArchive)(nil)

// NewSessionArchive binds to the splash_sessions bucket, which fabric.Provision
// must have created with cfg; its records are sealed and verified with a
// key derived from key, the host's key ring or a single frame key (the
// zero key is fabric.ErrInvalidConfig): sealed with its current key, read
// with whichever key of the ring sealed them.
// Of the options, WithRecordRejectHandler hears of refused records,
// WithErrorHandler receives failed writes, WithPublishTimeout bounds each
// write's ack, and
// WithMaxPending bounds the records waiting for the writer (beyond it
// Record drops and counts). ctx bounds only the binding. The caller keeps
// nc and must Close the archive before closing it.
func NewSessionArchive(ctx context.Context, nc *nats.Conn, cfg fabric.Config, key protocol.Keys, opts ...Option) (*SessionArchive, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	seal, err := recordauth.Derive(key, recordauth.StoreSessions)
	if err != nil {
		return nil, fmt.Errorf("%w: session archive: %w", fabric.ErrInvalidConfig, err)
	}
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(o.maxPending),
		jetstream.WithPublishAsyncTimeout(o.publishTimeout))
	if err != nil {
		return nil, fmt.Errorf("hostnats: jetstream: %w", err)
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	kv, err := js.KeyValue(ctx, fabric.BucketSessions)
	if err != nil {
		return nil, fmt.Errorf("hostnats: session archive: bucket %s: %w", fabric.BucketSessions, err)
	}
	a := &SessionArchive{
		js:      js,
		kv:      kv,
		seal:    seal,
		cfg:     cfg,
		opts:    o,
		budget:  int(cfg.SessionValueBytes()) - recordHeadroom - recordauth.Overhead,
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		pending: make(map[hostloop.SessionID]archiveWrite),
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.wg.Add(1)
	go a.write()
	return a, nil
}

// Register stores inc's record, waiting for the server, and keeps it
// refreshed until Close.
func (a *SessionArchive) Register(ctx context.Context, inc hostloop.Incarnation) error {
	key, ok := archiveKey(incarnationKeyPrefix, inc.ID)
	if !ok {
		return fmt.Errorf("%w: incarnation %q is not a key token", host.ErrInvalidInput, clip.String(inc.ID, clip.Echo))
	}
	body, err := json.Marshal(incarnationRecord{ID: inc.ID, HostID: inc.HostID, Started: inc.Started.UTC()})
	if err != nil {
		return err
	}
	data := a.seal.Seal(key, body)
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if _, err := a.kv.Put(ctx, key, data); err != nil {
		return fmt.Errorf("hostnats: incarnation record %q: %w", inc.ID, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return ErrClosed
	}
	a.incarnations = append(a.incarnations, archiveIncarnation{key: key, data: data})
	if !a.refreshing {
		a.refreshing = true
		a.wg.Add(1)
		go a.refresh()
	}
	return nil
}

// RecordWait is Record that waits, within ctx, for the writer to make
// room in a full queue instead of dropping the record: a host's stop
// records every suspended session at once, and must lose none.
func (a *SessionArchive) RecordWait(ctx context.Context, s hostloop.SessionStatus) error {
	for {
		a.mu.Lock()
		full := len(a.queue) >= a.opts.maxPending && !a.closed
		a.mu.Unlock()
		if !full {
			a.Record(s)
			return nil
		}
		if err := a.Flush(ctx); err != nil {
			a.Record(s) // counted and reported as dropped
			return err
		}
	}
}

var _ hostloop.WaitingRecorder = (*SessionArchive)(nil)

// Record queues s's record. It never blocks on the server.
func (a *SessionArchive) Record(s hostloop.SessionStatus) {
	key, ok := archiveKey(sessionKeyPrefix, string(s.ID))
	var data []byte
	var cut bool
	err := fmt.Errorf("%w: session id %q is not a key token", host.ErrInvalidInput, clip.String(string(s.ID), clip.Echo))
	if ok {
		if data, cut, err = encodeSession(s, a.budget); err == nil {
			data = a.seal.Seal(key, data)
		}
	}
	a.mu.Lock()
	a.stats.Recorded++
	switch {
	case err != nil:
	case a.closed:
		err = ErrClosed
	case len(a.queue) >= a.opts.maxPending:
		err = errors.New("queue full")
	}
	if err != nil {
		a.stats.Dropped++
		a.mu.Unlock()
		a.report(fmt.Errorf("hostnats: session record of %q dropped: %w", clip.String(string(s.ID), clip.Echo), err))
		return
	}
	if cut {
		a.stats.Truncated++
	}
	a.seq++
	w := archiveWrite{seq: a.seq, id: s.ID, key: key, data: data}
	a.queue = append(a.queue, w)
	a.pending[s.ID] = w
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Lookup returns id's record: from memory while its write is in flight,
// else from the bucket. An id that is not a key token, or has no record,
// is hostloop.ErrUnknownSession.
func (a *SessionArchive) Lookup(ctx context.Context, id hostloop.SessionID) (hostloop.SessionStatus, error) {
	key, ok := archiveKey(sessionKeyPrefix, string(id))
	if !ok {
		return hostloop.SessionStatus{}, fmt.Errorf("%w: %q is not a session id", hostloop.ErrUnknownSession, clip.String(string(id), clip.Echo))
	}
	a.mu.Lock()
	w, inFlight := a.pending[id]
	a.mu.Unlock()
	if inFlight {
		return a.openSession(key, id, w.data)
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	e, err := a.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return hostloop.SessionStatus{}, fmt.Errorf("%w: %q", hostloop.ErrUnknownSession, id)
	case err != nil:
		return hostloop.SessionStatus{}, fmt.Errorf("hostnats: session record %q: %w", id, err)
	}
	return a.openSession(key, id, e.Value())
}

// openSession verifies and decodes the record of id stored under key.
func (a *SessionArchive) openSession(key string, id hostloop.SessionID, data []byte) (hostloop.SessionStatus, error) {
	body, err := a.open(key, data)
	if err != nil {
		return hostloop.SessionStatus{}, err
	}
	return decodeSession(body)
}

// open returns the body of the record stored under key once its tag
// verifies; a record that fails is reported and refused.
func (a *SessionArchive) open(key string, data []byte) ([]byte, error) {
	body, err := a.seal.Open(key, data)
	if err == nil {
		return body, nil
	}
	reason := recordauth.Reason(err)
	err = fmt.Errorf("%w: %s: %w", hostloop.ErrRecordRejected, clip.String(key, clip.Echo), err)
	if a.opts.onRecordReject != nil {
		a.opts.onRecordReject(reason, err)
	}
	return nil, err
}

// Incarnation returns a registered incarnation's record, or
// hostloop.ErrUnknownIncarnation.
func (a *SessionArchive) Incarnation(ctx context.Context, id string) (hostloop.Incarnation, error) {
	key, ok := archiveKey(incarnationKeyPrefix, id)
	if !ok {
		return hostloop.Incarnation{}, fmt.Errorf("%w: %q is not an incarnation", hostloop.ErrUnknownIncarnation, clip.String(id, clip.Echo))
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	e, err := a.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return hostloop.Incarnation{}, fmt.Errorf("%w: %q", hostloop.ErrUnknownIncarnation, id)
	case err != nil:
		return hostloop.Incarnation{}, fmt.Errorf("hostnats: incarnation record %q: %w", id, err)
	}
	body, err := a.open(key, e.Value())
	if err != nil {
		return hostloop.Incarnation{}, err
	}
	var rec incarnationRecord
	if err := json.Unmarshal(body, &rec); err != nil {
		return hostloop.Incarnation{}, fmt.Errorf("hostnats: incarnation record %q: %w", id, err)
	}
	return hostloop.Incarnation{ID: rec.ID, HostID: rec.HostID, Started: rec.Started}, nil
}

// Flush waits until every record taken before the call has been stored or
// has failed (see Stats), or ctx ends. It returns ErrClosed if the archive
// closes first.
func (a *SessionArchive) Flush(ctx context.Context) error {
	a.mu.Lock()
	if a.resolved >= a.seq {
		a.mu.Unlock()
		return nil
	}
	if a.closed {
		a.mu.Unlock()
		return ErrClosed
	}
	w := flushWaiter{seq: a.seq, ch: make(chan error, 1)}
	a.waiters = append(a.waiters, w)
	a.mu.Unlock()
	select {
	case err := <-w.ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats returns the archive's counters.
func (a *SessionArchive) Stats() ArchiveStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// Close stops the writer and the refresher and waits for them. Records
// not yet stored are abandoned (Flush first); a Flush waiting is answered
// with ErrClosed. Close is idempotent.
func (a *SessionArchive) Close() error {
	a.closeOnce.Do(func() {
		a.mu.Lock()
		a.closed = true
		for _, w := range a.waiters {
			w.ch <- ErrClosed
		}
		a.waiters = nil
		a.mu.Unlock()
		close(a.done)
		a.cancel()
		a.wg.Wait()
		a.js.CleanupPublisher()
	})
	return nil
}

// write is the writer goroutine: it publishes what Record queued, then
// resolves the acks oldest first. JetStream acks in the order it stores,
// so waiting on the oldest costs no latency.
func (a *SessionArchive) write() {
	defer a.wg.Done()
	type sent struct {
		w   archiveWrite
		fut jetstream.PubAckFuture
		err error
	}
	for {
		select {
		case <-a.wake:
		case <-a.done:
			return
		}
		a.mu.Lock()
		batch := a.queue
		a.queue = nil
		a.mu.Unlock()
		out := make([]sent, len(batch))
		for i, w := range batch {
			m := &nats.Msg{Subject: sessionKVPrefix + w.key, Data: w.data}
			out[i].w = w
			out[i].fut, out[i].err = a.js.PublishMsgAsync(m, jetstream.WithExpectStream(streamSessions))
		}
		for _, s := range out {
			err := s.err
			if err == nil {
				select {
				case <-s.fut.Ok():
				case err = <-s.fut.Err():
				case <-a.done:
					return
				}
			}
			a.resolve(s.w, err)
		}
	}
}

// resolve ends w's write and answers the flushes it completes.
func (a *SessionArchive) resolve(w archiveWrite, err error) {
	a.mu.Lock()
	a.resolved = w.seq
	if p, ok := a.pending[w.id]; ok && p.seq == w.seq {
		delete(a.pending, w.id)
	}
	if err != nil {
		a.stats.Failed++
	} else {
		a.stats.Stored++
	}
	kept := a.waiters[:0]
	for _, fw := range a.waiters {
		if fw.seq <= w.seq {
			fw.ch <- nil
			continue
		}
		kept = append(kept, fw)
	}
	a.waiters = kept
	a.mu.Unlock()
	if err != nil {
		a.report(fmt.Errorf("hostnats: session record of %q not stored: %w", clip.String(string(w.id), clip.Echo), err))
	}
}

// refresh rewrites the registered incarnations so the bucket's TTL counts
// from the last time their process was alive.
func (a *SessionArchive) refresh() {
	defer a.wg.Done()
	tick := time.NewTicker(a.cfg.SessionRetention / 4)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-a.done:
			return
		}
		a.mu.Lock()
		incs := append([]archiveIncarnation(nil), a.incarnations...)
		a.mu.Unlock()
		for _, inc := range incs {
			ctx, cancel := context.WithTimeout(a.ctx, a.opts.publishTimeout)
			_, err := a.kv.Put(ctx, inc.key, inc.data)
			cancel()
			if err != nil {
				a.report(fmt.Errorf("hostnats: refreshing %s: %w", inc.key, err))
			}
		}
	}
}

func (a *SessionArchive) report(err error) {
	if a.opts.onError != nil {
		a.opts.onError(err)
	}
}
