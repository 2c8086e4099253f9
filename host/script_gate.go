package host

import "sync"

// sliceGate lets one script slice run at a time in the process (the memory
// meter charges the heap's growth to the slice that runs), and lets live
// work go first: a background slice (a session being replayed from its
// ledger) waits while any foreground slice waits, so a host bringing back
// thousands of sessions still runs new scripts as they come.
type sliceGate struct {
	mu sync.Mutex
	// fg wakes a waiting foreground slice, bg a background one.
	fg, bg *sync.Cond
	busy   bool
	// waitingFG counts the foreground slices waiting.
	waitingFG int
}

func newSliceGate() *sliceGate {
	g := &sliceGate{}
	g.fg, g.bg = sync.NewCond(&g.mu), sync.NewCond(&g.mu)
	return g
}

// lock waits for the gate; a background slice also waits for every
// foreground one that is waiting.
func (g *sliceGate) lock(background bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if background {
		for g.busy || g.waitingFG > 0 {
			g.bg.Wait()
		}
	} else {
		g.waitingFG++
		for g.busy {
			g.fg.Wait()
		}
		g.waitingFG--
	}
	g.busy = true
}

// unlock opens the gate to a waiting foreground slice if there is one,
// else to a background one.
func (g *sliceGate) unlock() {
	g.mu.Lock()
	g.busy = false
	fg := g.waitingFG > 0
	g.mu.Unlock()
	if fg {
		g.fg.Signal()
		return
	}
	g.bg.Signal()
}

// SetBackground marks the runtime's script slices as background work,
// which gives way to live scripts waiting for the engine: a session being
// replayed from its ledger, say. It may be changed between slices.
func (r *Runtime) SetBackground(background bool) { r.background = background }
