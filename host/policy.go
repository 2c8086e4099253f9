package host

import (
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// Format says whether a tool takes and returns plain text or JSON values.
type Format = protocol.PayloadFormat

// The two tool formats.
const (
	FormatText = protocol.FormatText
	FormatJSON = protocol.FormatJSON
)

// ToolStreamPolicy bounds the progress output of one external operation,
// across all of its attempts. Every bound must be positive.
type ToolStreamPolicy struct {
	MaxChunks        int // chunks per operation
	MaxChunkBytes    int // source bytes of one chunk
	MaxSourceBytes   int // source bytes of all chunks
	MaxReleasedBytes int // bytes of all chunks after redaction
}

// NewToolStreamPolicy returns a stream policy with the four bounds.
func NewToolStreamPolicy(chunks, chunkBytes, sourceBytes, releasedBytes int) ToolStreamPolicy {
	return ToolStreamPolicy{MaxChunks: chunks, MaxChunkBytes: chunkBytes, MaxSourceBytes: sourceBytes, MaxReleasedBytes: releasedBytes}
}

// Limits converts the policy to the form a worker receives.
func (s ToolStreamPolicy) Limits() protocol.StreamLimits {
	return protocol.StreamLimits{MaxChunks: s.MaxChunks, MaxChunkBytes: s.MaxChunkBytes,
		MaxSourceBytes: s.MaxSourceBytes, MaxReleasedBytes: s.MaxReleasedBytes}
}

// StreamUsage is what an operation's stream has used of its policy so
// far, across its attempts.
type StreamUsage struct {
	Chunks, SourceBytes, ReleasedBytes int
}

func (s ToolStreamPolicy) validate() error {
	if s.MaxChunks <= 0 || s.MaxChunkBytes <= 0 || s.MaxSourceBytes <= 0 || s.MaxReleasedBytes <= 0 {
		return fmt.Errorf("%w: stream bounds must be positive: %+v", ErrInvalidInput, s)
	}
	return nil
}

// ToolPolicy is the host's policy for one tool, fixed at registration.
type ToolPolicy struct {
	// Name is the tool's name, a legal protocol tool name.
	Name string
	// MaxAttempts bounds dispatch attempts of one external operation;
	// 0 means 1 (no retries).
	MaxAttempts int
	// MaxDeferredDuration bounds an operation from the moment it is
	// started; 0 means no deadline.
	MaxDeferredDuration time.Duration
	// MaxOutputBytes bounds the terminal result; 0 means
	// DefaultMaxOutputBytes.
	MaxOutputBytes int
	// Stream enables chunked progress output for external tools.
	Stream *ToolStreamPolicy
}

// NewToolPolicy returns the default policy for a tool named name.
func NewToolPolicy(name string) ToolPolicy { return ToolPolicy{Name: name} }

// WithMaxAttempts returns p allowing n dispatch attempts.
func (p ToolPolicy) WithMaxAttempts(n int) ToolPolicy { p.MaxAttempts = n; return p }

// WithDeadline returns p with a deadline of d from start.
func (p ToolPolicy) WithDeadline(d time.Duration) ToolPolicy { p.MaxDeferredDuration = d; return p }

// WithOutputLimit returns p bounding terminal results to n bytes.
func (p ToolPolicy) WithOutputLimit(n int) ToolPolicy { p.MaxOutputBytes = n; return p }

// WithStream returns p with streaming enabled under s.
func (p ToolPolicy) WithStream(s ToolStreamPolicy) ToolPolicy { p.Stream = &s; return p }

// normalize validates p and fills its defaults. The stream policy is
// copied so the caller cannot change it after registration.
func (p ToolPolicy) normalize() (ToolPolicy, error) {
	if err := protocol.ValidateToolName(p.Name); err != nil {
		return p, fmt.Errorf("%w: %q: %v", ErrInvalidToolName, p.Name, err)
	}
	switch {
	case p.MaxAttempts < 0:
		return p, fmt.Errorf("%w: max attempts %d", ErrInvalidInput, p.MaxAttempts)
	case p.MaxDeferredDuration < 0:
		return p, fmt.Errorf("%w: deadline %s", ErrInvalidInput, p.MaxDeferredDuration)
	case p.MaxOutputBytes < 0:
		return p, fmt.Errorf("%w: output limit %d", ErrInvalidInput, p.MaxOutputBytes)
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = 1
	}
	if p.MaxOutputBytes == 0 {
		p.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if p.Stream != nil {
		if err := p.Stream.validate(); err != nil {
			return p, err
		}
		s := *p.Stream
		p.Stream = &s
	}
	return p, nil
}
