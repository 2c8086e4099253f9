package httpapi

import (
	"fmt"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
	"net/http"
	"slices"
	"strings"
)

// workers lists every worker seen within the window, most recent first,
// with the tools it served.
func (s *server) workers(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Index == nil {
		s.writeError(w, r, fmt.Errorf("%w: GET /v1/workers needs a session index", ErrNotServed))
		return
	}
	byID := make(map[string]*apiwire.Worker)
	lists := listsTool(r)
	for tool, ws := range s.cfg.Index.seen() {
		if !lists(tool) {
			// A token is shown the workers of its own tools.
			continue
		}
		for _, wk := range ws {
			cur := byID[wk.ID]
			if cur == nil {
				cur = &apiwire.Worker{ID: wk.ID}
				byID[wk.ID] = cur
			}
			if wk.LastSeen.After(cur.LastSeen) {
				cur.LastSeen = wk.LastSeen
			}
			cur.Answered += wk.Answered
			cur.Tools = append(cur.Tools, tool)
		}
	}
	out := apiwire.WorkerList{Workers: make([]apiwire.Worker, 0, len(byID))}
	for _, wk := range byID {
		slices.Sort(wk.Tools)
		out.Workers = append(out.Workers, *wk)
	}
	slices.SortFunc(out.Workers, func(a, b apiwire.Worker) int {
		if c := b.LastSeen.Compare(a.LastSeen); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	writeJSON(w, http.StatusOK, out)
}
