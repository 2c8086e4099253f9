package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	id   string
	name string
	data string
}

// readSSE parses events from r until it ends, sending each on the
// returned channel, which is closed at the end of the stream.
func readSSE(r io.Reader) <-chan sseEvent {
	out := make(chan sseEvent, 1024)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					out <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return out
}

// openEvents starts a stream and returns its events; the stream is closed
// when the test ends.
func openEvents(t *testing.T, client *http.Client, url string) <-chan sseEvent {
	t.Helper()
	return openEventsAfter(t, client, url, "")
}

// openEventsAfter opens a stream as a client reconnecting after the event
// lastID ("" for none).
func openEventsAfter(t *testing.T, client *http.Client, url, lastID string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ch := readSSE(resp.Body)
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		for range ch {
		}
	})
	return ch
}

// collect reads events until the stream ends.
func collect(ch <-chan sseEvent) []sseEvent {
	var out []sseEvent
	for ev := range ch {
		out = append(out, ev)
	}
	return out
}

func eventNames(evs []sseEvent) string {
	var names []string
	for _, e := range evs {
		names = append(names, e.name)
	}
	return strings.Join(names, ",")
}

func TestEventsStreamChunksInOrderThenTerminalState(t *testing.T) {
	e := newAPIEnv(t, nil)
	e.do(t, http.MethodPost, "/v1/sessions", testToken, `{"source":"1"}`)
	ch := openEvents(t, e.srv.Client(), e.srv.URL+"/v1/sessions/s-1/events")
	// The backlog replays what happened before the stream opened.
	first := <-ch
	second := <-ch
	if first.name != "audit" || second.name != "state" {
		t.Fatalf("replay %v %v", first, second)
	}
	for i, text := range []string{"a", "b", "c"} {
		e.backend.chunk("s-1", i, text)
	}
	e.backend.finish("s-1", "done")
	rest := collect(ch)
	if got := eventNames(rest); got != "chunk,chunk,chunk,state" {
		t.Fatalf("events %s", got)
	}
	for i, want := range []string{"a", "b", "c"} {
		var c struct {
			Index int
			Text  string
		}
		if err := json.Unmarshal([]byte(rest[i].data), &c); err != nil || c.Index != i || c.Text != want {
			t.Fatalf("chunk %d: %s (%v)", i, rest[i].data, err)
		}
	}
	if !strings.Contains(rest[3].data, `"state":"completed"`) || !strings.Contains(rest[3].data, `"value":"done"`) {
		t.Fatalf("terminal %s", rest[3].data)
	}
}

func TestEventsOfFinishedSessionReplayAndEnd(t *testing.T) {
	e := newAPIEnv(t, nil)
	e.do(t, http.MethodPost, "/v1/sessions", testToken, `{"source":"1"}`)
	e.backend.chunk("s-1", 0, "early")
	e.backend.finish("s-1", "v")
	got := collect(openEvents(t, e.srv.Client(), e.srv.URL+"/v1/sessions/s-1/events"))
	if names := eventNames(got); names != "audit,state,chunk,state" {
		t.Fatalf("events %s", names)
	}
}

func TestEventsOfFinishedSessionWithoutBacklogEndWithState(t *testing.T) {
	e := newAPIEnv(t, nil)
	e.do(t, http.MethodPost, "/v1/sessions", testToken, `{"source":"1"}`)
	e.backend.finish("s-1", "v")
	// Push the session out of the broadcaster's finished window.
	for range 80 {
		e.do(t, http.MethodPost, "/v1/sessions", testToken, `{"source":"1"}`)
	}
	for i := 2; i <= 81; i++ {
		e.backend.finish(sessionID(i), "v")
	}
	got := collect(openEvents(t, e.srv.Client(), e.srv.URL+"/v1/sessions/s-1/events"))
	if names := eventNames(got); names != "state" || !strings.Contains(got[0].data, `"completed"`) {
		t.Fatalf("events %v", got)
	}
}

func TestEventsEndOnBroadcasterClose(t *testing.T) {
	e := newAPIEnv(t, nil)
	e.do(t, http.MethodPost, "/v1/sessions", testToken, `{"source":"1"}`)
	ch := openEvents(t, e.srv.Client(), e.srv.URL+"/v1/sessions/s-1/events")
	<-ch
	<-ch
	e.events.Close()
	if rest := collect(ch); len(rest) != 0 {
		t.Fatalf("after close %v", rest)
	}
}

// A client that reconnects with Last-Event-ID gets exactly the events it
// missed from the host that numbered them; from another host (an id of
// another epoch) or past the retained backlog, it first gets the
// session's current state, then what this host has.
func TestEventsResumeAfterLastEventID(t *testing.T) {
	e := newAPIEnv(t, nil)
	e.do(t, http.MethodPost, "/v1/sessions", testToken, `{"source":"1"}`)
	url := e.srv.URL + "/v1/sessions/s-1/events"
	e.backend.chunk("s-1", 0, "a")
	first := openEvents(t, e.srv.Client(), url)
	var seen []sseEvent
	for range 3 { // audit, state, chunk a
		seen = append(seen, <-first)
	}
	last := seen[len(seen)-1]
	if last.name != "chunk" || !strings.HasPrefix(last.id, e.events.Epoch()+".") {
		t.Fatalf("events %+v", seen)
	}
	// The client goes away; the session goes on.
	e.backend.chunk("s-1", 1, "b")
	e.backend.chunk("s-1", 2, "c")
	e.backend.finish("s-1", "done")

	tests := []struct {
		name, lastID, want string
	}{
		{"same host", last.id, "chunk,chunk,state"},
		{"another host's id", "0123456789ab.3", "state,audit,state,chunk,chunk,chunk,state"},
		{"malformed", "three", "state,audit,state,chunk,chunk,chunk,state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := collect(openEventsAfter(t, e.srv.Client(), url, tt.lastID))
			if names := eventNames(got); names != tt.want {
				t.Fatalf("events %s, want %s", names, tt.want)
			}
			if tt.name == "same host" && !strings.Contains(got[0].data, `"b"`) {
				t.Fatalf("first replayed %s, want chunk b", got[0].data)
			}
		})
	}
}
