package host

// SetBackground marks the runtime's script slices as background work,
// which gives way to live scripts waiting for the engine: a session being
// replayed from its ledger, say. It may be changed between slices.
func (r *Runtime) SetBackground(background bool) { r.background = background }
