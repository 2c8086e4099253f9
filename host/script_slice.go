package host

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"
)

// A slice of script is cut into quanta (script_sched.go). Where its
// quanta run depends on the runtime's owner:
//
//   - Without Turns, the owner's goroutine runs the slice and, when the
//     quantum is over and another slice waits, pauses in the yield point
//     until its next turn: the owner blocks, as it always has for a
//     slice.
//   - With Turns (the host loop), the slice runs on a goroutine of its
//     own while the owner waits, for one quantum at most. Then, or when
//     its first turn did not come at once, the owner gets the runtime
//     back as running (EvalResult.Running) and goes on with its other
//     work; the slice's turns come on the Turns and the owner continues
//     it with Continue. The owner and the slice's goroutine never run at
//     the same time: each hands over to the other on a channel.

// sliceRun is what a slice keeps between its quanta. It belongs to the
// runtime's owner except while the slice's goroutine runs, and the two
// hand it over with the channels.
type sliceRun struct {
	ticket ticket
	// first is what the slice runs before it delivers settlements (an
	// Eval's program); nil for a resumption.
	first func() error
	// started: the slice's body is on a stack (it ran a quantum).
	started bool
	// toOwner carries the slice goroutine's news: paused, or done with
	// the script's new state. resume wakes the paused slice.
	toOwner chan sliceNews
	resume  chan struct{}
	// The quantum is over when the slice has run for the scheduler's
	// quantum since began: the yield point looks at the clock every
	// yieldClockEvery calls, and the timer sets due for a slice whose
	// calls are far apart (a loop whose every turn runs a long builtin).
	// The timer alone would be late by as much as the Go scheduler lets
	// a busy thread run before it looks at its timers (~10 ms).
	began   time.Time
	calls   uint32
	due     atomic.Bool
	quantum *time.Timer
	// abort, when set as a paused slice resumes, unwinds it with this
	// error.
	abort error
}

type sliceNews struct {
	res    *EvalResult
	paused bool
}

// running is the result of a runtime whose slice has not ended.
var running = &EvalResult{Suspended: true, Running: true}

// slice runs one stretch of JavaScript under the execution budget: first
// (nil when resuming), then every queued settlement, each of which runs
// the continuations it releases. With Turns it may return running.
func (e *scriptEngine) slice(first func() error) *EvalResult {
	e.inSlice = true
	sr := &e.run
	sr.first, sr.started, sr.abort = first, false, nil
	t := &sr.ticket
	t.e, t.turns, t.tag, t.fresh = e, e.r.turns, e.r.turnTag, true
	if t.turns == nil {
		sharedSched.acquire(t)
		sr.started = true
		return e.body()
	}
	if !sharedSched.tryAcquire(t) {
		sharedSched.queueTurn(t)
		return running
	}
	return e.aside()
}

// aside runs the slice's first quantum on a goroutine of its own and
// waits for its news.
func (e *scriptEngine) aside() *EvalResult {
	sr := &e.run
	if sr.toOwner == nil {
		sr.toOwner, sr.resume = make(chan sliceNews), make(chan struct{})
	}
	sr.started = true
	sr.turns().pool.run(func() { sr.toOwner <- sliceNews{res: e.body()} })
	return e.news()
}

// news waits for the slice's goroutine to pause or end.
func (e *scriptEngine) news() *EvalResult {
	n := <-e.run.toOwner
	if n.paused {
		return running
	}
	e.run.started = false
	return n.res
}

// cont runs the next quantum of a slice whose turn came.
func (e *scriptEngine) cont() *EvalResult {
	sr := &e.run
	switch {
	case !e.inSlice:
		return nil
	case !sharedSched.begin(&sr.ticket):
		return running
	case !sr.started:
		return e.aside()
	}
	sr.resume <- struct{}{}
	return e.news()
}

// body is the slice itself, on whichever goroutine runs it; the gate is
// held.
func (e *scriptEngine) body() (res *EvalResult) {
	sr := &e.run
	vm := e.enterRealm()
	rl := e.realm // a failure below may drop it from e
	sharedMeter.begin(&e.mem, vm)
	e.budget.arm(vm)
	e.startQuantum()
	defer func() {
		// The meter lets go of the vm before its interrupt is cleared,
		// and the gate opens last: the realm is another session's
		// after it.
		defer sharedSched.finish(&sr.ticket, rl)
		sr.quantum.Stop()
		over := sharedMeter.exit(&e.mem)
		e.budget.disarm()
		rl.unbind()
		e.inSlice = false
		if x := recover(); x != nil {
			// No panic may escape to the host; the vm state is
			// unknown after one, so the realm is retired.
			e.dropVM(true)
			res = e.end(&EvalResult{Err: &ScriptError{
				Message: fmt.Sprint("script engine: ", x),
				Err:     fmt.Errorf("script engine: %v", x),
			}})
			return
		}
		if over {
			// The slice ended before the meter could stop it, holding
			// more than the budget: dropping the vm is what gives the
			// memory back. A script that completed keeps its result.
			e.dropVM(false)
			if res != nil && res.Suspended {
				err := memoryBudgetError(e.mem.budget)
				res = e.end(&EvalResult{Err: &ScriptError{Message: err.Error(), Err: err}})
			}
		}
	}()
	var err error
	if first := sr.first; first != nil {
		sr.first = nil
		err = first()
	}
	// Delivering may queue more settlements (a continuation's tool call
	// can settle something), hence the length is read on every turn.
	for i := 0; err == nil && i < len(e.ready); i++ {
		err = e.deliver(e.ready[i])
	}
	clear(e.ready) // drop the resolving functions they hold
	e.ready = e.ready[:0]
	if err != nil {
		// Only uncatchable errors get here (an interrupt, a stack
		// overflow): everything a script can catch ends up in main.
		// The vm unwound them; what the session held goes.
		e.dropVM(false)
		return e.end(&EvalResult{Err: e.uncatchable(err)})
	}
	return e.state()
}

// startQuantum arms the quantum timer.
func (e *scriptEngine) startQuantum() {
	sr := &e.run
	sr.due.Store(false)
	sr.began = time.Now()
	if sr.quantum == nil {
		// Made on the first slice, like budgetTimer's: a timer belongs
		// to the synctest bubble of the goroutine that made it.
		sr.quantum = time.AfterFunc(sharedSched.quantum, func() { sr.due.Store(true) })
		return
	}
	sr.quantum.Reset(sharedSched.quantum)
}

// yieldPoint is the native function every loop turn and function body of
// a realm's scripts calls. It returns at once unless the running slice's
// quantum is over.
func (r *realm) yieldPoint(goja.FunctionCall) goja.Value {
	e := r.cur
	if e == nil {
		return goja.Undefined()
	}
	sr := &e.run
	sr.calls++
	if sr.due.Load() || (sr.calls%yieldClockEvery == 0 && time.Since(sr.began) >= sharedSched.quantum) {
		e.yield()
	}
	return goja.Undefined()
}

// yieldClockEvery is how many yield point calls go by between two looks
// at the clock: a few nanoseconds each at most.
const yieldClockEvery = 64

// yield ends the running quantum and waits for the slice's next turn,
// unless nobody else wants the gate (an owner's own goroutine runs on),
// or the slice must stop (its budget ran out, its memory is over): then
// it returns at once and the interrupted vm unwinds.
func (e *scriptEngine) yield() {
	sr := &e.run
	if sr.turns() == nil && !sharedSched.contended() {
		e.startQuantum()
		return
	}
	if e.budget.pause() {
		return
	}
	if !sharedMeter.pause(&e.mem) {
		e.budget.start()
		return
	}
	sharedSched.release(&sr.ticket)
	sr.ticket.fresh = false
	if sr.turns() == nil {
		sharedSched.acquire(&sr.ticket)
	} else {
		sharedSched.queueTurn(&sr.ticket)
		sr.toOwner <- sliceNews{paused: true}
		<-sr.resume
		if sr.abort != nil {
			e.vm.Interrupt(sr.abort)
		}
	}
	sharedMeter.begin(&e.mem, e.vm)
	e.budget.start()
	e.startQuantum()
}

func (sr *sliceRun) turns() *Turns { return sr.ticket.turns }

// abortSlice ends a slice that has not ended: a paused one is unwound
// with err (the owner waits for a turn ahead of every other), one that
// waits for its first turn is withdrawn. It returns the script's end.
func (e *scriptEngine) abortSlice(err error) *EvalResult {
	sr := &e.run
	sharedSched.cancel(&sr.ticket)
	if !sr.started {
		e.inSlice = false
		e.dropVM(false)
		return e.end(&EvalResult{Err: &ScriptError{Message: err.Error(), Err: err}})
	}
	sharedSched.acquireUrgent(&sr.ticket)
	sr.abort = err
	sr.resume <- struct{}{}
	n := <-sr.toOwner
	for n.paused {
		// A turn it was granted before the abort: the interrupt unwinds
		// it at its next instruction, so this is not reached again.
		sharedSched.acquireUrgent(&sr.ticket)
		sr.resume <- struct{}{}
		n = <-sr.toOwner
	}
	sr.started = false
	return n.res
}

// stopTimers stops the engine's timers for good: its script is released.
func (e *scriptEngine) stopTimers() {
	if e.run.quantum != nil {
		e.run.quantum.Stop()
	}
}

// SetTurns makes the runtime's owner one that never waits for a slice of
// script beyond one quantum: a method that runs script returns a result
// with Running set when the slice cannot run at once or used its quantum,
// and tag is pushed on turns each time the slice's next turn comes; the
// owner then calls Continue, and gives the runtime no other input that
// may run script until the slice ends. Nil turns gives the runtime back
// to an owner that waits. It may be changed only while no slice runs
// (Running is false).
func (r *Runtime) SetTurns(turns *Turns, tag any) {
	r.turns, r.turnTag = turns, tag
}

// Running reports whether a slice of the runtime's script has not ended:
// it waits for its turn or paused after its quantum.
func (r *Runtime) Running() bool {
	e, _ := r.script.(*scriptEngine)
	return e != nil && e.inSlice
}

// Continue runs the next quantum of the runtime's slice, when its turn
// came (see SetTurns), and returns the script's new state: Running again,
// or what the slice ended with. It returns nil when no slice runs, and
// Running unchanged when the turn has not come.
func (r *Runtime) Continue() *EvalResult {
	e, _ := r.script.(*scriptEngine)
	if e == nil {
		return nil
	}
	return e.cont()
}

// AbortScript ends the runtime's script at once with err as its failure,
// wherever it stands: a slice that paused is unwound (waiting for the
// gate ahead of every other slice, at most a quantum), one that waits for
// its turn is withdrawn, one suspended at an await lets go of what it
// holds. Its operations are left as a failed script leaves them. It
// returns the script's end, nil when no script runs.
func (r *Runtime) AbortScript(err error) *EvalResult {
	e, _ := r.script.(*scriptEngine)
	switch {
	case e == nil:
		return nil
	case e.inSlice:
		return e.abortSlice(err)
	case e.active:
		e.dropVM(false)
		return e.end(&EvalResult{Err: &ScriptError{Message: err.Error(), Err: err}})
	}
	return nil
}
