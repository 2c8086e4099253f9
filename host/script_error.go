package host

// ScriptError is how a script failure reaches the host: an exception the
// script threw or did not catch, a promise it awaited that rejected, a
// failed assertion, a syntax error, or the execution budget running out.
// It sits in EvalResult.Err; Eval's own error return is kept for misuse of
// the runtime, so a host can tell "the script failed" from "I called it
// wrongly".
type ScriptError struct {
	// Message is the thrown value as the script would print it: the
	// message of an Error, or the String() of any other value.
	Message string
	// Stack is the JavaScript stack at the throw, when the engine has one.
	Stack string
	// Err is the Go error behind the failure when there is one: the
	// *ToolError of a rejected tool promise, a runtime sentinel such as
	// ErrBudgetExhausted or ErrExternalToolNotCallable from a denied call,
	// or an error wrapping ErrExecutionBudget. errors.Is and errors.As see
	// through ScriptError to it.
	Err error
}

// Error reports the failure with its script-visible message.
func (e *ScriptError) Error() string {
	return "script failed: " + e.Message
}

// Unwrap returns the Go error behind the failure, if any.
func (e *ScriptError) Unwrap() error { return e.Err }
