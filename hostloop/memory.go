package hostloop

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/splashfabric/splashfabric/host"
)

// A host's sessions each stay within their own memory budget, but
// nothing else stopped their sum from passing what the process may hold:
// eleven sessions each holding 240 MiB of a 256 MiB budget killed a host
// capped at 4 GiB of address space. With LoopConfig.MemoryBudget set (a
// host derives it from its real limit, as it does GOMEMLIMIT), a watch
// beside the loop reads the live heap (what survived the last
// collection) every MemoryWatchEvery:
//
//   - at memoryAdmitShare of the budget, new submissions are refused
//     (ErrMemoryPressure, 503 memory_pressure with Retry-After) from the
//     owners (Submission.Owner) whose sessions hold their share of the
//     memory or more: the admission line divided among the owners holding
//     any. An owner whose sessions hold less is still taken, so one
//     client filling the host's memory does not shut the others out;
//   - at memoryShedShare, once a collection confirms it, the session
//     that holds the most memory fails with host.ErrMemoryBudget, one per
//     watch until the heap is below the line again;
//   - at the budget itself, a slice growing the heap is stopped where it
//     grows (host.SetProcessMemoryLimit): the last line, for a slice that
//     grows faster than the watch looks.
//
// A durable session is failed like any other rather than evicted to its
// ledger: what it holds is its script's own state, which resuming it
// would build again (see docs/decisions/0182).

// Defaults and shares of the memory watch.
const (
	// DefaultMemoryWatchEvery is how often the watch reads the heap.
	DefaultMemoryWatchEvery = 100 * time.Millisecond
	// memoryAdmitShare of the budget live refuses new submissions;
	// memoryShedShare fails the largest session.
	memoryAdmitShare = 0.75
	memoryShedShare  = 0.90
	// memoryRecollect is how often, while refusing, the watch runs a
	// collection to see what is still held.
	memoryRecollect = time.Second
)

// memoryWatch is the loop's view of the process's memory. The watch
// goroutine writes it; Submit and the loop read it.
type memoryWatch struct {
	budget int64
	every  time.Duration
	// live is the heap that survived the last collection.
	live atomic.Int64
	// refusing: live is at or over the admission line; held is then
	// what each owner's sessions hold, and share what one owner may hold
	// before it is refused (nil and 0 until the loop reported).
	refusing atomic.Bool
	held     atomic.Pointer[map[string]int64]
	share    atomic.Int64
	// read returns the live heap; collect runs a collection first.
	read func(collect bool) int64
}

// readLiveHeap reads what survived the last collection, after one if collect.
func readLiveHeap(collect bool) int64 {
	if collect {
		runtime.GC()
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

func newMemoryWatch(cfg LoopConfig) *memoryWatch {
	if cfg.MemoryBudget <= 0 {
		return nil
	}
	w := &memoryWatch{budget: cfg.MemoryBudget, every: cfg.MemoryWatchEvery, read: readLiveHeap}
	if cfg.readHeap != nil {
		w.read = cfg.readHeap
	}
	return w
}

func (w *memoryWatch) line(share float64) int64 { return int64(float64(w.budget) * share) }

// admit refuses a submission of owner while the heap is over the
// admission line and owner's sessions hold their share of it.
func (w *memoryWatch) admit(owner string) error {
	if w == nil || !w.refusing.Load() {
		return nil
	}
	held := int64(-1)
	if m := w.held.Load(); m != nil {
		held = (*m)[owner]
		if held < w.share.Load() {
			return nil
		}
	}
	if held < 0 {
		return fmt.Errorf("%w: %s live of the host's %s budget", ErrMemoryPressure, mib(w.live.Load()), mib(w.budget))
	}
	return fmt.Errorf("%w: %s live of the host's %s budget, and the sessions of %q hold %s, its share", ErrMemoryPressure, mib(w.live.Load()), mib(w.budget), owner, mib(held))
}

// account is the loop's report of what each owner's sessions hold,
// while the watch refuses: admit then refuses only the owners holding
// their share.
func (st *loopState) account(w *memoryWatch) {
	held := make(map[string]int64)
	for _, s := range st.sessions {
		if !s.done {
			if h := st.memoryHeld(s); h > 0 {
				held[s.owner] += h
			}
		}
	}
	w.share.Store(w.line(memoryAdmitShare) / int64(max(len(held), 1)))
	w.held.Store(&held)
}

// memoryHeld is what s holds by the process's memory meter.
func (st *loopState) memoryHeld(s *session) int64 {
	if st.cfg.memoryHeld != nil {
		return st.cfg.memoryHeld(s.id)
	}
	return s.core.MemoryHeld()
}

func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }

// watchMemory is the watch goroutine: it reads the heap every
// w.every and asks the loop to shed a session while it is over the shed
// line. It ends with the loop.
func (l *Loop) watchMemory(w *memoryWatch) {
	defer l.st.bg.Done()
	t := time.NewTicker(w.every)
	defer t.Stop()
	var collected time.Time
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		live := w.read(false)
		switch {
		case live >= w.line(memoryShedShare):
			// Garbage the collector has not reached yet is not held:
			// confirmed before anybody fails for it.
			live, collected = w.read(true), time.Now()
		case live >= w.line(memoryAdmitShare) && time.Since(collected) >= memoryRecollect:
			// The sessions that held it may have ended since the last
			// collection; while the host refuses work, nothing may
			// allocate enough to run one.
			live, collected = w.read(true), time.Now()
		}
		w.live.Store(live)
		refusing := live >= w.line(memoryAdmitShare)
		if refusing {
			if err := l.send(l.stopped, cmdFunc(func(st *loopState) { st.account(w) })); err != nil {
				return
			}
		} else {
			w.held.Store(nil)
		}
		w.refusing.Store(refusing)
		if live < w.line(memoryShedShare) {
			continue
		}
		if err := l.send(l.stopped, cmdFunc(func(st *loopState) { st.shed(live, w) })); err != nil {
			return
		}
	}
}

// shed fails the session that holds the most memory.
func (st *loopState) shed(live int64, w *memoryWatch) {
	var largest *session
	var held int64
	for _, s := range st.sessions {
		if s.done {
			continue
		}
		if h := st.memoryHeld(s); h > held {
			largest, held = s, h
		}
	}
	if largest == nil {
		st.reject("memory_pressure", fmt.Errorf("%w: %s live of a %s budget, and no session holds any of it", ErrMemoryPressure, mib(live), mib(w.budget)))
		return
	}
	err := fmt.Errorf("%w: the host is short of memory (%s live of its %s budget) and this session held the most, %s",
		host.ErrMemoryBudget, mib(live), mib(w.budget), mib(held))
	largest.core.Abort(err)
	st.touch(largest)
	st.reject("memory_shed", err)
}
