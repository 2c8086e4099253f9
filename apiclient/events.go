package apiclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// maxEventBytes bounds one line of the event stream; a state event lists
// a session's live operations, so it is the longest, and far below this.
const maxEventBytes = 8 << 20

// EventKind names an event of the stream, as its SSE "event:" field does.
type EventKind string

// The event kinds the host sends. A kind this package does not know is
// still returned, with only Kind and Data set, so a newer host does not
// break an older client.
const (
	// EventChunk: a streaming tool released a chunk; Event.Chunk is set.
	EventChunk EventKind = "chunk"
	// EventState: the session's status changed; Event.State is set.
	EventState EventKind = "state"
	// EventAudit: the runtime recorded an audit event; Event.Audit is set.
	EventAudit EventKind = "audit"
	// EventOperation: one operation's status changed; Event.Operation is
	// set. An operation whose state is terminal has left the session's
	// live operations.
	EventOperation EventKind = "operation"
	// EventLagged: the client fell behind and the host drops the stream
	// after this event; Event.Message says so.
	EventLagged EventKind = "lagged"
)

// Event is one event of a session's stream. Exactly the field that
// matches Kind is set; Data is the event's JSON as received, for callers
// that pass it on.
type Event struct {
	Kind EventKind
	Data json.RawMessage

	Chunk     Chunk
	State     Session
	Audit     AuditEntry
	Operation Operation
	Message   string
}

// Terminal reports whether e is the session's final state: the host ends
// the stream after it.
func (e Event) Terminal() bool { return e.Kind == EventState && e.State.Terminal() }

// EventStream reads a session's Server-Sent Events. It is not safe for
// concurrent use; Close it when done.
type EventStream struct {
	ctx  context.Context
	body io.ReadCloser
	sc   *bufio.Scanner
	err  error // sticky: once set, Next returns it
}

// Events subscribes to a session's event stream: its recent history, then
// live events until the terminal state. Errors before the stream starts
// are *Error (ErrUnknownSession, ErrUnavailable when the host serves no
// streams). Cancelling ctx ends the stream; Next then returns ctx's error.
func (c *Client) Events(ctx context.Context, id string) (*EventStream, error) {
	req, err := c.newRequest(ctx, http.MethodGet, c.endpoint("v1", "sessions", id, "events"), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: events of %q came as %q, not text/event-stream", ErrBadResponse, id, resp.Header.Get("Content-Type"))
	}
	return newEventStream(ctx, resp.Body), nil
}

func newEventStream(ctx context.Context, body io.ReadCloser) *EventStream {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 4096), maxEventBytes)
	return &EventStream{ctx: ctx, body: body, sc: sc}
}

// Next returns the next event. After the terminal state event it returns
// io.EOF; a stream that ends before it (lagged, host shut down, connection
// lost) gives ErrStreamEnded, and a cancelled context its error.
func (s *EventStream) Next() (Event, error) {
	if s.err != nil {
		return Event{}, s.err
	}
	ev, err := s.next()
	if err != nil {
		s.fail(err)
		return Event{}, s.err
	}
	if ev.Terminal() {
		// Nothing follows the terminal state but the end of the
		// response, which the host sends right after it. Reading that
		// end (a few bytes at most) returns the connection to the
		// client's pool: closing the body before it would close the
		// connection, and a client following many sessions would open
		// one for each. Anything longer is not read.
		_, _ = io.Copy(io.Discard, io.LimitReader(s.body, maxTrailingBytes))
		s.fail(io.EOF)
	}
	return ev, nil
}

// maxTrailingBytes bounds what Next reads after the terminal state.
const maxTrailingBytes = 512

// Close ends the stream and releases its connection.
func (s *EventStream) Close() error {
	s.fail(errors.New("apiclient: event stream closed"))
	return nil
}

func (s *EventStream) fail(err error) {
	if s.err == nil {
		s.err = err
		s.body.Close()
	}
}

// next parses lines up to the next dispatched event, following the SSE
// rules the host relies on: "event:" names it, "data:" lines are joined
// with newlines, a blank line dispatches, ":" starts a comment, and an
// event without data is dropped.
func (s *EventStream) next() (Event, error) {
	var kind string
	var data []byte
	hasData := false
	for s.sc.Scan() {
		line := s.sc.Bytes()
		if len(line) == 0 {
			if hasData {
				return decodeEvent(kind, data)
			}
			kind = ""
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			kind = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		}
	}
	if err := s.ctx.Err(); err != nil {
		return Event{}, err
	}
	if err := s.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Event{}, fmt.Errorf("%w: event stream line over %d bytes", ErrBadResponse, maxEventBytes)
		}
		return Event{}, fmt.Errorf("%w: %w", ErrStreamEnded, err)
	}
	return Event{}, ErrStreamEnded
}

func decodeEvent(kind string, data []byte) (Event, error) {
	if kind == "" {
		kind = "message" // the SSE default name
	}
	ev := Event{Kind: EventKind(kind), Data: json.RawMessage(data)}
	var err error
	switch ev.Kind {
	case EventChunk:
		err = json.Unmarshal(data, &ev.Chunk)
	case EventState:
		err = json.Unmarshal(data, &ev.State)
	case EventAudit:
		err = json.Unmarshal(data, &ev.Audit)
	case EventOperation:
		err = json.Unmarshal(data, &ev.Operation)
	case EventLagged:
		var l struct {
			Message string `json:"message"`
		}
		err = json.Unmarshal(data, &l)
		ev.Message = l.Message
	}
	if err != nil {
		return Event{}, fmt.Errorf("%w: %s event: %v", ErrBadResponse, kind, err)
	}
	return ev, nil
}
