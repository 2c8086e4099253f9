package toolspec

import (
	"errors"
	"strconv"
	"strings"
)

// ErrInvalidCatalog matches every error that Parse, Load, ParseSpec,
// Spec.Validate, Spec.Compile, Catalog.Compile, Catalog.CheckCommands,
// Catalog.CheckSandboxes and NewSet return: each is a *FieldError, which also wraps one of the more
// specific sentinels below.
var ErrInvalidCatalog = errors.New("invalid tool catalog")

// The specific reasons a catalog or a tool definition is refused. Each is
// wrapped in a *FieldError naming the tool and the field.
var (
	// ErrUnknownField reports a key the format does not define, at any
	// depth. A misspelt key is refused rather than ignored, since ignoring
	// it would silently drop a limit or a sandbox setting.
	ErrUnknownField = errors.New("unknown field")
	// ErrInvalidName reports a tool name that protocol.ValidateToolName
	// refuses.
	ErrInvalidName = errors.New("invalid tool name")
	// ErrInvalidSchema reports an input or output schema that is not a
	// JSON object or boolean, does not compile as JSON Schema, or is given
	// for a text tool.
	ErrInvalidSchema = errors.New("invalid schema")
	// ErrOutOfRange reports a number or duration outside its documented
	// bounds.
	ErrOutOfRange = errors.New("out of range")
	// ErrInvalidValue reports a value of the wrong type or shape: a number
	// where a duration string belongs, an unknown format, a bad regexp,
	// environment entry or bind, an empty command, a missing directory.
	ErrInvalidValue = errors.New("invalid value")
	// ErrDuplicateTool reports a second definition of a tool name within
	// one catalog or Set.
	ErrDuplicateTool = errors.New("duplicate tool")
	// ErrCommandNotFound reports, from Catalog.CheckCommands, a process
	// command that cannot be found or is not executable where the worker
	// runs.
	ErrCommandNotFound = errors.New("command not found")
	// ErrUnsafeBind reports a sandbox that would hold what it must not:
	// a bind of /, or (from Catalog.CheckSandboxes) a directory or bind
	// that is, holds or lies inside one of the worker's secrets or holds
	// its home.
	ErrUnsafeBind = errors.New("unsafe bind")
)

// ErrNotFound reports a lookup of a tool that no catalog defines. A Set's
// Lookup reports a miss with a bool; callers that turn a miss into an
// error (a KV read, an API handler) wrap this sentinel so the reason is
// matched the same way everywhere.
var ErrNotFound = errors.New("toolspec: tool not found")

// ErrInvalidPayload reports, from Tool.ValidateInput and
// Tool.ValidateOutput, a value of a JSON tool that is not one JSON value or
// does not match the tool's schema. Its text names the schema location,
// never the value, because outputs must not leak into audit logs.
var ErrInvalidPayload = errors.New("toolspec: payload breaks the tool's contract")

// FieldError says which tool and which field of a catalog are wrong.
type FieldError struct {
	// Tool is the tool's name, or "#N" (N the entry's 0-based index in
	// tools) when the entry has no usable name, or "" for a fault outside
	// any tool entry.
	Tool string
	// Field is the JSON path of the field, such as "process.command",
	// "stream.max_chunks" or "redact[1].regexp"; "" when the fault is the
	// whole document or entry.
	Field string
	// Err is the reason; it wraps one of the package's sentinels.
	Err error
}

// Error reads like `toolspec: tool "demo.sum": field "input_schema": why`.
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString("toolspec: ")
	if e.Tool != "" {
		b.WriteString("tool ")
		b.WriteString(strconv.Quote(e.Tool))
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString("field ")
		b.WriteString(strconv.Quote(e.Field))
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString(ErrInvalidCatalog.Error())
	}
	return b.String()
}

// Unwrap returns the specific reason.
func (e *FieldError) Unwrap() error { return e.Err }

// Is makes every FieldError match ErrInvalidCatalog.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidCatalog }

// fieldErr builds a FieldError.
func fieldErr(tool, field string, err error) *FieldError {
	return &FieldError{Tool: tool, Field: field, Err: err}
}

// maxMessage bounds how much of a library's error message, which may quote
// the value it refused, an error repeats: catalogs can hold secrets, and
// errors travel to logs. A value itself is repeated up to clip.Echo.
const maxMessage = 100
