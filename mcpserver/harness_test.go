package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/mcpserver"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

const testCatalog = `
tools:
  - name: t.echo
    description: answers its input
  - name: t.stream
    description: streams three chunks, one with a secret
    stream: {max_chunks: 8, max_chunk_bytes: 256, max_source_bytes: 4096, max_released_bytes: 4096}
    redact: [{literal: hunter2, replace: "[redacted]"}]
  - name: t.sleep
    description: waits to be cancelled
    cancellable: true
  - name: t.fail
    description: always fails
  - name: t.any
    description: answers its JSON input
    format: json
  - name: t.sum
    description: sums numbers
    format: json
    input_schema:
      type: object
      properties: {numbers: {type: array, items: {type: number}}}
      required: [numbers]
      additionalProperties: false
    output_schema:
      type: object
      properties: {sum: {type: number}}
      required: [sum]
`

const testToken = "s3cret-token"

// fixture is a host loop over an in-memory transport, its event
// broadcaster, and a fake worker pool playing the catalog's tools.
type fixture struct {
	set     *toolspec.Set
	loop    *hostloop.Loop
	events  *httpapi.Broadcaster
	index   *httpapi.SessionIndex
	tr      *hostloop.MemTransport
	cancels chan protocol.Cancel
	// invoked receives every invocation the pool takes.
	invoked chan protocol.Invoke
	// acked receives every cancellation the pool acknowledged.
	acked chan string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	cat, err := toolspec.Parse([]byte(testCatalog), ".")
	if err != nil {
		t.Fatal(err)
	}
	set, err := cat.Compile()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{
		set:     set,
		events:  httpapi.NewBroadcaster(httpapi.BroadcasterConfig{}),
		index:   httpapi.NewSessionIndex(httpapi.IndexConfig{}),
		tr:      hostloop.NewMemTransport(256),
		cancels: make(chan protocol.Cancel, 64),
		invoked: make(chan protocol.Invoke, 64),
		acked:   make(chan string, 64),
	}
	f.tr.OnCancel = func(c protocol.Cancel) { f.cancels <- c }
	f.loop, err = hostloop.StartLoop(hostloop.LoopConfig{
		Transport: f.tr,
		HostID:    "h1",
		Catalog:   func(rt *host.Runtime) error { return rt.RegisterTools(set) },
		Observer:  httpapi.Tee(f.events, f.index),
	})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go f.pool(stop, done)
	t.Cleanup(func() {
		close(stop)
		<-done
		f.loop.Stop()
		f.events.Close()
	})
	return f
}

func (f *fixture) pool(stop, done chan struct{}) {
	defer close(done)
	sleeping := map[string]protocol.Invoke{}
	for {
		select {
		case <-stop:
			return
		case c := <-f.cancels:
			if inv, ok := sleeping[c.RequestID]; ok {
				delete(sleeping, c.RequestID)
				f.tr.Message(protocol.CancelReplyMessage(protocol.CancelReply{RequestID: c.RequestID, Attempt: inv.Attempt, Disposition: protocol.CancelAcknowledged}))
				f.acked <- c.RequestID
			}
		case inv := <-f.tr.Invocations():
			f.invoked <- inv
			switch inv.Tool {
			case "t.echo":
				f.tr.Succeed(inv, inv.Input.Text)
			case "t.stream":
				for i, text := range []string{"one", "two hunter2", "three"} {
					f.tr.Message(protocol.ChunkMessage(protocol.Chunk{RequestID: inv.RequestID, Sequence: uint64(i + 1), Text: text}))
				}
				f.tr.Succeed(inv, "streamed")
			case "t.sleep":
				sleeping[inv.RequestID] = inv
			case "t.fail":
				f.tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultFailed, Error: "boom"})
			case "t.any":
				p := protocol.JSONPayload(inv.Input.JSON)
				f.tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultSucceeded, Payload: &p})
			case "t.sum":
				var in struct{ Numbers []float64 }
				_ = json.Unmarshal(inv.Input.JSON, &in)
				sum := 0.0
				for _, n := range in.Numbers {
					sum += n
				}
				p := protocol.JSONPayload(json.RawMessage(fmt.Sprintf(`{"sum":%v}`, sum)))
				f.tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultSucceeded, Payload: &p})
			}
		}
	}
}

// api serves the host API over the fixture's loop, with the MCP server
// at /mcp when mcpHandler is set.
func (f *fixture) api(t *testing.T, mcpHandler http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(httpapi.New(f.loop, httpapi.Config{Token: testToken, Events: f.events, MCP: mcpHandler}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

// runners returns the two ways of running sessions, each over the
// fixture.
func (f *fixture) runners(t *testing.T) map[string]mcpserver.Runner {
	t.Helper()
	client, err := apiclient.New(f.api(t, nil).URL, testToken)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]mcpserver.Runner{
		"loop": &mcpserver.LoopRunner{Backend: f.loop, Events: f.events},
		"api":  &mcpserver.APIRunner{Client: client},
	}
}

// connect serves s to a new SDK client over an in-memory pipe, as stdio
// would carry it, and returns the client's session.
func connect(t *testing.T, s *mcpserver.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}

// bearer adds a token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connectHTTP connects an SDK client to url's /mcp with token.
func connectHTTP(t *testing.T, url, token string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{
		Endpoint:   url + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}},
		MaxRetries: -1,
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, opts).Connect(context.Background(), tr, nil)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, nil
}

func textOf(r *mcp.CallToolResult) string {
	var s string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s += tc.Text
		}
	}
	return s
}
