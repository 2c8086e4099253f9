package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/splashfabric/splashfabric/hostloop"
)

// laggedBody is the data of a "lagged" event.
type laggedBody struct {
	Message string `json:"message"`
}

// events streams a session's events as Server-Sent Events: the retained
// backlog, then live events, ending after the terminal state event.
func (s *server) events(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Events == nil {
		s.writeError(w, r, ErrEventsUnavailable)
		return
	}
	id := hostloop.SessionID(r.PathValue("id"))
	// Subscribe before asking for the status: the loop reports every
	// step to the broadcaster before it answers the next command, so a
	// status that says terminal means the whole history is already in ch
	// or was never retained.
	ch, cancel := s.cfg.Events.Subscribe(id)
	defer cancel()
	st, _, err := s.backend.Status(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// A stream outlives any server write timeout meant for JSON calls.
	_ = rc.SetWriteDeadline(time.Time{})
	if err := rc.Flush(); err != nil {
		return
	}

	if terminal(st.State) {
		for {
			select {
			case ev, ok := <-ch:
				if !ok || writeEvent(w, ev) != nil || ev.Terminal() {
					_ = rc.Flush()
					return
				}
				continue
			default:
			}
			// The backlog is gone (or was never kept): end with the
			// state the loop holds.
			_ = writeEvent(w, Event{Kind: EventState, Session: id, Status: st})
			_ = rc.Flush()
			return
		}
	}

	keepAlive := time.NewTicker(s.cfg.KeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepAlive.C:
			if _, err := io.WriteString(w, ": keepalive\n\n"); err != nil {
				return
			}
		case ev, ok := <-ch:
			if !ok {
				return
			}
			if err := writeEvent(w, ev); err != nil {
				return
			}
			// Write everything already queued before one flush.
			for drained := false; !drained; {
				select {
				case more, ok := <-ch:
					if !ok {
						_ = rc.Flush()
						return
					}
					if err := writeEvent(w, more); err != nil {
						return
					}
				default:
					drained = true
				}
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// writeEvent writes ev as one SSE event whose data is a single JSON line.
func writeEvent(w io.Writer, ev Event) error {
	var data any
	switch ev.Kind {
	case EventState:
		data = sessionOf(ev.Status)
	case EventChunk:
		data = chunkOf(ev.Chunk)
	case EventAudit:
		data = auditEntryOf(ev.Audit)
	case EventOperation:
		data = operationsOf([]hostloop.OperationStatus{ev.Operation})[0]
	case EventLagged:
		data = laggedBody{Message: "stream fell behind and was dropped; GET the session or subscribe again"}
	default:
		return nil
	}
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Kind, b)
	return err
}
