package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/splashfabric/splashfabric/httpapi/apitoken"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
	"github.com/splashfabric/splashfabric/toolspec"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// ToolSource is what GET /v1/tools reads: the host's current catalog and,
// per tool, its worker pool's consumer.
type ToolSource interface {
	// Catalog returns the tools new sessions may use.
	Catalog() *toolspec.Set
	// Pool reads tool's consumer; ok is false when no pool has bound
	// the tool yet.
	Pool(ctx context.Context, tool string) (p apiwire.Pool, ok bool, err error)
}

// tools lists the catalog, each tool with its pool and the workers seen
// serving it.
func (s *server) tools(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Tools == nil {
		s.writeError(w, r, fmt.Errorf("%w: GET /v1/tools needs a tool source", ErrNotServed))
		return
	}
	var seen map[string][]apiwire.Worker
	if s.cfg.Index != nil {
		seen = s.cfg.Index.seen()
	}
	set := s.cfg.Tools.Catalog()
	out := apiwire.ToolList{Tools: []apiwire.Tool{}}
	lists := listsTool(r)
	if set != nil {
		for _, t := range set.Tools() {
			if !lists(t.Name()) {
				continue
			}
			tool := toolOf(t)
			pool, ok, err := s.cfg.Tools.Pool(r.Context(), t.Name())
			switch {
			case err != nil:
				tool.PoolError = clip.String(err.Error(), clip.Echo)
			case ok:
				tool.Pool = &pool
			}
			tool.Workers = append([]apiwire.Worker{}, seen[t.Name()]...)
			out.Tools = append(out.Tools, tool)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// toolOf is t's definition as scripts see it: how it runs (command,
// environment) and how its output is redacted (the very strings to hide)
// are left out, but not whether it runs outside a sandbox.
func toolOf(t *toolspec.Tool) apiwire.Tool {
	sp := t.Spec()
	out := apiwire.Tool{
		Name:           sp.Name,
		Description:    sp.Description,
		Format:         string(sp.Format),
		InputSchema:    sp.InputSchema,
		OutputSchema:   sp.OutputSchema,
		Idempotent:     sp.Idempotent,
		Cancellable:    sp.Cancellable,
		MaxAttempts:    sp.MaxAttempts,
		MaxOutputBytes: sp.MaxOutputBytes,
		Digest:         t.Digest(),
	}
	if d := time.Duration(sp.Deadline); d > 0 {
		out.Deadline = d.String()
	}
	if st := sp.Stream; st != nil {
		out.Stream = &apiwire.ToolStream{MaxChunks: st.MaxChunks, MaxChunkBytes: st.MaxChunkBytes, MaxSourceBytes: st.MaxSourceBytes, MaxReleasedBytes: st.MaxReleasedBytes}
	}
	switch {
	case sp.Process != nil:
		out.Uncontained = !sp.Process.Contain.Enabled()
	case sp.MCP != nil:
		out.Uncontained = !sp.MCP.Contain.Enabled()
	}
	return out
}

// listsTool returns the filter of the tools r's token is shown: those its
// sessions may use, or every one for an admin.
func listsTool(r *http.Request) func(tool string) bool {
	t, ok := apitoken.FromContext(r.Context())
	switch {
	case !ok:
		return func(string) bool { return false }
	case t.Admin():
		return func(string) bool { return true }
	}
	return t.MayUse
}
