package workeragent

// goTracked starts f on a goroutine the agent accounts for: every goroutine
// the agent owns goes through here, so teardown can wait for all of them
// with one WaitGroup.
func (a *Agent) goTracked(f func()) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		f()
	}()
}
