package host

import (
	"slices"
	"sync"
	"time"
)

// Slices of script run one at a time in the process: the memory meter
// charges the heap's growth to the slice that runs (script_memory.go).
// Who runs next is the scheduler's choice, and it is fair in two ways:
//
//   - A slice runs for at most a quantum while others wait; then it
//     pauses at its next yield point (script_yield.go) and waits for its
//     turn again, its JavaScript stack kept. Its execution budget counts
//     only the time it ran, across all its quanta.
//   - Turns go to tenants (a session's Config.Owner: the API token's
//     owner) by the time their slices ran, least first, as Linux's CFS
//     gives CPU to tasks; within a tenant, to its slices in the order they
//     asked. A tenant that has been idle comes back at the least time of
//     those waiting, with no credit saved up. A tenant whose sessions run
//     for microseconds waits at most the running slice's quantum, however
//     many slices another tenant keeps busy. Sessions replayed from their
//     ledgers (SetBackground) are one tenant whose time counts eight
//     times over: live work comes first without starving them.
//
// A slice that pauses keeps its realm (the goja vm its session's objects
// live in; script_realm.go), whose stack holds its frames. Another
// session of that realm waits until the slice ends; a new session picks
// a realm nobody holds, or gets one of its own. Realms are kept per
// tenant, so a tenant's long slices hold up only its own sessions.
//
// A runtime's owner chooses how it waits (SetTurns): a goroutine of its
// own (a submission's first step, a replay) blocks for its turns and
// pauses in place; the host loop, which owns every other runtime, never
// blocks: a slice that cannot run at once, or that used its quantum,
// returns to it as running (EvalResult.Running), and the loop continues
// it (Continue) when its turn comes on a Turns.

// DefaultQuantum is how long one slice of script runs while others wait
// before it gives way.
const DefaultQuantum = 10 * time.Millisecond

// backgroundTenant holds the slices of sessions being replayed.
const backgroundTenant = "\x00background"

// backgroundWeight is how many times over a background slice's time
// counts against its tenant.
const backgroundWeight = 8

// scheduler is the process's gate for script slices: at most one ticket
// holds it at a time. Every field is guarded by mu.
type scheduler struct {
	mu sync.Mutex
	// quantum is the longest a slice runs while others wait.
	quantum time.Duration
	// holder holds the gate (its slice runs, or its owner was granted the
	// gate and has not continued it yet); since is when it got it.
	holder *ticket
	since  time.Time
	// tenants are those with a ticket waiting or holding the gate.
	tenants map[string]*tenant
	// urgent tickets (an abort) go before every tenant's.
	urgent []*ticket
	// waiting counts the tickets queued in tenants and urgent; blocked
	// those waiting on a realm another slice holds.
	waiting, blocked int
	// vmin is the least time of the tenants last seen waiting: where a
	// tenant that was idle starts again.
	vmin time.Duration
	// realms holds the realms of each realm key, the one new sessions
	// take first at the front (see realmFor).
	realms map[string][]*realm
}

// sharedSched is the process's scheduler.
var sharedSched = &scheduler{quantum: DefaultQuantum, tenants: map[string]*tenant{}, realms: map[string][]*realm{}}

// tenant is one owner's queue of tickets and the time its slices ran.
type tenant struct {
	name   string
	weight time.Duration
	vtime  time.Duration
	// queue holds its waiting tickets: the first fresh of them are
	// slices that have not run yet, in the order they came, then the
	// slices that paused, in the order they paused. A new slice goes
	// before the tenant's paused ones, so a short script of a tenant
	// whose other scripts burn waits for one quantum, not one each.
	queue []*ticket
	fresh int
	// holding: one of its tickets holds the gate.
	holding bool
}

// ticket is one runtime's request for the gate. A runtime has one, reused
// for every slice.
type ticket struct {
	e *scriptEngine
	// tenant is the tenant's name, set as the ticket is queued.
	tenant string
	// fresh: its slice has not run yet (it waits for its first turn).
	fresh bool
	// wake is closed-over by a blocking waiter: a token arrives when the
	// gate is granted.
	wake chan struct{}
	// turns, when set, is told of the grant instead (tag names the
	// runtime there).
	turns *Turns
	tag   any
	// at is where it waits; granted: it holds the gate; begun: its
	// quantum began (an owner with Turns continued it).
	at             waitingAt
	granted, begun bool
}

// waitingAt is where a ticket waits.
type waitingAt int

const (
	notWaiting waitingAt = iota
	inTenant
	inUrgent
	onRealm
)

func (s *scheduler) tenantFor(t *ticket) *tenant {
	name := t.e.r.owner
	if t.e.r.background {
		name = backgroundTenant
	}
	t.tenant = name
	tn := s.tenants[name]
	switch {
	case tn == nil:
		tn = &tenant{name: name, weight: 1, vtime: s.vmin}
		if name == backgroundTenant {
			tn.weight = backgroundWeight
		}
		s.tenants[name] = tn
	case len(tn.queue) == 0 && !tn.holding:
		// Back from idling: no credit for the time it did not run.
		tn.vtime = max(tn.vtime, s.vmin)
	}
	return tn
}

// eligible reports whether t's slice may run now: its session's realm,
// if it has one, is held by no other slice. mu is held.
func eligible(t *ticket) bool {
	rl := t.e.realm
	return rl == nil || rl.holder == nil || rl.holder == t.e
}

// tryAcquire takes the gate for t at once if it is free and nobody
// waits, and reports whether it did.
func (s *scheduler) tryAcquire(t *ticket) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holder != nil || s.waiting > 0 || !eligible(t) {
		return false
	}
	s.tenantFor(t)
	s.grant(t, false)
	t.begun = true
	return true
}

// begin reports whether t still holds the gate as its owner continues
// it, and marks its quantum begun: from then on it cannot be revoked.
func (s *scheduler) begin(t *ticket) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.begun = t.granted
	return t.granted
}

// acquire waits for the gate for t, in its tenant's turn.
func (s *scheduler) acquire(t *ticket) {
	if t.wake == nil {
		t.wake = make(chan struct{}, 1)
	}
	s.mu.Lock()
	s.enqueue(t, false)
	s.mu.Unlock()
	<-t.wake
}

// acquireUrgent waits for the gate for t ahead of every tenant: what an
// abort needs to unwind a paused slice.
func (s *scheduler) acquireUrgent(t *ticket) {
	if t.wake == nil {
		t.wake = make(chan struct{}, 1)
	}
	s.mu.Lock()
	turns := t.turns
	t.turns = nil
	s.enqueue(t, true)
	s.mu.Unlock()
	<-t.wake
	s.mu.Lock()
	t.turns = turns
	s.mu.Unlock()
}

// queueTurn asks for the gate for t; the grant is told on t.turns.
func (s *scheduler) queueTurn(t *ticket) {
	s.mu.Lock()
	s.enqueue(t, false)
	s.mu.Unlock()
}

// enqueue queues t and grants the gate if it is free; mu is held.
func (s *scheduler) enqueue(t *ticket, urgent bool) {
	s.waiting++
	if urgent && s.holder != nil && s.holder.turns != nil && !s.holder.begun {
		// Granted to an owner that has not continued it: that owner
		// may be the one waiting here. It is put back first in line.
		s.revoke(s.holder)
	}
	if urgent {
		t.at = inUrgent
		s.urgent = append(s.urgent, t)
	} else {
		t.at = inTenant
		s.tenantFor(t).push(t)
	}
	if s.holder == nil {
		s.next()
	}
}

// revoke takes the gate back from t, granted but not begun, and queues
// it again ahead of its tenant's others of its kind; mu is held.
func (s *scheduler) revoke(t *ticket) {
	tn := s.tenants[t.tenant]
	t.granted = false
	s.holder = nil
	tn.holding = false
	if t.fresh {
		tn.queue = slices.Insert(tn.queue, 0, t)
		tn.fresh++
	} else {
		tn.queue = slices.Insert(tn.queue, tn.fresh, t)
	}
	t.at = inTenant
	s.waiting++
}

// contended reports whether another ticket waits for the gate.
func (s *scheduler) contended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting > 0
}

// release gives the gate up at the end of t's quantum, charging its
// tenant for the time it held it, and grants it to the next ticket.
func (s *scheduler) release(t *ticket) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(t)
}

func (s *scheduler) releaseLocked(t *ticket) {
	if s.holder != t {
		return
	}
	if tn := s.tenants[t.tenant]; tn != nil {
		tn.vtime += time.Since(s.since) * tn.weight
		tn.holding = false
		s.drop(tn)
	}
	t.granted, t.begun = false, false
	s.holder = nil
	s.next()
}

// finish ends t's slice: its realm is free again for the sessions that
// wait on it, and the gate goes to the next ticket.
func (s *scheduler) finish(t *ticket, rl *realm) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rl != nil && rl.holder == t.e {
		rl.holder = nil
		for i := len(rl.waiters) - 1; i >= 0; i-- {
			// Back at the front of their tenants' queues, in the
			// order they came: they waited.
			w := rl.waiters[i]
			tn := s.tenantFor(w)
			tn.queue = append([]*ticket{w}, tn.queue...)
			if w.fresh {
				tn.fresh++
			}
			w.at = inTenant
			s.blocked--
			s.waiting++
		}
		rl.waiters = nil
		s.prune(rl)
	}
	s.releaseLocked(t)
	if s.holder == nil {
		s.next()
	}
}

// cancel withdraws t: out of whatever queue holds it, and, if it was
// granted the gate, the gate goes to the next ticket uncharged.
func (s *scheduler) cancel(t *ticket) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch t.at {
	case inTenant:
		s.waiting--
		if tn := s.tenants[t.tenant]; tn != nil {
			tn.remove(t)
			s.drop(tn)
		}
	case inUrgent:
		s.waiting--
		s.urgent = removeTicket(s.urgent, t)
	case onRealm:
		s.blocked--
		if rl := t.e.realm; rl != nil {
			rl.waiters = removeTicket(rl.waiters, t)
		}
	}
	t.at = notWaiting
	if s.holder == t {
		if tn := s.tenants[t.tenant]; tn != nil {
			tn.holding = false
			s.drop(tn)
		}
		t.granted, t.begun = false, false
		s.holder = nil
		s.next()
	}
}

// push queues t: a fresh one after the tenant's other fresh ones, a
// paused one last.
func (tn *tenant) push(t *ticket) {
	if !t.fresh {
		tn.queue = append(tn.queue, t)
		return
	}
	tn.queue = slices.Insert(tn.queue, tn.fresh, t)
	tn.fresh++
}

// pop takes the tenant's first ticket.
func (tn *tenant) pop() *ticket {
	t := tn.queue[0]
	tn.queue[0] = nil
	tn.queue = tn.queue[1:]
	if tn.fresh > 0 {
		tn.fresh--
	}
	return t
}

// remove takes t out of the tenant's queue.
func (tn *tenant) remove(t *ticket) {
	if i := slices.Index(tn.queue, t); i >= 0 {
		tn.queue = slices.Delete(tn.queue, i, i+1)
		if i < tn.fresh {
			tn.fresh--
		}
	}
}

func removeTicket(q []*ticket, t *ticket) []*ticket {
	for i, x := range q {
		if x == t {
			return append(q[:i], q[i+1:]...)
		}
	}
	return q
}

// drop forgets a tenant with nothing queued or running whose time is no
// more than vmin: it would start again at vmin anyway. One that ran more
// is kept, so that pausing between two quanta saves it nothing. mu is
// held.
func (s *scheduler) drop(tn *tenant) {
	if len(tn.queue) == 0 && !tn.holding && tn.vtime <= s.vmin {
		delete(s.tenants, tn.name)
	}
}

// next grants the free gate to the urgent ticket first, else to the
// first eligible ticket of the tenant with the least time. A ticket whose
// realm another slice holds waits on that realm instead. mu is held.
func (s *scheduler) next() {
	if len(s.urgent) > 0 {
		t := s.urgent[0]
		s.urgent = s.urgent[1:]
		s.waiting--
		t.at = notWaiting
		s.tenantFor(t)
		s.grant(t, true)
		return
	}
	for s.waiting > 0 {
		var best *tenant
		for _, tn := range s.tenants {
			if len(tn.queue) > 0 && (best == nil || tn.vtime < best.vtime) {
				best = tn
			}
		}
		if best == nil {
			return
		}
		s.vmin = max(s.vmin, best.vtime)
		t := best.pop()
		s.waiting--
		if !eligible(t) {
			t.e.realm.waiters = append(t.e.realm.waiters, t)
			t.at = onRealm
			s.blocked++
			continue
		}
		t.at = notWaiting
		s.grant(t, true)
		return
	}
}

// grant hands the gate to t, telling its waiter if notify; mu is held.
func (s *scheduler) grant(t *ticket, notify bool) {
	s.holder, s.since = t, time.Now()
	t.granted = true
	if tn := s.tenants[t.tenant]; tn != nil {
		tn.holding = true
	}
	if t.turns == nil {
		// A waiter of its own goroutine takes its turn at once.
		t.begun = true
	}
	switch {
	case !notify:
	case t.turns != nil:
		t.turns.push(t.tag)
	case t.wake != nil:
		t.wake <- struct{}{}
	}
}

// Turns tells a runtime's owner that the runtime's turn to run script
// came (see Runtime.SetTurns): it then calls the runtime's Continue. The
// gate is kept for the runtime until it does, so an owner must continue
// (or abort) every runtime whose turn it is told, and promptly. Any
// goroutine may call its methods.
type Turns struct {
	mu     sync.Mutex
	due    []any
	signal chan struct{}
	// pool runs the slices of its runtimes that run aside.
	pool asidePool
}

// NewTurns returns an empty Turns.
func NewTurns() *Turns { return &Turns{signal: make(chan struct{}, 1)} }

// Ready has a value whenever Take has something to return.
func (t *Turns) Ready() <-chan struct{} { return t.signal }

// Take returns the tags (see Runtime.SetTurns) of the runtimes whose turn
// came since the last Take, in order.
func (t *Turns) Take() []any {
	t.mu.Lock()
	defer t.mu.Unlock()
	due := t.due
	t.due = nil
	return due
}

// Close lets go of the goroutines the Turns keeps for its runtimes'
// slices; an owner closes it once it runs no more script (its runtimes
// done or aborted). A slice run after it gets a goroutine of its own.
func (t *Turns) Close() { t.pool.close() }

func (t *Turns) push(tag any) {
	t.mu.Lock()
	t.due = append(t.due, tag)
	t.mu.Unlock()
	select {
	case t.signal <- struct{}{}:
	default:
	}
}
