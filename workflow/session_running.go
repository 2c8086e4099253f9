package workflow

import "github.com/splashfabric/splashfabric/host"

// A session's script may be cut into quanta (host.Runtime.SetTurns): a
// slice that used its quantum, or could not start at once, leaves the
// session running, and its driver continues it when its turn comes. While
// it runs the session takes no input: an answer applied in the middle of
// a slice would change what the rest of it sees (a freed pending slot, a
// settled promise) where a replay, which runs each recorded input's slice
// whole, would not. Its driver holds such inputs until the slice ends, and
// nothing is claimed meanwhile; what the slice's entry recorded stands.

// SetTurns hands the runtime's turns to its driver (see
// host.Runtime.SetTurns); it must be called while the session does not
// run.
func (s *Session) SetTurns(turns *host.Turns, tag any) { s.rt.SetTurns(turns, tag) }

// Running reports whether a slice of the session's script has not ended.
func (s *Session) Running() bool { return s.rt.Running() }

// Continue runs the next quantum of the session's slice, its turn having
// come; once the slice ends, what follows every input follows it.
func (s *Session) Continue() {
	s.keep(s.rt.Continue())
	if !s.rt.Running() {
		s.after()
	}
}

// Abort ends the session's script at once with err (see
// host.Runtime.AbortScript), as a script that failed: the host stops, or
// the process needs the memory it holds. Nothing is recorded: a resumed
// durable session replays its ledger as if the abort never happened.
func (s *Session) Abort(err error) {
	if res := s.rt.AbortScript(err); res != nil && !s.Done() {
		s.result = res
	}
}

// MemoryHeld is the memory the session's script is charged with (see
// host.Runtime.MemoryHeld).
func (s *Session) MemoryHeld() int64 { return s.rt.MemoryHeld() }
