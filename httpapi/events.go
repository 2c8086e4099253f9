package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi/apitoken"
)

// laggedBody is the data of a "lagged" event.
type laggedBody struct {
	Message string `json:"message"`
}

// events streams a session's events as Server-Sent Events: the retained
// backlog, then live events, ending after the terminal state event.
//
// A stream is exempt from the server's read and write timeouts, which are
// meant for one JSON exchange; instead each frame must be written within
// Config.StreamWriteTimeout, and a keep-alive comment goes out every
// Config.KeepAlive, so a client that stops reading is found out and
// dropped even on a quiet session. Streams are counted per host and per
// token.
func (s *server) events(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Events == nil {
		s.writeError(w, r, ErrEventsUnavailable)
		return
	}
	id := hostloop.SessionID(r.PathValue("id"))
	// Another token's session is refused before it holds a stream slot
	// or a subscription.
	if err := s.gate.may(r.Context(), apitoken.ScopeRead, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	release, err := s.streams.acquire(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer release()
	// Subscribe before asking for the status: the loop reports every
	// step to the broadcaster before it answers the next command, so a
	// status that says terminal means the whole history is already in ch
	// or was never retained.
	after, resuming := lastEventID(r.Header.Get("Last-Event-ID"), s.cfg.Events.Epoch())
	ch, cancel, gap := s.cfg.Events.SubscribeAfter(id, after)
	defer cancel()
	st, _, err := s.backend.Status(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// A client that reconnects says where it stopped. Events of this
	// process after that point are replayed from its backlog; whatever it
	// cannot replay (the events were numbered by another process or host,
	// or are no longer retained) is made up for by the session's current
	// state first.
	resync := r.Header.Get("Last-Event-ID") != "" && (!resuming || gap)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	rc := http.NewResponseController(w)
	// The server's read deadline would end the stream's context when it
	// passes (the server reads on in the background to notice a client
	// leaving); a stream reads nothing more, so it is lifted, once what
	// body the request has is read.
	r.Body = liftAfterBody(r, rc)
	// frame writes one batch under its own deadline and flushes it.
	frame := func(write func() error) error {
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamWriteTimeout))
		if err := write(); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := frame(func() error { w.WriteHeader(http.StatusOK); return nil }); err != nil {
		s.streamEnded(err, false)
		return
	}

	if resync {
		if err := frame(func() error { return writeEvent(w, "", &Event{Kind: EventState, Session: id, Status: st}) }); err != nil {
			s.streamEnded(err, false)
			return
		}
	}
	epoch := s.cfg.Events.Epoch()
	if terminal(st.State) {
		s.streamEnded(frame(func() error { return replayFinished(w, epoch, ch, id, st) }), false)
		return
	}

	keepAlive := time.NewTicker(s.cfg.KeepAlive)
	defer keepAlive.Stop()
	for {
		var (
			err          error
			more, lagged bool
		)
		select {
		case <-r.Context().Done():
			return
		case <-keepAlive.C:
			err = frame(func() error {
				_, err := io.WriteString(w, ": keepalive\n\n")
				return err
			})
		case ev, ok := <-ch:
			if !ok {
				return
			}
			err = frame(func() error {
				var err error
				more, lagged, err = writeQueued(w, epoch, ch, ev)
				return err
			})
			if !more && err == nil {
				s.streamEnded(nil, lagged)
				return
			}
		}
		if err != nil {
			s.streamEnded(err, false)
			return
		}
	}
}

// streamEnded counts a stream that ended because its client did not keep
// up: a frame that missed its write deadline, or a subscriber the
// broadcaster dropped as lagged.
func (s *server) streamEnded(err error, lagged bool) {
	if lagged || errors.Is(err, os.ErrDeadlineExceeded) {
		s.cfg.OnRefused(CodeSlowReader)
	}
}

// replayFinished writes a finished session's retained events up to its
// terminal state, or, when the backlog is gone (or was never kept), the
// state the loop holds.
func replayFinished(w io.Writer, epoch string, ch <-chan *Event, id hostloop.SessionID, st hostloop.SessionStatus) error {
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return nil
			}
			if err := writeEvent(w, epoch, ev); err != nil || ev.Terminal() {
				return err
			}
		default:
			return writeEvent(w, epoch, &Event{Kind: EventState, Session: id, Status: st})
		}
	}
}

// writeQueued writes ev and every event already queued behind it, for one
// flush; more is false once the channel is closed, lagged true when the
// broadcaster dropped the subscriber for falling behind.
func writeQueued(w io.Writer, epoch string, ch <-chan *Event, ev *Event) (more, lagged bool, err error) {
	for {
		lagged = lagged || ev.Kind == EventLagged
		if err := writeEvent(w, epoch, ev); err != nil {
			return true, lagged, err
		}
		var ok bool
		select {
		case ev, ok = <-ch:
			if !ok {
				return false, lagged, nil
			}
		default:
			return true, lagged, nil
		}
	}
}

// lastEventID reads a Last-Event-ID header: the Seq it names, and whether
// it is one of this process's (epoch).
func lastEventID(h, epoch string) (uint64, bool) {
	e, seq, ok := strings.Cut(h, ".")
	if !ok || e != epoch {
		return 0, false
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// writeEvent writes ev as one SSE event whose data is a single JSON line,
// with its id when it has one.
func writeEvent(w io.Writer, epoch string, ev *Event) error {
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
	if ev.Seq > 0 && epoch != "" {
		_, err = fmt.Fprintf(w, "id: %s.%d\nevent: %s\ndata: %s\n\n", epoch, ev.Seq, ev.Kind, b)
		return err
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Kind, b)
	return err
}
