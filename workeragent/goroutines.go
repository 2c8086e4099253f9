package workeragent

// goTracked starts f on a goroutine the agent accounts for: every goroutine
// the agent owns goes through here, so teardown can wait for all of them
// with one WaitGroup. The heartbeat's timer callback is the exception; it
// does its work only while its execution, tracked here, waits for it.
func (a *Agent) goTracked(f func()) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		f()
	}()
}
