package hostnats

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
)

// A claimed operation is either still in SPLASH_INVOKE, waiting for a
// worker of its pool, or was handed to one. The host hears nothing from a
// worker until its first chunk or its answer, so the difference is read
// from JetStream instead: a pool consumer delivers in stream order, so an
// invocation stored at a sequence past the consumer's last delivered one
// has never left the stream. Only the sequence of each live attempt is
// kept; the question costs one consumer lookup per tool, and only when
// someone asks (GET /v1/operations), never per operation on the loop.

// publishedSeqs remembers, for each request this transport published, the
// stream sequence of its latest attempt, until the request ends: its
// terminal frame arrives (a retryable answer below the attempt limit keeps
// it, waiting for the next attempt) or the loop forgets it. A request it
// does not hold (one an earlier process of the host published, whose
// session this one resumed or adopted) is not its to judge. It has its own
// mutex: Publish, the ack watcher, the events consumer and Forget write
// it, and Waiting reads it, from their own goroutines.
//
// One race leaves an entry behind: a retryable answer the loop does not
// retry because a cancellation was asked meanwhile (the loop confirms the
// cancellation itself and forgets nothing). It costs one small entry and
// reads as queued for a request no one lists.
type publishedSeqs struct {
	mu   sync.Mutex
	seqs map[string]publishedSeq
}

type publishedSeq struct {
	tool    string
	attempt uint32
	limit   uint32
	// seq is where the attempt was stored; 0 until its publish is
	// acknowledged, and again between attempts.
	seq uint64
	// heard is set once a worker sent a frame for this attempt: it holds
	// the call whatever the consumer says.
	heard bool
}

func newPublishedSeqs() *publishedSeqs {
	return &publishedSeqs{seqs: make(map[string]publishedSeq)}
}

// published records that attempt of requestID is being published.
func (p *publishedSeqs) published(requestID, tool string, attempt, limit uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.seqs[requestID]; ok && cur.attempt > attempt {
		return
	}
	p.seqs[requestID] = publishedSeq{tool: tool, attempt: attempt, limit: limit}
}

// stored records that attempt of requestID was stored at seq. An answer
// may come before the acknowledgement (a fast worker, a busy watcher);
// the request then is no longer held, and the late sequence is dropped.
func (p *publishedSeqs) stored(requestID string, attempt uint32, seq uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.seqs[requestID]; ok && cur.attempt == attempt && cur.seq == 0 && !cur.heard {
		cur.seq = seq
		p.seqs[requestID] = cur
	}
}

// heard records a worker frame for requestID sealed by tool's pool;
// attempt 0 (a chunk) means the current attempt. retry reports a
// retryable answer.
func (p *publishedSeqs) heard(requestID, tool string, attempt uint32, terminal, retry bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur, ok := p.seqs[requestID]
	if !ok || cur.tool != tool || (attempt != 0 && attempt < cur.attempt) {
		// Not published here, sealed by another tool's pool (the loop
		// refuses it), or a stale frame of an earlier attempt.
		return
	}
	switch {
	case terminal && retry && attempt < cur.limit:
		// No worker holds it until the loop publishes the next attempt.
		cur.seq, cur.heard = 0, false
		p.seqs[requestID] = cur
	case terminal:
		delete(p.seqs, requestID)
	default:
		cur.heard = true
		p.seqs[requestID] = cur
	}
}

func (p *publishedSeqs) forget(requestID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.seqs, requestID)
}

func (p *publishedSeqs) get(requestID string) (publishedSeq, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.seqs[requestID]
	return s, ok
}

// Waiting reports which of requestIDs no worker has been handed yet: the
// latest attempt is still in its tool's stream, or was published and not
// yet stored, or is between attempts. A request this transport did not
// publish is not reported. One consumer lookup is made per tool among
// them. A lookup that fails fails the call: guessing would show queued
// work as running, or the reverse.
func (t *HostTransport) Waiting(ctx context.Context, requestIDs []string) (map[string]bool, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	delivered := make(map[string]uint64)
	out := make(map[string]bool)
	for _, id := range requestIDs {
		p, ok := t.seqs.get(id)
		switch {
		case !ok || p.heard:
			continue
		case p.seq == 0:
			out[id] = true
			continue
		}
		last, known := delivered[p.tool]
		if !known {
			c, err := t.js.Consumer(ctx, fabric.StreamInvoke, fabric.ConsumerName(p.tool))
			switch {
			case err == nil:
				last = c.CachedInfo().Delivered.Stream
			case errors.Is(err, jetstream.ErrConsumerNotFound):
				// No pool has ever bound the tool: nothing was delivered.
			default:
				return nil, fmt.Errorf("hostnats: consumer of %q: %w", p.tool, err)
			}
			delivered[p.tool] = last
		}
		if p.seq > last {
			out[id] = true
		}
	}
	return out, nil
}
