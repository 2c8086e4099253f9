package toolspec

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// reservedEnvPrefix marks the variables the worker sets itself for a
// process tool; a catalog may neither set nor pass them through.
const reservedEnvPrefix = "SPLASH_TOOL_"

// compiled is what checking a Spec produces besides its verdict.
type compiled struct {
	in, out *jsonschema.Schema
	rules   []redactor
}

// Validate checks s against the catalog rules, compiling its schemas and
// regexps, but does not look for its command (see Catalog.CheckCommands).
// A failure is a *FieldError.
func (s Spec) Validate() error {
	_, err := s.check(label(s.Name, ""))
	if err != nil {
		return err
	}
	return nil
}

// label is the Tool a FieldError shows: the name when it is legal, else
// fallback.
func label(name, fallback string) string {
	if protocol.ValidateToolName(name) == nil {
		return name
	}
	return fallback
}

// check validates s, reporting faults under the tool label tool.
func (s Spec) check(tool string) (compiled, *FieldError) {
	var c compiled
	fail := func(field string, format string, args ...any) (compiled, *FieldError) {
		return compiled{}, fieldErr(tool, field, fmt.Errorf(format, args...))
	}
	if err := protocol.ValidateToolName(s.Name); err != nil {
		return fail("name", "%w: %q", ErrInvalidName, clip.String(s.Name, clip.Echo))
	}
	if s.Pool != "" {
		if err := protocol.ValidateToolName(s.Pool); err != nil {
			return fail("pool", "%w: %q", ErrInvalidName, clip.String(s.Pool, clip.Echo))
		}
	}
	switch s.Format {
	case "", FormatText:
		if s.InputSchema != nil {
			return fail("input_schema", "%w: only json tools take a schema", ErrInvalidSchema)
		}
		if s.OutputSchema != nil {
			return fail("output_schema", "%w: only json tools take a schema", ErrInvalidSchema)
		}
	case FormatJSON:
		var err error
		if s.InputSchema != nil {
			if c.in, err = compileSchema(s.InputSchema); err != nil {
				return compiled{}, fieldErr(tool, "input_schema", err)
			}
		}
		if s.OutputSchema != nil {
			if c.out, err = compileSchema(s.OutputSchema); err != nil {
				return compiled{}, fieldErr(tool, "output_schema", err)
			}
		}
	default:
		return fail("format", "%w: %q is neither %q nor %q", ErrInvalidValue, clip.String(string(s.Format), clip.Echo), FormatText, FormatJSON)
	}
	if err := inRange(s.MaxAttempts, 0, MaxAttemptsLimit); err != nil {
		return compiled{}, fieldErr(tool, "max_attempts", err)
	}
	if d := time.Duration(s.Deadline); d != 0 && (d < MinDeadline || d > MaxDeadline) {
		return fail("deadline", "%w: %s is not between %s and %s", ErrOutOfRange, d, MinDeadline, MaxDeadline)
	}
	if err := inRange(s.MaxOutputBytes, 0, MaxOutputBytesLimit); err != nil {
		return compiled{}, fieldErr(tool, "max_output_bytes", err)
	}
	if s.Stream != nil {
		if field, err := s.Stream.check(); err != nil {
			return compiled{}, fieldErr(tool, "stream."+field, err)
		}
	}
	for i, r := range s.Redact {
		rr, field, err := r.compile()
		if err != nil {
			return compiled{}, fieldErr(tool, "redact["+strconv.Itoa(i)+"]"+field, err)
		}
		c.rules = append(c.rules, rr)
	}
	if s.Process != nil {
		if field, err := s.Process.check(); err != nil {
			return compiled{}, fieldErr(tool, joinPath("process", field), err)
		}
	}
	if s.MCP != nil {
		switch {
		case s.Process != nil:
			return fail("mcp", "%w: a tool runs as a process or from an mcp server, not both", ErrInvalidValue)
		case s.Format != FormatJSON:
			// MCP arguments are a JSON object and results may be
			// structured: a text tool has no faithful mapping.
			return fail("format", "%w: an mcp tool takes JSON arguments; set format: json", ErrInvalidValue)
		}
		if field, err := s.MCP.check(); err != nil {
			return compiled{}, fieldErr(tool, joinPath("mcp", field), err)
		}
	}
	return c, nil
}

// inRange refuses n outside [lo, hi].
func inRange(n, lo, hi int) error {
	if n < lo || n > hi {
		return fmt.Errorf("%w: %d is not between %d and %d", ErrOutOfRange, n, lo, hi)
	}
	return nil
}

// check returns the JSON key of the first bad bound and why.
func (p StreamPolicy) check() (string, error) {
	bounds := []struct {
		field string
		n, hi int
	}{
		{"max_chunks", p.MaxChunks, MaxStreamChunks},
		{"max_chunk_bytes", p.MaxChunkBytes, MaxStreamChunkBytes},
		{"max_source_bytes", p.MaxSourceBytes, MaxStreamBytes},
		{"max_released_bytes", p.MaxReleasedBytes, MaxStreamBytes},
	}
	for _, b := range bounds {
		if err := inRange(b.n, 1, b.hi); err != nil {
			return b.field, err
		}
	}
	return "", nil
}

// check returns the JSON path, relative to the process, of the first bad
// field and why. Values may hold secrets (an environment value, an
// argument), so only names and paths are ever quoted.
func (p *Process) check() (string, error) {
	if len(p.Command) == 0 {
		return "command", fmt.Errorf("%w: empty command", ErrInvalidValue)
	}
	for i, arg := range p.Command {
		if arg == "" || strings.IndexByte(arg, 0) >= 0 {
			return "command[" + strconv.Itoa(i) + "]", fmt.Errorf("%w: an argument must be non-empty and hold no NUL byte", ErrInvalidValue)
		}
	}
	if strings.IndexByte(p.Dir, 0) >= 0 {
		return "dir", fmt.Errorf("%w: NUL byte in path", ErrInvalidValue)
	}
	seen := map[string]bool{}
	for i, e := range p.Env {
		field := "env[" + strconv.Itoa(i) + "]"
		name, value, _ := strings.Cut(e, "=")
		switch {
		case !envName.MatchString(name):
			return field, fmt.Errorf("%w: %q is not a variable name", ErrInvalidValue, clip.String(name, clip.Echo))
		case strings.HasPrefix(name, reservedEnvPrefix):
			return field, fmt.Errorf("%w: %s is reserved for the worker", ErrInvalidValue, clip.String(name, clip.Echo))
		case seen[name]:
			return field, fmt.Errorf("%w: %s is listed twice", ErrInvalidValue, clip.String(name, clip.Echo))
		case strings.IndexByte(value, 0) >= 0:
			return field, fmt.Errorf("%w: NUL byte in the value of %s", ErrInvalidValue, clip.String(name, clip.Echo))
		}
		seen[name] = true
	}
	if err := inRange(p.Concurrency, 0, MaxConcurrency); err != nil {
		return "concurrency", err
	}
	if p.Contain != nil && p.Contain.Disabled && (p.Contain.Network || p.Contain.ROBinds != nil || p.Contain.RWBinds != nil) {
		return "contain", fmt.Errorf("%w: contain: false has no settings", ErrInvalidValue)
	}
	return p.checkSandbox()
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parseBind splits "path" or "src:dst" into source and destination, both
// absolute.
func parseBind(b string) (src, dst string, err error) {
	src, dst, found := strings.Cut(b, ":")
	if !found {
		dst = src
	}
	if !filepath.IsAbs(src) || !filepath.IsAbs(dst) || strings.Contains(dst, ":") || strings.IndexByte(b, 0) >= 0 {
		return "", "", fmt.Errorf("%w: %q is not \"path\" or \"src:dst\" with absolute paths", ErrInvalidValue, clip.String(b, clip.Echo))
	}
	return src, dst, nil
}
