package host

import (
	"sync"
	"time"
)

// A slice that runs aside from its owner (an owner with Turns) runs on a
// goroutine of a small pool of its Turns rather than a new one: goja runs
// deep on the Go stack, and a new goroutine's stack grows by copying on
// every slice it runs, which cost a resumption more than its own script
// did (BenchmarkResumeWithTurns). A pooled goroutine keeps the stack it
// grew. One left idle for asideIdle ends, so an owner that stopped
// running script keeps none. The pool is the Turns', not the process's,
// so that each owner's goroutines are its own (a testing/synctest bubble
// may not share them).

// asideIdle is how long a pooled goroutine waits for another slice.
const asideIdle = 50 * time.Millisecond

// asidePool is a pool of goroutines for slices that run aside; mu guards
// idle and closed.
type asidePool struct {
	mu     sync.Mutex
	idle   []*asideWorker
	closed bool
}

type asideWorker struct {
	pool *asidePool
	work chan func()
}

// run runs f on a pooled goroutine; once the pool is closed, on a new
// one that ends with f.
func (p *asidePool) run(f func()) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		go f()
		return
	}
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.work <- f
		return
	}
	p.mu.Unlock()
	w := &asideWorker{pool: p, work: make(chan func(), 1)}
	w.work <- f
	go w.serve()
}

// serve runs what it is given until it has waited asideIdle for nothing.
func (w *asideWorker) serve() {
	p := w.pool
	idle := time.NewTimer(asideIdle)
	defer idle.Stop()
	for {
		select {
		case f, ok := <-w.work:
			if !ok {
				return // the pool closed
			}
			f()
			p.mu.Lock()
			if p.closed {
				p.mu.Unlock()
				return
			}
			p.idle = append(p.idle, w)
			p.mu.Unlock()
			idle.Reset(asideIdle)
		case <-idle.C:
			p.mu.Lock()
			for i, x := range p.idle {
				if x == w {
					p.idle = append(p.idle[:i], p.idle[i+1:]...)
					p.mu.Unlock()
					return
				}
			}
			// Taken just now: its work is on the way.
			p.mu.Unlock()
		}
	}
}

// close ends the pool's idle goroutines; the busy ones end with their
// slice.
func (p *asidePool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, w := range p.idle {
		close(w.work)
	}
	p.idle = nil
}
