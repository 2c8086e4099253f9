package toolspec

import (
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Tool is a validated, compiled Spec: its schemas and redaction rules are
// compiled once per process and shared by every session. A Tool is
// immutable and safe for concurrent use.
type Tool struct {
	spec     Spec // defaults filled; never handed out without a copy
	digest   string
	in, out  *jsonschema.Schema
	redactor func(string) string
}

// Compile validates s, without looking for its command, and compiles it.
// A failure is a *FieldError.
func (s Spec) Compile() (*Tool, error) {
	c, err := s.check(label(s.Name, ""))
	if err != nil {
		return nil, err
	}
	spec := s.clone().withDefaults()
	return &Tool{
		spec:     spec,
		digest:   digest(spec),
		in:       c.in,
		out:      c.out,
		redactor: newRedactor(c.rules),
	}, nil
}

// Spec returns a deep copy of the definition with its defaults written
// out: Format is never empty, MaxAttempts is at least 1, MaxOutputBytes is
// set, and a Process's Concurrency is at least 1. Changing the copy does
// not change t.
func (t *Tool) Spec() Spec { return t.spec.clone() }

// Summary is the part of a definition a host registers a tool under:
// everything but the schemas, the redaction rules and how a worker runs
// it, which a Tool keeps compiled. Defaults are written out, as in Spec.
type Summary struct {
	Name           string
	Description    string
	Format         Format
	Idempotent     bool
	Cancellable    bool
	MaxAttempts    int
	Deadline       Duration
	MaxOutputBytes int
	Stream         *StreamPolicy // a copy; nil when the tool does not stream
}

// Summary returns the tool's summary. Unlike Spec it copies no schema
// bytes, so a host registering a catalog for every session pays for a
// few words per tool rather than a deep copy.
func (t *Tool) Summary() Summary {
	s := &t.spec
	out := Summary{
		Name: s.Name, Description: s.Description, Format: s.Format,
		Idempotent: s.Idempotent, Cancellable: s.Cancellable,
		MaxAttempts: s.MaxAttempts, Deadline: s.Deadline, MaxOutputBytes: s.MaxOutputBytes,
	}
	if s.Stream != nil {
		st := *s.Stream
		out.Stream = &st
	}
	return out
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.spec.Name }

// Pool returns the pool that serves the tool (Spec.PoolName).
func (t *Tool) Pool() string { return t.spec.PoolName() }

// Format returns FormatText or FormatJSON.
func (t *Tool) Format() Format { return t.spec.Format }

// InputSchema returns the compiled input schema, or nil when there is
// none.
func (t *Tool) InputSchema() *jsonschema.Schema { return t.in }

// OutputSchema returns the compiled output schema, or nil when there is
// none.
func (t *Tool) OutputSchema() *jsonschema.Schema { return t.out }

// Redactor returns a function applying the tool's redaction rules in
// order, or nil when it has none. The function is safe for concurrent use.
func (t *Tool) Redactor() func(string) string { return t.redactor }

// ValidateInput checks that an input of a JSON tool is one JSON value
// matching the input schema; a text tool accepts any input. The error
// wraps ErrInvalidPayload and never quotes s.
func (t *Tool) ValidateInput(s string) error {
	if t.spec.Format != FormatJSON {
		return nil
	}
	return validatePayload(t.in, s, "input")
}

// ValidateOutput checks that a result of a JSON tool is one JSON value
// matching the output schema; a text tool accepts any result. The byte
// limit is the caller's to check. The error wraps ErrInvalidPayload and
// never quotes s, because outputs must never reach audit logs.
func (t *Tool) ValidateOutput(s string) error {
	if t.spec.Format != FormatJSON {
		return nil
	}
	return validatePayload(t.out, s, "output")
}
