package host

import (
	"encoding/json"
	"fmt"
)

// Call runs a local text tool synchronously: the Go counterpart of a
// script's tool.call. An external tool is refused with
// ErrExternalToolNotCallable before any budget is consumed. A tool
// failure or invalid output comes back as a *ToolError.
func (r *Runtime) Call(tool, input string) (string, error) {
	return r.call(tool, input, FormatText)
}

// CallJSON runs a local JSON tool synchronously; input and output are
// validated as for StartJSON and completion.
func (r *Runtime) CallJSON(tool string, input json.RawMessage) (json.RawMessage, error) {
	out, err := r.call(tool, string(input), FormatJSON)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(out), nil
}

func (r *Runtime) call(name, in string, format Format) (string, error) {
	if err := r.granted(name); err != nil {
		return "", err
	}
	if t := r.tools[name]; t != nil && t.external {
		err := fmt.Errorf("%w: %q: use Start", ErrExternalToolNotCallable, name)
		r.recordTool(name, AuditDenied, err.Error())
		return "", err
	}
	t, err := r.toolFor(name, format, in)
	if err != nil {
		return "", err
	}
	if err := r.admit(t, false); err != nil {
		return "", err
	}
	if err := r.checkPlan(t, name, in); err != nil {
		return "", err
	}
	r.calls++
	r.lastID++
	// A synchronous call is an operation that is born and finished in one
	// step; it gets an id only so its audit events correlate.
	op := &operation{id: r.lastID, tool: t, callIndex: r.calls, heapIndex: -1, state: Queued}
	r.record(op, AuditStarted, "", len(in), 0)
	out, err := r.runHandler(t, in)
	if err == nil {
		err = checkOutput(t, out)
		if err != nil {
			te := &ToolError{Tool: name, Kind: ToolInvalidOutput, Reason: err.Error()}
			r.record(op, AuditFailed, te.Reason, len(out), 0)
			return "", te
		}
		r.record(op, AuditSucceeded, "", len(out), 0)
		return out, nil
	}
	te := &ToolError{Tool: name, Kind: ToolFailed, Reason: err.Error()}
	r.record(op, AuditFailed, te.Reason, 0, 0)
	return "", te
}

func (r *Runtime) runHandler(t *tool, in string) (string, error) {
	if t.format == FormatJSON {
		out, err := t.jsonHandler(json.RawMessage(in))
		return string(out), err
	}
	return t.handler(in)
}

// LocalPending reports whether local operations wait for Pump.
func (r *Runtime) LocalPending() bool { return r.local.head != nil }

// Pump runs every queued local operation in start order. It checks each
// deadline before invoking the handler, since a handler that has started
// cannot be interrupted. Operations started by continuations that Pump
// resumes wait for the next Pump.
func (r *Runtime) Pump() (*EvalResult, error) {
	for op := r.local.head; op != nil; op = r.local.head {
		r.local.remove(op)
		if op.expired(r.clock.Now()) {
			r.timeout(op, "deadline elapsed before the handler ran")
			continue
		}
		out, err := r.runHandler(op.tool, op.input)
		if err != nil {
			r.deliver(op, ToolResult{Err: err}, "")
			continue
		}
		r.deliver(op, Ok(out), "")
	}
	return r.finish(), nil
}
