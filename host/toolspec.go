package host

import (
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

// RegisterTool registers an external tool from its definition: policy,
// declarations, format, the contract's schemas (compiled once, when the
// definition was compiled, and shared by every session that registers
// it) and the declarative redaction rules as the tool's redactor. Every
// invocation of the tool carries the definition's digest and its
// idempotent and cancellable declarations, so a worker holding another
// definition refuses the call.
func (r *Runtime) RegisterTool(t *toolspec.Tool) error {
	if t == nil {
		return fmt.Errorf("%w: nil tool definition", ErrInvalidInput)
	}
	s := t.Summary()
	p := NewToolPolicy(s.Name).WithMaxAttempts(s.MaxAttempts).
		WithDeadline(time.Duration(s.Deadline)).WithOutputLimit(s.MaxOutputBytes)
	if st := s.Stream; st != nil {
		p = p.WithStream(NewToolStreamPolicy(st.MaxChunks, st.MaxChunkBytes, st.MaxSourceBytes, st.MaxReleasedBytes))
	}
	// The definition is compiled already: registering it compiles nothing.
	if err := r.register(p, t.Format(), true, toolImpl{def: t}); err != nil {
		return err
	}
	rt := r.tools[s.Name]
	rt.redactor = t.Redactor()
	rt.contract = &protocol.Contract{Digest: t.Digest(), Idempotent: s.Idempotent, Cancellable: s.Cancellable}
	return nil
}

// RegisterTools registers every tool of set; it is what a LoopConfig's
// Catalog does with a catalog snapshot. A session registers the snapshot
// it started with and keeps it, however the catalog changes later.
func (r *Runtime) RegisterTools(set *toolspec.Set) error {
	for _, t := range set.Tools() {
		if err := r.RegisterTool(t); err != nil {
			return fmt.Errorf("host: tool %q: %w", t.Name(), err)
		}
	}
	return nil
}

// ToolDigests returns the digest of every tool registered from a
// definition, by name: what a durable session pins, so it is never
// resumed under other definitions.
func (r *Runtime) ToolDigests() map[string]string {
	out := make(map[string]string)
	for name, t := range r.tools {
		if t.contract != nil {
			out[name] = t.contract.Digest
		}
	}
	return out
}
