package httpapi

import (
	"fmt"
	"sync"
	"time"
)

// Quotas keep one client to a fair share of a host. Each is kept per
// token owner (apitoken.Token.Owner): the sessions a client's tokens
// submit are its owner's, so an owner's tokens share its quotas, and a
// client cannot get more by minting tokens. Over a quota a request is
// refused with 429, Retry-After and a code naming the quota:
//
//	session_quota            sessions waiting at once (hostloop.Limits.MaxSessionsPerOwner)
//	submission_rate          submissions a second (GateConfig.SubmitRate, SubmitBurst)
//	token_stream_limit       event streams open at once (Config.MaxStreamsPerToken)
//	client_connection_limit  connections open at once, per client address (ServerConfig.MaxConnsPerClient)
//
// Connections are counted by address, not owner: a connection carries no
// token until its first request, and it is the connection slot that a
// client holding idle connections takes from the others.

// Defaults of the submission rate of GateConfig.
const (
	// DefaultSubmitRate is how many submissions a second one owner may
	// make, sustained: several times what one host runs of scripts that
	// wait on tools, a fraction of what it admits.
	DefaultSubmitRate = 200
	// DefaultSubmitBurst is how many it may make at once.
	DefaultSubmitBurst = 400
)

// rateLimiter is a token bucket per owner. Any goroutine may call it.
type rateLimiter struct {
	rate  float64 // tokens a second; 0: unlimited
	burst float64
	now   func() time.Time

	// mu guards buckets, which holds an owner's bucket only while it is
	// not full: a full bucket is the same as none.
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newRateLimiter(rate float64, burst int) *rateLimiter {
	return &rateLimiter{rate: rate, burst: float64(max(burst, 1)), now: time.Now, buckets: make(map[string]*bucket)}
}

// take spends one of owner's tokens, or refuses with a *QuotaError saying
// when one will be there.
func (l *rateLimiter) take(owner string) error {
	if l == nil || l.rate <= 0 {
		return nil
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[owner]
	if b == nil {
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[owner] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	if b.tokens < 1 {
		after := time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
		return &QuotaError{Err: ErrSubmissionRate, After: after,
			Detail: fmt.Sprintf("%q submits more than %g a second (bursts of %g)", owner, l.rate, l.burst)}
	}
	b.tokens--
	l.sweep(now)
	return nil
}

// sweep lets go of the buckets that have filled up again, once there are
// many; mu is held.
func (l *rateLimiter) sweep(now time.Time) {
	if len(l.buckets) < 1024 {
		return
	}
	for owner, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, owner)
		}
	}
}
