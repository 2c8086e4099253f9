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
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
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
