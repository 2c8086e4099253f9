package httpapi

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
	"github.com/splashfabric/splashfabric/metrics"
)

// SeriesSource gives the per-tool series GET /v1/metrics/tools serves.
// *metrics.Series satisfies it.
type SeriesSource interface {
	Snapshot() []metrics.ToolSeries
	Interval() time.Duration
}

func (s *server) toolSeries(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Series == nil {
		s.writeError(w, r, fmt.Errorf("%w: per-tool series (Config.Series)", ErrNotServed))
		return
	}
	out := apiwire.ToolSeriesList{IntervalMS: s.cfg.Series.Interval().Milliseconds(), Tools: []apiwire.ToolSeries{}}
	for _, ts := range s.cfg.Series.Snapshot() {
		wt := apiwire.ToolSeries{Tool: ts.Tool, Points: make([]apiwire.SeriesPoint, 0, len(ts.Points))}
		for _, p := range ts.Points {
			wt.Points = append(wt.Points, apiwire.SeriesPoint{T: p.At.UnixMilli(), Calls: p.Calls, Retries: p.Retries, Failures: p.Failures,
				P50: finite(p.P50), P99: finite(p.P99), Queued: p.Queued, InFlight: p.InFlight})
		}
		out.Tools = append(out.Tools, wt)
	}
	writeJSON(w, http.StatusOK, out)
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// timeline answers a session's timeline, for a token that may read the
// session: its status comes from the loop (through the gate), what
// happened to its operations from the Timelines observer.
func (s *server) timeline(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Timelines == nil {
		s.writeError(w, r, fmt.Errorf("%w: timelines (Config.Timelines)", ErrNotServed))
		return
	}
	st, _, err := s.backend.Status(r.Context(), hostloop.SessionID(r.PathValue("id")))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, _ := s.cfg.Timelines.timeline(st.ID)
	sess := s.sessionOf(st)
	out.State, out.TraceID, out.TraceURL = sess.State, sess.TraceID, sess.TraceURL
	if out.Created.IsZero() {
		out.Created = sess.Created
	}
	writeJSON(w, http.StatusOK, out)
}
