package toolspec

import (
	"encoding/json"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// Format says whether a tool takes and returns plain text or JSON values.
type Format = protocol.PayloadFormat

// The two tool formats. An empty Format in a Spec means FormatText.
const (
	FormatText = protocol.FormatText
	FormatJSON = protocol.FormatJSON
)

// Bounds a Spec must respect. They exist so that one catalog line cannot
// make a host or worker hold unbounded memory or work.
const (
	// MaxAttemptsLimit bounds Spec.MaxAttempts.
	MaxAttemptsLimit = 100
	// MinDeadline is the shortest non-zero Spec.Deadline: the wire
	// carries deadlines in milliseconds, so a shorter one would round to
	// "no deadline".
	MinDeadline = time.Millisecond
	// MaxDeadline bounds Spec.Deadline.
	MaxDeadline = 24 * time.Hour
	// DefaultMaxOutputBytes is the output limit of a Spec that sets none.
	DefaultMaxOutputBytes = 1 << 20
	// MaxOutputBytesLimit bounds Spec.MaxOutputBytes: a result travels in
	// one message, and a message is at most 1 MiB.
	MaxOutputBytesLimit = 1 << 20
	// MaxConcurrency bounds Process.Concurrency.
	MaxConcurrency = 1024
	// MaxStreamChunks bounds StreamPolicy.MaxChunks.
	MaxStreamChunks = 1 << 20
	// MaxStreamChunkBytes bounds StreamPolicy.MaxChunkBytes, for the same
	// reason as MaxOutputBytesLimit.
	MaxStreamChunkBytes = 1 << 20
	// MaxStreamBytes bounds StreamPolicy.MaxSourceBytes and
	// StreamPolicy.MaxReleasedBytes.
	MaxStreamBytes = 64 << 20
)

// Spec is one tool definition as written in a catalog. The host and the
// worker read the same Spec; the parts both must agree on are covered by
// Tool.Digest.
type Spec struct {
	// Name is a legal protocol tool name, unique within a catalog.
	Name string `json:"name"`
	// Description is for people and for script authors' tooling.
	Description string `json:"description,omitempty"`
	// Format is FormatText or FormatJSON; "" means FormatText.
	Format Format `json:"format,omitempty"`
	// InputSchema is a JSON Schema (an object, or true/false) every input
	// must match. JSON tools only.
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// OutputSchema is a JSON Schema every successful result must match.
	// JSON tools only.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Idempotent declares that repeating the effect is harmless, so a
	// worker may run a crashed attempt again instead of reporting it as
	// indeterminate.
	Idempotent bool `json:"idempotent,omitempty"`
	// Cancellable declares that the tool honours cooperative cancellation.
	Cancellable bool `json:"cancellable,omitempty"`
	// MaxAttempts bounds dispatch attempts of one operation, 1 to
	// MaxAttemptsLimit; 0 means 1 (no retries).
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Deadline bounds an operation from its start, MinDeadline to
	// MaxDeadline; 0 means none.
	Deadline Duration `json:"deadline,omitempty"`
	// MaxOutputBytes bounds the terminal result, 1 to
	// MaxOutputBytesLimit; 0 means DefaultMaxOutputBytes.
	MaxOutputBytes int `json:"max_output_bytes,omitempty"`
	// Stream enables chunked progress output under these bounds.
	Stream *StreamPolicy `json:"stream,omitempty"`
	// Redact lists rewrites the host applies, in order, to everything the
	// tool returns before a script or a log sees it. Host only.
	Redact []RedactRule `json:"redact,omitempty"`
	// Process makes the worker agent run the tool as a child process.
	// Worker only.
	Process *Process `json:"process,omitempty"`
	// MCP makes the worker agent serve the tool from an MCP server it
	// runs; a tool has a Process or an MCP, not both. Worker only.
	MCP *MCP `json:"mcp,omitempty"`
	// Pool names the worker pool that serves the tool: the workers that
	// hold that pool's NATS identity and key ring, and only theirs
	// (docs/topology.md, "Pools"). Tools that share a pool share its
	// credentials; "" means a pool of the tool alone, named as the tool.
	// It is a legal tool name. Where a tool runs, not what it does, so it
	// is not part of the digest.
	Pool string `json:"pool,omitempty"`
}

// PoolName returns the pool that serves the tool: Pool, or the tool's own
// name when Pool is empty.
func (s Spec) PoolName() string {
	if s.Pool != "" {
		return s.Pool
	}
	return s.Name
}

// StreamPolicy bounds the progress output of one operation across all of
// its attempts. Every bound must be positive.
type StreamPolicy struct {
	// MaxChunks bounds the number of chunks, at most MaxStreamChunks.
	MaxChunks int `json:"max_chunks"`
	// MaxChunkBytes bounds one chunk's source bytes, at most
	// MaxStreamChunkBytes.
	MaxChunkBytes int `json:"max_chunk_bytes"`
	// MaxSourceBytes bounds all chunks' source bytes, at most
	// MaxStreamBytes.
	MaxSourceBytes int `json:"max_source_bytes"`
	// MaxReleasedBytes bounds all chunks' bytes after redaction, at most
	// MaxStreamBytes.
	MaxReleasedBytes int `json:"max_released_bytes"`
}

// Limits converts the policy to the form an invoke message carries.
func (p StreamPolicy) Limits() protocol.StreamLimits {
	return protocol.StreamLimits{MaxChunks: p.MaxChunks, MaxChunkBytes: p.MaxChunkBytes,
		MaxSourceBytes: p.MaxSourceBytes, MaxReleasedBytes: p.MaxReleasedBytes}
}

// RedactRule replaces every match of Literal or Regexp (exactly one of
// them) with Replace. Replace is literal: "$1" is not expanded.
type RedactRule struct {
	// Literal is a non-empty string to replace.
	Literal string `json:"literal,omitempty"`
	// Regexp is a Go (RE2) regular expression that must not match the
	// empty string.
	Regexp string `json:"regexp,omitempty"`
	// Replace is the text put in place of each match; it may be empty.
	Replace string `json:"replace"`
}

// Process says how a worker agent runs a tool as a child process. It
// describes how the tool runs, not what it does, so it is not part of the
// digest.
type Process struct {
	// Command is the argv, non-empty with non-empty elements. A Command[0]
	// without a slash is looked up in the worker's PATH; one with a slash
	// is relative to Dir.
	Command []string `json:"command"`
	// Dir is the working directory. Parse resolves it against the
	// catalog file's directory, which is also its default.
	Dir string `json:"dir,omitempty"`
	// Env is the process's whole environment besides the SPLASH_TOOL_*
	// variables the worker sets: "NAME=value" sets a variable, "NAME"
	// passes the worker's own value through.
	Env []string `json:"env,omitempty"`
	// Concurrency bounds calls in flight per process, 1 to
	// MaxConcurrency; 0 means 1.
	Concurrency int `json:"concurrency,omitempty"`
	// Contain is the sandbox the process runs in. Every process runs
	// contained: nil is the default sandbox, and only `contain: false`
	// (Contain.Disabled) runs it as the worker's own child.
	Contain *Contain `json:"contain,omitempty"`
	// Limits bounds what the contained process may use; nil, and each
	// zero field, takes the worker's default.
	Limits *Limits `json:"limits,omitempty"`
	// CancelGrace is how long a cancelled call may run on before the
	// worker stops its process; 0 means the worker's default (10s).
	CancelGrace Duration `json:"cancel_grace,omitempty"`
}

// clone returns a deep copy of s, so that no slice or pointer is shared.
func (s Spec) clone() Spec {
	s.InputSchema = cloneBytes(s.InputSchema)
	s.OutputSchema = cloneBytes(s.OutputSchema)
	if s.Stream != nil {
		st := *s.Stream
		s.Stream = &st
	}
	if s.Redact != nil {
		s.Redact = append([]RedactRule(nil), s.Redact...)
	}
	if s.Process != nil {
		p := *s.Process
		p.Command = cloneStrings(p.Command)
		p.Env = cloneStrings(p.Env)
		p.Contain = p.Contain.clone()
		p.Limits = p.Limits.clone()
		s.Process = &p
	}
	if s.MCP != nil {
		s.MCP = s.MCP.clone()
	}
	return s
}

// withDefaults returns s with the defaults written out, so readers never
// interpret a zero.
func (s Spec) withDefaults() Spec {
	if s.Format == "" {
		s.Format = FormatText
	}
	if s.MaxAttempts == 0 {
		s.MaxAttempts = 1
	}
	if s.MaxOutputBytes == 0 {
		s.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if s.Process != nil && s.Process.Concurrency == 0 {
		s.Process.Concurrency = 1
	}
	if s.MCP != nil && s.MCP.Concurrency == 0 {
		s.MCP.Concurrency = 1
	}
	return s
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string{}, s...)
}
