package workeragent

import "time"

// executorIdle is how long an executor goroutine waits for its next
// execution before it exits. A burst leaves its goroutines for this long,
// then the agent is back to the pull goroutines alone.
const executorIdle = 10 * time.Second

// execute runs f on an executor goroutine: an idle one if any waits,
// otherwise a new one. Executors outlive their execution because a fresh
// goroutine's stack is small and an execution grows it (the JSON encoder
// and the NATS client recurse deeply); reusing the goroutine keeps the
// grown stack instead of copying it again on every call, which cost about
// a twentieth of the agent's CPU under load.
func (a *Agent) execute(f func()) {
	select {
	case a.handoff <- f:
	default:
		a.goTracked(func() { a.executor(f) })
	}
}

// executor runs f, then whatever execute hands it next, until it has
// waited executorIdle for work or the agent stops. It is tracked by
// goTracked, so teardown waits for it like for any execution.
func (a *Agent) executor(f func()) {
	idle := time.NewTimer(executorIdle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(executorIdle)
		select {
		case f = <-a.handoff:
		case <-idle.C:
			return
		case <-a.stopCh:
			return
		}
	}
}
