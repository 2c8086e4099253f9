package host

// The script seam. The JavaScript engine starts operations with
//
//	func (r *Runtime) startOp(tool string, in string, format Format, onSettle func(Settlement)) (*Promise, error)
//
// which applies exactly the checks of Start/StartJSON (in is text, or JSON
// text when format is FormatJSON) and returns a promise whose onSettle hook
// the core calls once, at the end of the public method that settled it,
// after the runtime is consistent. The hook may re-enter startOp, Start,
// StartJSON, Call and CallJSON. After the hooks, the core calls
// r.script.afterSettle() and returns its result as the method's
// *EvalResult. The engine installs itself with r.setScript(d), reads its
// limits from r.grants and r.execBudget, and releases a handle it no
// longer references with Promise.Drop.

// scriptDriver is how the core resumes the script engine.
type scriptDriver interface {
	// afterSettle runs after the core has finished a public method that
	// settled one or more promises with onSettle hooks; it runs JS jobs
	// (continuations) and returns the script's new state, or nil if no
	// script continuation ran.
	afterSettle() *EvalResult
}

// EvalResult is a script's state after Eval or after a host method
// resumed it.
type EvalResult struct {
	// Suspended: the script awaits pending work.
	Suspended bool
	// Value is the script's completion value when it completed: its
	// string form, or JSON text for objects.
	Value string
	// Err is a *ScriptError when the script failed (a thrown error, a
	// rejected promise, an assertion, the execution budget).
	Err error
	// Running (with Suspended) says that the script's slice has not
	// ended: it used its quantum, or waits for its first turn. Only a
	// runtime with Turns (SetTurns) returns it; its owner continues it
	// with Continue when its turn comes, and gives it no other input
	// until the slice ends.
	Running bool
}

// Completed reports whether the script ran to the end without error.
func (e *EvalResult) Completed() bool { return e != nil && !e.Suspended && e.Err == nil }

// Failed reports whether the script ended with an error.
func (e *EvalResult) Failed() bool { return e != nil && e.Err != nil }

// Settlement is a promise's outcome: an output (text, or JSON text for
// JSON tools) or an error, always a *ToolError.
type Settlement struct {
	Output string
	Err    error
}

// Promise is the handle of one started operation, for Go programs and the
// script engine alike.
type Promise struct {
	r        *Runtime
	id       ExternalToolID
	s        Settlement
	onSettle func(Settlement)
	settled  bool
	dropped  bool
}

// ID returns the operation's id.
func (p *Promise) ID() ExternalToolID { return p.id }

// Settled returns the outcome once the operation finished.
func (p *Promise) Settled() (Settlement, bool) { return p.s, p.settled }

// Drop says the caller no longer holds the handle. An operation not yet
// claimed (or pumped) is released at once, freeing its pending slot; a
// claimed one stays reserved, counted against the pending limit and
// audited, until the host completes, cancels or expires it.
func (p *Promise) Drop() {
	if p.dropped {
		return
	}
	p.dropped = true
	if p.settled {
		return
	}
	if op := p.r.ops.get(p.id); op != nil && op.state == Queued {
		p.r.resolve(op, Cancelled, Settlement{Err: &ToolError{Tool: op.tool.policy.Name, Kind: ToolCancelled, Reason: "promise dropped before claim"}},
			AuditCancelled, "promise dropped before claim", 0)
	}
}
