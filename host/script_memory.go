package host

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// A session's memory budget is enforced where its memory grows: while its
// JavaScript runs. Go cannot say which goroutine allocated what, so the
// meter reads the heap of the whole process, and slices of script run one
// at a time in the process (the gate): the heap's growth during a slice
// is then that slice's. The host loop ran one slice at a time already; a
// submission's first slice, run on the caller's goroutine, now waits for
// the loop's to end, and the loop for it.
//
// Heap readings include garbage not yet collected. A slice whose charge
// passes its budget is confirmed by a collection before it is stopped,
// and what the collection frees is credited to it, so a script that only
// makes garbage is not stopped for it. A charge over twice the budget
// stops the slice at once, whatever a collection would say: the process
// must not wait for one to stay safe.
//
// Memory a script keeps across an await stays charged to its session (its
// carry), and its next slice starts from it. Memory freed while no slice
// runs (the collector sweeping between slices) is credited to every
// session's carry in proportion to it, which keeps the garbage of past
// slices from adding up to a budget over a long session; the price is that
// a session growing across awaits beside sessions making garbage shares
// their credit, so its carry can lag what it holds.

// memoryMeterPeriod is how often the heap is read while a slice runs.
// Growth between two readings is what a slice can overshoot its budget
// by, besides the one allocation in progress.
const memoryMeterPeriod = time.Millisecond

// hardBudgetFactor is how far over budget a charge stops a slice without
// waiting for a collection to confirm it.
const hardBudgetFactor = 2

// memoryMeter is the process-wide reader of heap growth. The scheduler's
// gate is held for the length of each quantum of a slice; the fields
// below mu are guarded by it. The running account's timer callbacks run
// on their own goroutines and touch it only under mu; the collections
// they ask for run without it.
type memoryMeter struct {
	mu     sync.Mutex
	sample [2]metrics.Sample
	last   int64 // heap object bytes at the last reading
	floor  int64 // lowest live heap seen as a slice started; 0 until a collection

	cur *memoryAccount // the running slice's account, nil between slices
	// The carries of sessions not running are norm×scale for accounts of
	// the current epoch, 0 for older ones; total is their sum. Crediting
	// them all in proportion is then one multiplication.
	scale float64
	epoch uint64
	total float64

	confirming bool // a tick's collection is under way

	// peak is the highest heap reading while a slice ran, for the tests
	// that report what an attack reached.
	peak int64

	// limit is the process's memory budget (SetProcessMemoryLimit); 0:
	// none.
	limit int64
}

// sharedMeter reads the heap for every script engine of the process.
var sharedMeter = &memoryMeter{
	scale: 1,
	sample: [2]metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
	},
}

// memoryAccount is one session's charge. While its slice runs its fields
// belong to the meter (under mu); between slices, budget to the Runtime's
// goroutine and the rest to the meter.
type memoryAccount struct {
	budget int64
	// charge is the session's heap while a slice runs: its carry plus
	// the slice's growth.
	charge int64
	// norm and epoch hold the carry between slices (see memoryMeter).
	norm  float64
	epoch uint64
	vm    *goja.Runtime // while running
	// stopped: the meter interrupted this slice already.
	stopped bool
	// timer reads the heap while the account's slice runs. Each account
	// has its own, made on its first slice, like budgetTimer: a timer
	// belongs to the synctest bubble of the goroutine that made it, and
	// one shared by the process would run on the first test's clock.
	timer *time.Timer
}

// read takes a heap reading; mu is held.
func (m *memoryMeter) read() (objects, live int64) {
	metrics.Read(m.sample[:])
	objects = int64(m.sample[0].Value.Uint64())
	live = int64(m.sample[1].Value.Uint64())
	m.peak = max(m.peak, objects)
	return objects, live
}

// charge books the heap's change since the last reading: to the running
// slice; with none running, frees to the carries in proportion, and
// growth to nobody (it is the host's own). It returns the live heap of
// the last collection. mu is held.
func (m *memoryMeter) charge() (live int64) {
	cur, live := m.read()
	delta := cur - m.last
	m.last = cur
	switch {
	case m.cur != nil:
		m.cur.charge = max(0, m.cur.charge+delta)
	case delta < 0:
		m.credit(float64(-delta))
	}
	return live
}

// credit takes freed bytes off every carry in proportion; mu is held.
func (m *memoryMeter) credit(freed float64) {
	if m.total <= 0 {
		return
	}
	f := 1 - freed/m.total
	if f <= 1e-9 || m.scale*f < 1e-200 {
		// Everything carried was freed (or the scale ran out of
		// precision): a new epoch zeroes every carry at once.
		m.epoch++
		m.scale, m.total = 1, 0
		return
	}
	m.scale *= f
	m.total *= f
}

// carry is a's carry between slices; mu is held.
func (m *memoryMeter) carry(a *memoryAccount) float64 {
	if a.epoch != m.epoch {
		return 0
	}
	return a.norm * m.scale
}

// begin starts charging a for a quantum of a slice of vm; the gate is
// held. What was built before it (a realm) is nobody's growth.
func (m *memoryMeter) begin(a *memoryAccount, vm *goja.Runtime) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// The floor is taken as slices start, never while one is being
	// confirmed: by then the heap holds what the suspect added.
	if live := m.charge(); live > 0 && (m.floor == 0 || live < m.floor) {
		m.floor = live
	}
	c := m.carry(a)
	m.total = max(0, m.total-c)
	a.charge, a.norm = int64(c), 0
	a.vm, a.stopped = vm, false
	m.cur = a
	if a.timer == nil {
		a.timer = time.AfterFunc(memoryMeterPeriod, func() { m.tick(a) })
		return
	}
	a.timer.Reset(memoryMeterPeriod)
}

// exit stops charging a at the end of its slice and reports whether the
// session holds more than its budget, confirmed by a collection; then its
// script is to be dropped, and a carries nothing. It must be called
// before the vm's interrupt flag is cleared: after it, the meter no
// longer interrupts vm.
func (m *memoryMeter) exit(a *memoryAccount) (over bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// A callback that runs anyway finds another account running, or
	// none, and does nothing.
	a.timer.Stop()
	m.charge()
	if a.charge > a.budget && a.charge <= hardBudgetFactor*a.budget {
		m.confirm()
	}
	m.cur, a.vm = nil, nil
	over = a.charge > a.budget
	if over {
		a.charge = 0
	}
	a.norm, a.epoch = float64(a.charge)/m.scale, m.epoch
	m.total += float64(a.charge)
	return over
}

// pause stops charging a at the end of a quantum whose slice goes on
// later, and reports whether it may: a session over its budget
// (confirmed by a collection) is stopped instead, its vm interrupted and
// its account still running, so that the slice unwinds and ends as any
// other stopped slice does (exit).
func (m *memoryMeter) pause(a *memoryAccount) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	a.timer.Stop()
	m.charge()
	if a.charge > a.budget && a.charge <= hardBudgetFactor*a.budget {
		m.confirm()
	}
	if a.stopped || a.charge > a.budget {
		if !a.stopped {
			m.stop(a)
		}
		return false
	}
	m.cur, a.vm = nil, nil
	a.norm, a.epoch = float64(a.charge)/m.scale, m.epoch
	m.total += float64(a.charge)
	return true
}

// forget drops a's carry: its script and what it held are gone.
func (m *memoryMeter) forget(a *memoryAccount) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.total = max(0, m.total-m.carry(a))
	a.norm = 0
}

// tick reads the heap while a's slice runs and stops it over its budget.
func (m *memoryMeter) tick(a *memoryAccount) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur != a {
		return // its slice ended
	}
	// Armed again first: while this callback waits for a collection,
	// the next ones still stop what passes the hard bound.
	a.timer.Reset(memoryMeterPeriod)
	m.charge()
	if m.limit > 0 && m.last >= m.limit && !a.stopped {
		m.processLimit(a)
		return
	}
	switch {
	case a.stopped || a.charge <= a.budget:
		return
	case a.charge > hardBudgetFactor*a.budget:
		m.stop(a)
		return
	case m.confirming:
		return
	}
	m.confirming = true
	m.confirm()
	m.confirming = false
	// The slice may have ended during the collection.
	if m.cur == a && !a.stopped && a.charge > a.budget {
		m.stop(a)
	}
}

// stop interrupts a's slice; mu is held.
func (m *memoryMeter) stop(a *memoryAccount) { m.stopWith(a, memoryBudgetError(a.budget)) }

func (m *memoryMeter) stopWith(a *memoryAccount, err error) {
	a.stopped = true
	a.vm.Interrupt(err)
}

// processLimit stops a's slice, the heap being at the process's limit:
// the slice that runs is the one asking for memory the process does not
// have, and the process must not wait for its host to shed a session
// first (the host sheds one well before this line, see hostloop's memory
// watch). It is not confirmed by a collection: the runtime's own soft
// limit (GOMEMLIMIT, the same figure) collects before the heap gets here,
// so what is here is held, and a collection of a heap that size takes
// long enough for the slice to grow by hundreds of megabytes meanwhile.
// mu is held.
func (m *memoryMeter) processLimit(a *memoryAccount) {
	m.stopWith(a, fmt.Errorf("%w: the host ran out of memory (its budget is %s) while the script grew", ErrMemoryBudget, formatBytes(m.limit)))
}

// SetProcessMemoryLimit sets the process's memory budget, the heap size
// that no slice of script may grow past: a slice that grows the heap to
// it, and whose growth a collection confirms, fails with ErrMemoryBudget.
// The host itself sheds sessions well before (see hostloop.LoopConfig's
// MemoryBudget); this is the last line. 0 removes it.
func SetProcessMemoryLimit(bytes int64) {
	sharedMeter.mu.Lock()
	defer sharedMeter.mu.Unlock()
	sharedMeter.limit = max(bytes, 0)
}

// MemoryHeld is the memory the session's script is charged with: what it
// held at the end of its last slice (less its share of what the collector
// freed since), or what it holds so far while a slice runs. 0 without a
// script.
func (r *Runtime) MemoryHeld() int64 {
	e, _ := r.script.(*scriptEngine)
	if e == nil {
		return 0
	}
	m := sharedMeter
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == &e.mem {
		return e.mem.charge
	}
	return int64(m.carry(&e.mem))
}

// confirm collects garbage and credits what it freed to the running
// slice. mu is held on entry and exit but not during the collection,
// which takes long on a large heap and must not hold up the meter's
// readings. No charge may exceed all the heap gained above its lowest
// point, which corrects a carry that kept garbage freed while the session
// was not running.
func (m *memoryMeter) confirm() {
	m.mu.Unlock()
	runtime.GC()
	m.mu.Lock()
	m.charge()
	if a := m.cur; a != nil {
		a.charge = min(a.charge, max(0, m.last-m.floor))
	}
}

// peakHeap returns the highest heap reading taken while a slice ran, and
// starts the next measurement from the current heap.
func (m *memoryMeter) peakHeap() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.peak
	m.peak, _ = m.read()
	return p
}

func memoryBudgetError(budget int64) error {
	return fmt.Errorf("%w: the script holds more than its %s", ErrMemoryBudget, formatBytes(budget))
}

// formatBytes writes a byte count the way an operator sets it.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
