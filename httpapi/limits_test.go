package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

// refusals counts the codes reported to OnRefused.
type refusals struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *refusals) add(code string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = make(map[string]int)
	}
	r.n[code]++
}

func (r *refusals) count(code string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[code]
}

// boundedEnv is a host API served by httpapi.Server on loopback, with the
// bounds a test sets.
type boundedEnv struct {
	url     string
	addr    string
	backend *fakeBackend
	events  *httpapi.Broadcaster
	refused *refusals
}

func newBoundedEnv(t *testing.T, scfg httpapi.ServerConfig, mutate func(*httpapi.Config)) *boundedEnv {
	t.Helper()
	b := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{})
	fb := newFakeBackend(b)
	ref := &refusals{}
	cfg := httpapi.Config{Token: testToken, Events: b, OnRefused: ref.add}
	if mutate != nil {
		mutate(&cfg)
	}
	scfg.OnRefused = ref.add
	srv := httpapi.NewServer(httpapi.New(fb, cfg), scfg)
	srv.RegisterOnShutdown(b.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		b.Close()
		_ = srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return &boundedEnv{url: "http://" + l.Addr().String(), addr: l.Addr().String(), backend: fb, events: b, refused: ref}
}

// client returns a client of its own, so its connections are the test's
// to count, closed at the end of the test.
func (e *boundedEnv) client(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// get does GET path with the test token and returns the status and error
// code (if any).
func (e *boundedEnv) get(t *testing.T, c *http.Client, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, e.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body errorResponse
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Error.Code
}

// dial opens a raw connection, closed at the end of the test.
func (e *boundedEnv) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func submission(source string) hostloop.Submission { return hostloop.Submission{Source: source} }

// readResponse reads one response from c within a generous deadline.
func readResponse(t *testing.T, c net.Conn) (*http.Response, errorResponse) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	defer resp.Body.Close()
	var body errorResponse
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp, body
}

func TestServerCutsTricklingBodies(t *testing.T) {
	const tricklers = 10
	e := newBoundedEnv(t, httpapi.ServerConfig{ReadTimeout: 300 * time.Millisecond, MaxConns: 20}, nil)
	conns := make([]net.Conn, tricklers)
	for i := range conns {
		conns[i] = e.dial(t)
		// A body announced at 1 KiB, of which one byte arrives.
		fmt.Fprintf(conns[i], "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1024\r\n\r\n{", testToken)
	}
	// Another client is served meanwhile.
	if status, _ := e.get(t, e.client(t), "/healthz", "-"); status != http.StatusOK {
		t.Fatalf("healthz during the attack: %d", status)
	}
	for i, c := range conns {
		resp, body := readResponse(t, c)
		if resp.StatusCode != http.StatusRequestTimeout || body.Error.Code != "request_timeout" {
			t.Fatalf("trickler %d: %d %q", i, resp.StatusCode, body.Error.Code)
		}
	}
	if n := e.refused.count("request_timeout"); n != tricklers {
		t.Fatalf("request_timeout counted %d times, want %d", n, tricklers)
	}
}

func TestServerRefusesConnectionsOverTheCap(t *testing.T) {
	const maxConns, attackers = 20, 50
	e := newBoundedEnv(t, httpapi.ServerConfig{MaxConns: maxConns}, nil)
	conns := make([]net.Conn, attackers)
	for i := range conns {
		conns[i] = e.dial(t)
		fmt.Fprintf(conns[i], "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	served, refused := 0, 0
	for i, c := range conns {
		resp, body := readResponse(t, c)
		switch {
		case resp.StatusCode == http.StatusOK:
			served++
		case resp.StatusCode == http.StatusServiceUnavailable && body.Error.Code == "connection_limit" &&
			resp.Header.Get("Retry-After") != "" && resp.Header.Get("Content-Type") == "application/json":
			refused++
		default:
			t.Fatalf("connection %d: %d %q", i, resp.StatusCode, body.Error.Code)
		}
	}
	if served != maxConns || refused != attackers-maxConns {
		t.Fatalf("served %d and refused %d, want %d and %d", served, refused, maxConns, attackers-maxConns)
	}
	if n := e.refused.count("connection_limit"); n != attackers-maxConns {
		t.Fatalf("connection_limit counted %d times, want %d", n, attackers-maxConns)
	}
	// The served connections idle on; once they leave, others are served.
	for _, c := range conns {
		c.Close()
	}
	// Until the server has seen them go, a new connection is still over
	// the cap: it is refused as it is accepted, before the client's
	// request, which the client reports as an error rather than a 503.
	c := e.client(t)
	testwait.Until(t, 10*time.Second, "a client served after the attack", func() bool {
		resp, err := c.Get(e.url + "/healthz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode == http.StatusOK
	})
}

func TestServerClosesIdleConnections(t *testing.T) {
	const idlers = 10
	e := newBoundedEnv(t, httpapi.ServerConfig{IdleTimeout: 200 * time.Millisecond, MaxConns: 20}, nil)
	readers := make([]*bufio.Reader, idlers)
	for i := range readers {
		c := e.dial(t)
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		readers[i] = bufio.NewReader(c)
		resp, err := http.ReadResponse(readers[i], nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// Kept alive and idle: the server ends each.
	for i, br := range readers {
		if n, err := br.ReadByte(); !errors.Is(err, io.EOF) {
			t.Fatalf("idler %d: read %v, %v; want the server to close", i, n, err)
		}
	}
	testwait.Until(t, 10*time.Second, "idle closes counted", func() bool { return e.refused.count(httpapi.CodeIdleTimeout) == idlers })
	if status, _ := e.get(t, e.client(t), "/healthz", "-"); status != http.StatusOK {
		t.Fatalf("healthz after the idlers: %d", status)
	}
}

// openStream opens an event stream of session id with token, returning
// the status, the error code, and the response (nil unless 200).
func (e *boundedEnv) openStream(t *testing.T, c *http.Client, id, token string) (int, string, *http.Response) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, e.url+"/v1/sessions/"+id+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK {
		t.Cleanup(func() { resp.Body.Close() })
		return resp.StatusCode, "", resp
	}
	defer resp.Body.Close()
	var body errorResponse
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if resp.Header.Get("Retry-After") == "" {
		t.Errorf("%d without Retry-After", resp.StatusCode)
	}
	return resp.StatusCode, body.Error.Code, nil
}

func TestEventStreamsAreCappedPerHostAndPerToken(t *testing.T) {
	// Without authentication every bearer is let in, and streams are
	// still counted by the bearer sent: two "tokens" in one test.
	e := newBoundedEnv(t, httpapi.ServerConfig{MaxConns: 20}, func(c *httpapi.Config) {
		c.DisableAuth = true
		c.MaxStreams = 3
		c.MaxStreamsPerToken = 2
	})
	st, err := e.backend.Submit(context.Background(), submission("a"))
	if err != nil {
		t.Fatal(err)
	}
	id := string(st.ID)
	c := e.client(t)
	var held []*http.Response
	for _, step := range []struct {
		token      string
		wantStatus int
		wantCode   string
	}{
		{"a", http.StatusOK, ""},
		{"a", http.StatusOK, ""},
		{"a", http.StatusTooManyRequests, "token_stream_limit"},
		{"b", http.StatusOK, ""},
		{"b", http.StatusServiceUnavailable, "stream_limit"},
	} {
		status, code, resp := e.openStream(t, c, id, step.token)
		if status != step.wantStatus || code != step.wantCode {
			t.Fatalf("token %s: %d %q, want %d %q", step.token, status, code, step.wantStatus, step.wantCode)
		}
		if resp != nil {
			held = append(held, resp)
		}
	}
	if e.refused.count("token_stream_limit") != 1 || e.refused.count("stream_limit") != 1 {
		t.Fatalf("refusals counted: %v", e.refused.n)
	}
	// JSON calls are still served beside the streams.
	if status, _ := e.get(t, c, "/v1/sessions/"+id, "a"); status != http.StatusOK {
		t.Fatalf("session GET beside the streams: %d", status)
	}
	// A stream that ends gives its slot back.
	held[0].Body.Close()
	testwait.Until(t, 10*time.Second, "a freed stream slot", func() bool {
		status, _, resp := e.openStream(t, c, id, "a")
		if resp != nil {
			resp.Body.Close()
		}
		return status == http.StatusOK
	})
}

func TestEventStreamDropsClientThatStopsReading(t *testing.T) {
	e := newBoundedEnv(t, httpapi.ServerConfig{MaxConns: 20}, func(c *httpapi.Config) {
		c.StreamWriteTimeout = 100 * time.Millisecond
		c.MaxStreamsPerToken = 1
	})
	st, err := e.backend.Submit(context.Background(), submission("a"))
	if err != nil {
		t.Fatal(err)
	}
	// A raw client that asks for the stream and never reads a byte.
	stuck := e.dial(t)
	fmt.Fprintf(stuck, "GET /v1/sessions/%s/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", st.ID, testToken)
	testwait.Until(t, 10*time.Second, "the stuck stream to open", func() bool {
		status, code, _ := e.openStream(t, e.client(t), string(st.ID), testToken)
		return status == http.StatusTooManyRequests && code == "token_stream_limit"
	})
	// More than loopback socket buffers hold, so writes block.
	chunk := strings.Repeat("x", 64<<10)
	for i := 0; i < 512 && e.refused.count(httpapi.CodeSlowReader) == 0; i++ {
		e.backend.chunk(st.ID, i, chunk)
	}
	testwait.Until(t, 10*time.Second, "the stuck client dropped", func() bool { return e.refused.count(httpapi.CodeSlowReader) == 1 })
	// The slot is free again and the stream works for a reader.
	c := e.client(t)
	testwait.Until(t, 10*time.Second, "the stuck stream's slot", func() bool {
		status, _, resp := e.openStream(t, c, string(st.ID), testToken)
		if resp != nil {
			resp.Body.Close()
		}
		return status == http.StatusOK
	})
}
