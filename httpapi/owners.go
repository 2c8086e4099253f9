package httpapi

import (
	"sync"

	"github.com/splashfabric/splashfabric/hostloop"
)

// DefaultOwnedSessions is how many sessions a Gate remembers the owner
// of, newest kept: far more than a loop keeps in memory, at some 100
// bytes each.
const DefaultOwnedSessions = 1 << 16

// owners remembers the owner of the token that submitted each session:
// a session it does not know (submitted to another process, or forgotten
// as newer ones came) has its owner read from its status (the ledger and
// the archive keep it), and remembered. Any request goroutine may call it.
type owners struct {
	max int

	// mu guards the fields below.
	mu sync.Mutex
	of map[hostloop.SessionID]string
	// order is session ids oldest first, for letting the oldest go.
	order []hostloop.SessionID
}

func newOwners(max int) *owners {
	if max <= 0 {
		max = DefaultOwnedSessions
	}
	return &owners{max: max, of: make(map[hostloop.SessionID]string)}
}

// add records id as owner's.
func (o *owners) add(id hostloop.SessionID, owner string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.of[id]; ok {
		o.of[id] = owner
		return
	}
	o.of[id] = owner
	o.order = append(o.order, id)
	if over := len(o.order) - o.max; over > 0 {
		for _, old := range o.order[:over] {
			delete(o.of, old)
		}
		// Cut from the front rather than shifting every id left (see
		// SessionIndex.entry).
		clear(o.order[:over])
		o.order = o.order[over:]
	}
}

// owner returns id's owner; false when it is not known.
func (o *owners) owner(id hostloop.SessionID) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.of[id]
	return t, ok
}
