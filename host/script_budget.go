package host

import (
	"fmt"
	"time"

	"github.com/dop251/goja"
)

// budgetTimer bounds each slice of JavaScript (an Eval, or one resumption
// after settlements) to the runtime's execution budget. Its timer callback
// is the only code of the runtime that runs on another goroutine; it
// touches nothing but goja's interrupt flag and the fired channel, and
// disarm waits for it, so no callback outlives the slice that armed it.
type budgetTimer struct {
	budget time.Duration
	timer  *time.Timer   // nil until the first slice
	vm     *goja.Runtime // written only while the timer is stopped
	fired  chan struct{} // the callback's hand-off to disarm; made with timer
}

func newBudgetTimer(budget time.Duration) budgetTimer {
	return budgetTimer{budget: budget}
}

// arm starts the budget for one slice of vm.
func (b *budgetTimer) arm(vm *goja.Runtime) {
	b.vm = vm
	if b.timer == nil {
		b.fired = make(chan struct{}, 1)
		b.timer = time.AfterFunc(b.budget, b.interrupt)
		return
	}
	b.timer.Reset(b.budget)
}

// interrupt stops the script. Its error is made here rather than up
// front: most sessions never run out of budget.
func (b *budgetTimer) interrupt() {
	b.vm.Interrupt(fmt.Errorf("%w: a slice of script ran longer than %v", ErrExecutionBudget, b.budget))
	b.fired <- struct{}{}
}

// disarm stops the budget and leaves vm free of any pending interrupt, so
// the next slice starts with a full budget.
func (b *budgetTimer) disarm() {
	if !b.timer.Stop() {
		<-b.fired // the callback ran or is running: wait for it
	}
	b.vm.ClearInterrupt()
	// A vm dropped after this slice (it failed) must not be kept alive
	// by its timer until the next one: it may hold the budget's worth.
	b.vm = nil
}
