package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
)

// Defaults for the zero values of BroadcasterConfig.
const (
	// DefaultSubscriberBuffer is how many events a subscriber's channel
	// holds; beyond it, events wait in its queue (see DefaultMaxQueued).
	DefaultSubscriberBuffer = 256
	// DefaultMaxQueued is how many events may wait for a subscriber
	// beyond its channel before it is dropped as lagged: more than one
	// step of the largest session makes at once (every operation of a
	// 10,000-call script changing, with its audit), so a reader that
	// keeps up is never dropped for a burst.
	DefaultMaxQueued = 1 << 16
	// DefaultBacklog is how many recent events of a session are kept for
	// replay to a subscriber that arrives late, such as a client that
	// subscribes right after submitting.
	DefaultBacklog = 256
	// DefaultKeepFinished is how many finished sessions keep their
	// backlog.
	DefaultKeepFinished = 64
)

// EventKind tells what an Event carries. Its String is the event name on
// the wire.
type EventKind int

// Event kinds.
const (
	// EventState carries a session's new status.
	EventState EventKind = iota + 1
	// EventChunk carries a released stream chunk.
	EventChunk
	// EventAudit carries one audit event.
	EventAudit
	// EventLagged is the last event of a subscriber that fell too far
	// behind; its channel is closed after it.
	EventLagged
	// EventOperation carries one operation whose status changed.
	EventOperation
)

// String returns "state", "chunk", "audit", "operation" or "lagged".
func (k EventKind) String() string {
	switch k {
	case EventState:
		return "state"
	case EventChunk:
		return "chunk"
	case EventAudit:
		return "audit"
	case EventLagged:
		return "lagged"
	case EventOperation:
		return "operation"
	}
	return "unknown"
}

// Event is one notification about a session.
type Event struct {
	Kind    EventKind
	Session hostloop.SessionID
	// Seq numbers a session's events as this broadcaster published
	// them, from 1; an event stream sends it in each event's id, so a
	// client that reconnects says where it stopped (Last-Event-ID).
	Seq uint64
	// Status is set for EventState.
	Status hostloop.SessionStatus
	// Chunk is set for EventChunk.
	Chunk host.ExternalToolStreamChunk
	// Audit is set for EventAudit.
	Audit host.AuditEvent
	// Operation is set for EventOperation.
	Operation hostloop.OperationStatus
}

// Terminal reports whether e is a session's final state.
func (e Event) Terminal() bool { return e.Kind == EventState && terminal(e.Status.State) }

// BroadcasterConfig sizes a Broadcaster's buffers.
type BroadcasterConfig struct {
	// Buffer is each subscriber's channel buffer; zero picks
	// DefaultSubscriberBuffer.
	Buffer int
	// MaxQueued is how many events may wait beyond a subscriber's
	// channel before it is dropped as lagged; zero picks
	// DefaultMaxQueued.
	MaxQueued int
	// Backlog is how many recent events per session are replayed to a
	// new subscriber; zero picks DefaultBacklog, negative keeps none.
	Backlog int
	// KeepFinished is how many finished sessions keep their backlog;
	// zero picks DefaultKeepFinished.
	KeepFinished int
}

// Broadcaster is a hostloop.Observer that fans each session's events out to
// its subscribers. The loop calls it on its own goroutine, so nothing here
// blocks: an event goes into a subscriber's channel when there is room,
// else into its queue, which a goroutine of the subscriber's own moves
// into the channel as the reader takes them (one step of a script can
// change thousands of operations at once); a subscriber whose queue
// passes MaxQueued gets a final EventLagged and is dropped.
type Broadcaster struct {
	cfg   BroadcasterConfig
	epoch string

	// mu guards everything below; it is held only for map updates and
	// non-blocking sends.
	mu       sync.Mutex
	topics   map[hostloop.SessionID]*topic
	finished []hostloop.SessionID // finished sessions, oldest first
	closed   bool
}

// topic is one session's subscribers and recent events.
type topic struct {
	subs map[*subscriber]struct{}
	// ends are told the session's final state (Done).
	ends []chan hostloop.SessionStatus
	// backlog and the subscribers' channels share each event: one
	// pointer a slot rather than a copy, since a buffer of a few hundred
	// slots is allocated for every stream opened.
	backlog []*Event
	// last is the last state sent, so an unchanged status (every step
	// reports one) is not repeated.
	last *hostloop.SessionStatus
	done bool
	seq  uint64
}

// subscriber is one subscription. Under the broadcaster's mu: queue,
// pumping, closing. The pump goroutine is the only sender on ch while
// pumping; it closes ch when closing, once queue is empty.
type subscriber struct {
	ch chan *Event
	// queue holds the events the channel had no room for, oldest first.
	queue []*Event
	// pumping: a pump goroutine moves queue into ch; closing: ch is to
	// be closed once the queue is out; gone ends the pump early (the
	// subscription was cancelled).
	pumping, closing bool
	gone             chan struct{}
	stop             sync.Once
}

var _ hostloop.Observer = (*Broadcaster)(nil)

// NewBroadcaster returns an empty Broadcaster.
func NewBroadcaster(cfg BroadcasterConfig) *Broadcaster {
	if cfg.Buffer <= 0 {
		cfg.Buffer = DefaultSubscriberBuffer
	}
	if cfg.Backlog == 0 {
		cfg.Backlog = DefaultBacklog
	}
	if cfg.KeepFinished <= 0 {
		cfg.KeepFinished = DefaultKeepFinished
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = DefaultMaxQueued
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	return &Broadcaster{cfg: cfg, epoch: hex.EncodeToString(r[:]), topics: make(map[hostloop.SessionID]*topic)}
}

// Subscribe returns a channel of session's events: first the retained
// backlog, then live events. The channel is closed after the session's
// terminal state event, after an EventLagged, on cancel, or on Close.
// cancel may be called more than once. An event is shared by every
// subscriber and the backlog: read it, never change it.
func (b *Broadcaster) Subscribe(session hostloop.SessionID) (<-chan *Event, func()) {
	ch, cancel, _ := b.SubscribeAfter(session, 0)
	return ch, cancel
}

// SubscribeAfter is Subscribe for a client that already has the session's
// events up to Seq after: the backlog starts past it. gap reports that
// events after it are no longer retained, so the client missed some.
func (b *Broadcaster) SubscribeAfter(session hostloop.SessionID, after uint64) (events <-chan *Event, cancel func(), gap bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.topic(session)
	// One slot beyond the buffer is kept for the lagged notice.
	sub := &subscriber{ch: make(chan *Event, max(b.cfg.Buffer, len(t.backlog))+1), gone: make(chan struct{})}
	gap = after < t.seq && (len(t.backlog) == 0 || t.backlog[0].Seq > after+1)
	for _, ev := range t.backlog {
		if ev.Seq > after {
			sub.ch <- ev
		}
	}
	if t.done || b.closed {
		close(sub.ch)
		return sub.ch, func() {}, gap
	}
	t.subs[sub] = struct{}{}
	return sub.ch, func() { b.unsubscribe(session, sub) }, gap
}

// Epoch names this broadcaster's numbering of events: an event id is
// "<epoch>.<seq>", so an id from another process (or another host) is
// told apart from one of this.
func (b *Broadcaster) Epoch() string { return b.epoch }

// Close ends every subscription without a terminal event, so streams end
// when the server shuts down. Events observed afterwards are dropped.
func (b *Broadcaster) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for _, t := range b.topics {
		for sub := range t.subs {
			sub.end(true)
		}
		t.subs = nil
		for _, end := range t.ends {
			close(end)
		}
		t.ends = nil
	}
}

// Done returns a channel that receives session's final state once, then
// is closed; it is closed without a value if the broadcaster closes, or
// on cancel. A state already final when Done is called is not sent: the
// caller asks for the state after subscribing, as with Subscribe. It
// cannot fall behind, whatever the session's other events: what a
// submission with wait_ms waits on.
func (b *Broadcaster) Done(session hostloop.SessionID) (<-chan hostloop.SessionStatus, func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := make(chan hostloop.SessionStatus, 1)
	t := b.topic(session)
	if t.done || b.closed {
		close(ch)
		return ch, func() {}
	}
	t.ends = append(t.ends, ch)
	return ch, func() { b.undo(session, ch) }
}

func (b *Broadcaster) undo(session hostloop.SessionID, ch chan hostloop.SessionStatus) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.topics[session]
	if t == nil {
		return
	}
	if i := slices.Index(t.ends, ch); i >= 0 {
		t.ends = slices.Delete(t.ends, i, i+1)
		close(ch)
	}
	if len(t.subs) == 0 && len(t.ends) == 0 && len(t.backlog) == 0 && !t.done {
		delete(b.topics, session)
	}
}

func (b *Broadcaster) unsubscribe(session hostloop.SessionID, sub *subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if sub.pumping {
		// The reader left: what waits for it goes, and so does the
		// pump, even if the subscription ended already.
		sub.drop()
	}
	t := b.topics[session]
	if t == nil {
		return
	}
	if _, ok := t.subs[sub]; !ok {
		return
	}
	delete(t.subs, sub)
	sub.end(true)
	// A topic made only by this subscription (say, for an id that names
	// no session) leaves nothing behind.
	if len(t.subs) == 0 && len(t.ends) == 0 && len(t.backlog) == 0 && !t.done {
		delete(b.topics, session)
	}
}

// end closes sub's channel, at once or, while its pump runs, once the
// pump has sent what is queued (drop: not even that, the reader left);
// b.mu is held.
func (sub *subscriber) end(drop bool) {
	if !sub.pumping {
		close(sub.ch)
		return
	}
	sub.closing = true
	if drop {
		sub.drop()
	}
}

// drop empties a pumping sub's queue and stops its pump; b.mu is held.
func (sub *subscriber) drop() {
	sub.queue = nil
	sub.closing = true
	sub.stop.Do(func() { close(sub.gone) })
}

// offer hands ev to sub: into its channel when the channel has room and
// nothing waits before it, else into its queue, which a pump goroutine
// moves into the channel. It reports false when the queue is full: the
// subscriber is then lagged. b.mu is held.
func (b *Broadcaster) offer(sub *subscriber, ev *Event) bool {
	if !sub.pumping && len(sub.ch) < cap(sub.ch)-1 {
		sub.ch <- ev
		return true
	}
	if len(sub.queue) >= b.cfg.MaxQueued {
		return false
	}
	sub.queue = append(sub.queue, ev)
	if !sub.pumping {
		sub.pumping = true
		go b.pump(sub)
	}
	return true
}

// pump moves sub's queue into its channel as the reader takes events,
// and closes the channel if the subscription ended meanwhile.
func (b *Broadcaster) pump(sub *subscriber) {
	for {
		b.mu.Lock()
		if len(sub.queue) == 0 {
			sub.pumping = false
			if sub.closing {
				close(sub.ch)
			}
			b.mu.Unlock()
			return
		}
		ev := sub.queue[0]
		sub.queue[0] = nil
		sub.queue = sub.queue[1:]
		b.mu.Unlock()
		select {
		case sub.ch <- ev:
		case <-sub.gone:
			b.mu.Lock()
			sub.pumping = false
			close(sub.ch)
			b.mu.Unlock()
			return
		}
	}
}

// topic returns session's topic, creating it; b.mu must be held.
func (b *Broadcaster) topic(session hostloop.SessionID) *topic {
	t := b.topics[session]
	if t == nil {
		t = &topic{subs: make(map[*subscriber]struct{})}
		b.topics[session] = t
	}
	return t
}

// SessionChanged implements hostloop.Observer.
func (b *Broadcaster) SessionChanged(s hostloop.SessionStatus) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	t := b.topic(s.ID)
	if t.done || (t.last != nil && sameStatus(*t.last, s)) {
		return
	}
	t.last = &s
	ev := Event{Kind: EventState, Session: s.ID, Status: s}
	b.publish(t, ev)
	if ev.Terminal() {
		t.done = true
		for sub := range t.subs {
			sub.end(false)
		}
		t.subs = nil
		for _, end := range t.ends {
			end <- s
			close(end)
		}
		t.ends = nil
		b.finished = append(b.finished, s.ID)
		for len(b.finished) > b.cfg.KeepFinished {
			delete(b.topics, b.finished[0])
			b.finished = b.finished[1:]
		}
	}
}

// OperationChanged implements hostloop.Observer: one operation event, so a
// session with ten thousand operations costs its stream one small event
// per change rather than its whole list.
func (b *Broadcaster) OperationChanged(session hostloop.SessionID, op hostloop.OperationStatus) {
	b.event(Event{Kind: EventOperation, Session: session, Operation: op})
}

// Chunk implements hostloop.Observer.
func (b *Broadcaster) Chunk(session hostloop.SessionID, c host.ExternalToolStreamChunk) {
	b.event(Event{Kind: EventChunk, Session: session, Chunk: c})
}

// Audit implements hostloop.Observer.
func (b *Broadcaster) Audit(session hostloop.SessionID, events []host.AuditEvent) {
	for _, e := range events {
		b.event(Event{Kind: EventAudit, Session: session, Audit: e})
	}
}

// Dispatched implements hostloop.Observer; dispatches show in state events.
func (b *Broadcaster) Dispatched(hostloop.SessionID, host.ExternalInvocation) {}

// Rejected implements hostloop.Observer; rejections belong to no session.
func (b *Broadcaster) Rejected(string, error) {}

func (b *Broadcaster) event(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	t := b.topic(ev.Session)
	if t.done {
		// After the terminal state only late audit can arrive; the
		// audit endpoint has it, the closed streams do not.
		return
	}
	b.publish(t, ev)
}

// publish records ev in t's backlog and offers it to every subscriber;
// b.mu must be held.
func (b *Broadcaster) publish(t *topic, e Event) {
	t.seq++
	e.Seq = t.seq
	ev := &e
	if b.cfg.Backlog > 0 {
		if len(t.backlog) >= b.cfg.Backlog {
			t.backlog = slices.Delete(t.backlog, 0, len(t.backlog)-b.cfg.Backlog+1)
		}
		t.backlog = append(t.backlog, ev)
	}
	for sub := range t.subs {
		if !b.offer(sub, ev) {
			// The queue is full: the lagged notice goes last, after
			// what the reader has yet to take.
			sub.queue = append(sub.queue, &Event{Kind: EventLagged, Session: ev.Session})
			sub.end(false)
			delete(t.subs, sub)
		}
	}
}

func sameStatus(a, b hostloop.SessionStatus) bool {
	return a.ID == b.ID && a.State == b.State && a.Value == b.Value && a.Error == b.Error &&
		a.Created.Equal(b.Created) && slices.Equal(a.Operations, b.Operations)
}
