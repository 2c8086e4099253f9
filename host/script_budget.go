package host

import (
	"fmt"
	"time"

	"github.com/dop251/goja"
)

// budgetTimer bounds each slice of JavaScript (an Eval, or one resumption
// after settlements) to the runtime's execution budget: the time the
// slice ran, summed over the quanta it was cut into; the time it waited
// for its turns is not counted. Its timer callback is the only code of
// the runtime that runs on another goroutine; it touches nothing but
// goja's interrupt flag and the fired channel, and pause and disarm wait
// for it, so no callback outlives the quantum that armed it.
type budgetTimer struct {
	budget time.Duration
	timer  *time.Timer   // nil until the first slice
	vm     *goja.Runtime // written only while the timer is stopped
	fired  chan struct{} // the callback's hand-off to pause and disarm; made with timer
	// used is what the slice ran before its current quantum; since is
	// when that quantum started, zero while the timer is stopped.
	used  time.Duration
	since time.Time
}

func newBudgetTimer(budget time.Duration) budgetTimer {
	return budgetTimer{budget: budget}
}

// arm starts the budget for one slice of vm.
func (b *budgetTimer) arm(vm *goja.Runtime) {
	b.vm, b.used = vm, 0
	b.start()
}

// start runs the clock for one quantum, with what the slice has left.
func (b *budgetTimer) start() {
	b.since = time.Now()
	left := max(b.budget-b.used, 0)
	if b.timer == nil {
		b.fired = make(chan struct{}, 1)
		b.timer = time.AfterFunc(left, b.interrupt)
		return
	}
	b.timer.Reset(left)
}

// interrupt stops the script. Its error is made here rather than up
// front: most sessions never run out of budget.
func (b *budgetTimer) interrupt() {
	b.vm.Interrupt(fmt.Errorf("%w: a slice of script ran longer than %v", ErrExecutionBudget, b.budget))
	b.fired <- struct{}{}
}

// pause stops the clock at the end of a quantum and reports whether the
// budget ran out first: the vm is then interrupted and its slice must
// unwind rather than pause.
func (b *budgetTimer) pause() (spent bool) {
	if b.since.IsZero() {
		return false
	}
	b.used += time.Since(b.since)
	b.since = time.Time{}
	if !b.timer.Stop() {
		<-b.fired // the callback ran or is running: wait for it
		return true
	}
	return false
}

// disarm stops the budget and leaves vm free of any pending interrupt, so
// the next slice starts with a full budget.
func (b *budgetTimer) disarm() {
	if !b.since.IsZero() {
		b.since = time.Time{}
		if !b.timer.Stop() {
			<-b.fired // the callback ran or is running: wait for it
		}
	} else {
		// Stopped at a pause that found the budget spent: its
		// callback has handed off already.
		select {
		case <-b.fired:
		default:
		}
	}
	b.vm.ClearInterrupt()
	// A vm dropped after this slice (it failed) must not be kept alive
	// by its timer until the next one: it may hold the budget's worth.
	b.vm = nil
}
