package hostnats

import (
	"slices"
	"sync"
)

// replayWindow remembers, per request and per tool, the highest worker
// sequence the host accepted. The tool is the one whose pool's ring
// authenticated the frame: a pool that seals a frame for another pool's
// request (which the loop then refuses, see hostloop.Event.Tool) moves
// only its own window, never the one the genuine answer must pass. It has
// its own mutex so that Forget, called from the loop, and the events
// consumer callback may touch it at once.
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
	// seqs holds the highest sequence accepted per tool; one tool
	// answers a request, so it has one element but under attack.
	seqs []toolSeq
	gen  uint64 // non-zero while the entry sits in the ring as finished
}

type toolSeq struct {
	tool string
	seq  uint64
}

type ringRef struct {
	id  string
	gen uint64
}

func newReplayWindow(memory int) *replayWindow {
	return &replayWindow{last: make(map[string]windowEntry), ring: make([]ringRef, 0, memory)}
}

// accept records seq for request id as sealed by tool's pool and reports
// whether it was newer than every sequence accepted before from it.
func (w *replayWindow) accept(id, tool string, seq uint64, terminal bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.last[id]
	i := slices.IndexFunc(e.seqs, func(s toolSeq) bool { return s.tool == tool })
	if i >= 0 && seq <= e.seqs[i].seq {
		return false
	}
	if i < 0 {
		e.seqs = append(e.seqs, toolSeq{tool: tool})
		i = len(e.seqs) - 1
	}
	e.seqs[i].seq, e.gen = seq, 0
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
