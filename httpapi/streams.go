package httpapi

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/splashfabric/splashfabric/httpapi/apitoken"
)

// streamLimiter counts the event streams open on a host and per token.
// Any request goroutine may call it.
type streamLimiter struct {
	max, perToken int

	// mu guards the counts; it is held only to update them.
	mu      sync.Mutex
	total   int
	byToken map[[sha256.Size]byte]int
}

func newStreamLimiter(max, perToken int) *streamLimiter {
	return &streamLimiter{max: max, perToken: perToken, byToken: make(map[[sha256.Size]byte]int)}
}

// acquire takes a stream slot for the owner of r's token, or refuses
// with ErrTokenStreamLimit or ErrStreamLimit and takes nothing. Without
// authentication, a request is keyed by whatever bearer it sends (by its
// digest, so the table holds no credential).
func (l *streamLimiter) acquire(r *http.Request) (release func(), err error) {
	var key [sha256.Size]byte
	if t, ok := apitoken.FromContext(r.Context()); ok && t.Name() != AnonymousTokenName {
		key = sha256.Sum256([]byte("owner\x00" + t.Owner()))
	} else {
		token, _ := bearer(r.Header.Get("Authorization"))
		key = sha256.Sum256([]byte(token))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.byToken[key] >= l.perToken:
		return nil, &QuotaError{Err: ErrTokenStreamLimit, After: time.Second, Detail: fmt.Sprintf("this token's owner holds %d, the most one owner may", l.perToken)}
	case l.total >= l.max:
		return nil, fmt.Errorf("%w: the host serves %d, the most it serves at once", ErrStreamLimit, l.max)
	}
	l.total++
	l.byToken[key]++
	var once sync.Once
	return func() { once.Do(func() { l.release(key) }) }, nil
}

func (l *streamLimiter) release(key [sha256.Size]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.byToken[key]--; l.byToken[key] == 0 {
		delete(l.byToken, key)
	}
}
