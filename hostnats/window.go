package hostnats

import "sync"

// replayWindow remembers, per request, the highest worker sequence the host
// accepted. It has its own mutex so that Forget, called from the loop, and
// the events consumer callback may touch it at once.
//
// A request whose terminal frame was accepted keeps its entry in a ring of
// the most recent finished requests, so a replay of that terminal frame is
// still refused; the ring bounds the memory. A later attempt of the same
// request (a host retry) simply continues the window.
type replayWindow struct {
	mu   sync.Mutex
	last map[string]windowEntry
	ring []ringRef // finished requests, oldest at head once full
	head int
	gen  uint64
}

type windowEntry struct {
	seq uint64
	gen uint64 // non-zero while the entry sits in the ring as finished
}

type ringRef struct {
	id  string
	gen uint64
}

func newReplayWindow(memory int) *replayWindow {
	return &replayWindow{last: make(map[string]windowEntry), ring: make([]ringRef, 0, memory)}
}

// accept records seq for request id and reports whether it was newer than
// every sequence accepted before.
func (w *replayWindow) accept(id string, seq uint64, terminal bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.last[id]
	if ok && seq <= e.seq {
		return false
	}
	e.seq, e.gen = seq, 0
	if terminal {
		w.gen++
		e.gen = w.gen
		w.remember(ringRef{id: id, gen: e.gen})
	}
	w.last[id] = e
	return true
}

// remember appends ref to the ring, evicting the oldest finished request
// unless it has come back to life since.
func (w *replayWindow) remember(ref ringRef) {
	if len(w.ring) < cap(w.ring) {
		w.ring = append(w.ring, ref)
		return
	}
	old := w.ring[w.head]
	if e, ok := w.last[old.id]; ok && e.gen == old.gen {
		delete(w.last, old.id)
	}
	w.ring[w.head] = ref
	w.head = (w.head + 1) % len(w.ring)
}

// forget drops id's window.
func (w *replayWindow) forget(id string) {
	w.mu.Lock()
	delete(w.last, id)
	w.mu.Unlock()
}

// size is the number of requests with a window.
func (w *replayWindow) size() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.last)
}
