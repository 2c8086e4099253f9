package fabric

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// A claimed operation is either still in SPLASH_INVOKE, waiting for a
// worker of its pool, or was handed to one. The host hears nothing from a
// worker until its first chunk or its answer, so the difference is read
// from JetStream instead: a pool consumer delivers in stream order, so an
// invocation stored at a sequence past the consumer's last delivered one
// has never left the stream. Only the sequence of each live attempt is
// kept; the question costs one consumer lookup per tool, and only when
// someone asks (GET /v1/operations), never per operation on the loop.

// publishedSeqs remembers the stream sequence of each request's latest
// published attempt, until its terminal frame arrives or the loop forgets
// the request. It has its own mutex: the ack watcher writes it, the events
// consumer and Forget delete from it, and Waiting reads it from any
// goroutine.
type publishedSeqs struct {
	mu   sync.Mutex
	seqs map[string]publishedSeq
	// ended holds the attempt of a request whose terminal frame arrived
	// before its publish was acknowledged (a fast worker, a busy ack
	// watcher), so the late acknowledgement does not bring it back.
	ended map[string]uint32
}

type publishedSeq struct {
	tool    string
	attempt uint32
	seq     uint64
	// heard is set once a worker sent a frame for this attempt: it holds
	// the call whatever the consumer says.
	heard bool
}

// maxEnded bounds publishedSeqs.ended.
const maxEnded = 4096

func newPublishedSeqs() *publishedSeqs {
	return &publishedSeqs{seqs: make(map[string]publishedSeq), ended: make(map[string]uint32)}
}

// stored records that attempt of requestID was stored at seq.
func (p *publishedSeqs) stored(requestID, tool string, attempt uint32, seq uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.ended[requestID]; ok && attempt <= a {
		delete(p.ended, requestID)
		return
	}
	if cur, ok := p.seqs[requestID]; ok && cur.attempt > attempt {
		return
	}
	p.seqs[requestID] = publishedSeq{tool: tool, attempt: attempt, seq: seq}
}

// heard records a worker frame for requestID; attempt 0 (a chunk) means
// the current attempt.
func (p *publishedSeqs) heard(requestID string, attempt uint32, terminal bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur, ok := p.seqs[requestID]
	if ok && attempt != 0 && cur.attempt > attempt {
		return // a stale frame of an earlier attempt
	}
	if terminal {
		delete(p.seqs, requestID)
		if !ok || cur.attempt < attempt {
			// Also reached by answers no publish of this process will
			// follow (a late answer after a deadline, an earlier
			// process's leftovers), so the map is bounded: past it, a
			// lost race leaves one stale sequence behind, which only
			// makes a finished request look delivered.
			if len(p.ended) >= maxEnded {
				clear(p.ended)
			}
			p.ended[requestID] = attempt
		}
		return
	}
	if ok {
		cur.heard = true
		p.seqs[requestID] = cur
	}
}

func (p *publishedSeqs) forget(requestID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.seqs, requestID)
	delete(p.ended, requestID)
}

func (p *publishedSeqs) get(requestID string) (publishedSeq, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.seqs[requestID]
	return s, ok
}

// Waiting reports which of requestIDs no worker has been handed yet:
// the latest attempt is still in its tool's stream, or was published and
// not yet stored, or is between attempts (a request the transport holds no
// sequence for). One consumer lookup is made per tool among them. A lookup
// that fails fails the call: guessing would show queued work as running,
// or the reverse.
func (t *HostTransport) Waiting(ctx context.Context, requestIDs []string) (map[string]bool, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	delivered := make(map[string]uint64)
	out := make(map[string]bool)
	for _, id := range requestIDs {
		p, ok := t.seqs.get(id)
		switch {
		case !ok:
			out[id] = true
			continue
		case p.heard:
			continue
		}
		last, known := delivered[p.tool]
		if !known {
			c, err := t.js.Consumer(ctx, StreamInvoke, ConsumerName(p.tool))
			switch {
			case err == nil:
				last = c.CachedInfo().Delivered.Stream
			case errors.Is(err, jetstream.ErrConsumerNotFound):
				// No pool has ever bound the tool: nothing was delivered.
			default:
				return nil, fmt.Errorf("fabric: consumer of %q: %w", p.tool, err)
			}
			delivered[p.tool] = last
		}
		if p.seq > last {
			out[id] = true
		}
	}
	return out, nil
}
