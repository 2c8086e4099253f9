package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
)

// inFlight starts n echo calls at once and awaits them all.
func inFlight(n int) string {
	return fmt.Sprintf(`const ps = []; for (let i = 0; i < %d; i++) ps.push(tool.start("echo", "x")); (await Promise.all(ps)).length`, n)
}

// The reproduction: with many calls in flight a submission with
// wait_ms answered at once, suspended, because its wait fell behind the
// session's events. It now holds until the end.
func TestWaitHoldsWithManyCallsInFlight(t *testing.T) {
	e := newLoopEnv(t)
	for _, n := range []int{100, 1000} {
		body, _ := json.Marshal(apiwire.SubmitRequest{Source: inFlight(n), MaxPending: n, WaitMS: 15000})
		resp := e.do(t, http.MethodPost, "/v1/sessions", testToken, string(body))
		got := decodeBody[apiwire.Session](t, resp)
		if got.State != "completed" || got.Value == nil || *got.Value != strconv.Itoa(n) {
			t.Fatalf("%d calls: %s with %d operations live, want completed", n, got.State, len(got.Operations))
		}
	}
}

// A client following a 1,000-call script's event stream from its
// submission reads it to the terminal state: the burst of events one
// step makes does not drop it as lagged.
func TestEventStreamKeepsUpWithABurst(t *testing.T) {
	e := newLoopEnv(t)
	body, _ := json.Marshal(apiwire.SubmitRequest{Source: inFlight(1000), MaxPending: 1000})
	s := decodeBody[apiwire.Session](t, e.do(t, http.MethodPost, "/v1/sessions", testToken, string(body)))
	resp := e.do(t, http.MethodGet, "/v1/sessions/"+s.ID+"/events", testToken, "")
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	events, last := 0, ""
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events++
			if name == "lagged" {
				t.Fatalf("dropped as lagged after %d events", events)
			}
			last = name
		}
		if strings.HasPrefix(sc.Text(), "data: ") && last == "state" && strings.Contains(sc.Text(), `"completed"`) {
			return
		}
	}
	t.Fatalf("the stream ended after %d events without the terminal state: %v", events, sc.Err())
}

// The reproduction: connections sending /mcp a body one byte at
// a time held every connection slot. The body of an MCP request is bound
// by the read timeout as any request's is.
func TestMCPBodyIsBoundByTheReadTimeout(t *testing.T) {
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	e := newBoundedEnv(t, httpapi.ServerConfig{ReadTimeout: 200 * time.Millisecond, MaxConns: 8, MaxConnsPerClient: -1}, func(c *httpapi.Config) { c.MCP = mcp })
	var conns []net.Conn
	for range 6 {
		c := e.dial(t)
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", testToken)
		conns = append(conns, c)
	}
	for i, c := range conns {
		// The server ends the request: an answer, or the connection.
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Fatalf("trickler %d was not cut: %v", i, err)
		}
	}
	// A whole MCP request is still served, and its answer is not cut.
	req, _ := http.NewRequest(http.MethodPost, e.url+"/mcp", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := e.client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || string(b) != "ok" {
		t.Fatalf("a whole MCP request: %d %q", resp.StatusCode, b)
	}
}

// The reproduction: one client reopening hundreds of idle
// connections kept the API at 503 for everyone. A client holds at most
// its share; another client is still served.
func TestClientConnectionCap(t *testing.T) {
	const perClient = 5
	e := newBoundedEnv(t, httpapi.ServerConfig{MaxConns: 30, MaxConnsPerClient: perClient}, nil)
	for i := range perClient {
		c := e.dial(t)
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp, _ := readResponse(t, c); resp.StatusCode != http.StatusOK {
			t.Fatalf("connection %d: %d", i, resp.StatusCode)
		}
		// It idles on, held open by the client.
	}
	c := e.dial(t)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, body := readResponse(t, c)
	if resp.StatusCode != http.StatusTooManyRequests || body.Error.Code != "client_connection_limit" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the client's share: %d %q Retry-After %q", resp.StatusCode, body.Error.Code, resp.Header.Get("Retry-After"))
	}
	if e.refused.count("client_connection_limit") != 1 {
		t.Fatalf("refusals counted: %v", e.refused.n)
	}
	// Another address of the loopback network is another client.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	other, err := d.Dial("tcp", e.addr)
	if err != nil {
		t.Skipf("no second loopback address here: %v", err)
	}
	defer other.Close()
	fmt.Fprintf(other, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, _ := readResponse(t, other); resp.StatusCode != http.StatusOK {
		t.Fatalf("another client: %d", resp.StatusCode)
	}
}

// quotaEnv serves the API over a real loop to the scopedTokens, under the
// given quotas.
func quotaEnv(t *testing.T, gate httpapi.GateConfig, limits hostloop.Limits) *httptest.Server {
	t.Helper()
	events := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{})
	loop, err := hostloop.StartLoop(hostloop.LoopConfig{
		Transport: startMemWorker(t), HostID: "h1", Catalog: catalog(t), Observer: httpapi.Tee(events), Limits: limits,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(loop.Stop)
	srv := httptest.NewServer(httpapi.New(loop, httpapi.Config{Tokens: tokenSet(t, scopedTokens), Events: events, Gate: httpapi.NewGate(loop, gate)}))
	t.Cleanup(srv.Close)
	t.Cleanup(events.Close)
	return srv
}

func submitAs(t *testing.T, srv *httptest.Server, token, source string) (int, string, string) {
	t.Helper()
	body, _ := json.Marshal(apiwire.SubmitRequest{Source: source})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/v1/sessions", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+secretOf(token))
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e errorResponse
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Error.Code, resp.Header.Get("Retry-After")
}

// Quotas are kept per token owner: over one, 429 with Retry-After and the
// code of the quota; another owner is not held back.
func TestQuotasPerOwner(t *testing.T) {
	t.Run("submission rate", func(t *testing.T) {
		srv := quotaEnv(t, httpapi.GateConfig{SubmitRate: 0.5, SubmitBurst: 2}, hostloop.Limits{})
		for range 2 {
			if status, code, _ := submitAs(t, srv, "submit", `return 1`); status != http.StatusCreated {
				t.Fatalf("within the burst: %d %s", status, code)
			}
		}
		// "narrow" is another token of the same owner: it shares the quota.
		status, code, after := submitAs(t, srv, "narrow", `return 1`)
		if status != http.StatusTooManyRequests || code != "submission_rate" {
			t.Fatalf("over the rate: %d %s", status, code)
		}
		if n, err := strconv.Atoi(after); err != nil || n < 1 {
			t.Fatalf("Retry-After %q, want the seconds until the next submission", after)
		}
		if status, code, _ := submitAs(t, srv, "other", `return 1`); status != http.StatusCreated {
			t.Fatalf("another owner: %d %s", status, code)
		}
	})
	t.Run("sessions at once", func(t *testing.T) {
		srv := quotaEnv(t, httpapi.GateConfig{}, hostloop.Limits{MaxSessionsPerOwner: 1})
		if status, code, _ := submitAs(t, srv, "submit", `await tool.start("hold", "x")`); status != http.StatusCreated {
			t.Fatalf("first: %d %s", status, code)
		}
		status, code, after := submitAs(t, srv, "narrow", `await tool.start("echo", "x")`)
		if status != http.StatusTooManyRequests || code != "session_quota" || after == "" {
			t.Fatalf("over the owner's sessions: %d %s Retry-After %q", status, code, after)
		}
		if status, code, _ := submitAs(t, srv, "other", `await tool.start("hold", "x")`); status != http.StatusCreated {
			t.Fatalf("another owner: %d %s", status, code)
		}
	})
}
