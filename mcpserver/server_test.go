package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/mcpserver"
	"github.com/splashfabric/splashfabric/toolspec"
)

func TestNewRefusesBadConfig(t *testing.T) {
	f := newFixture(t)
	runner := &mcpserver.LoopRunner{Backend: f.loop, Events: f.events}
	tests := []struct {
		name    string
		cfg     mcpserver.Config
		wantErr error
	}{
		{"no catalog", mcpserver.Config{Runner: runner}, mcpserver.ErrInvalidConfig},
		{"no runner", mcpserver.Config{Catalog: f.set}, mcpserver.ErrInvalidConfig},
		{"unknown tool", mcpserver.Config{Catalog: f.set, Runner: runner, Expose: []string{"t.echo", "t.nope"}}, mcpserver.ErrUnknownTool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := mcpserver.New(tt.cfg); !errors.Is(err, tt.wantErr) || !errors.Is(err, mcpserver.ErrInvalidConfig) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestParseTools(t *testing.T) {
	for in, want := range map[string][]string{"": nil, "all": nil, " a.b , c ": {"a.b", "c"}, "x,,": {"x"}} {
		if got := mcpserver.ParseTools(in); !reflect.DeepEqual(got, want) {
			t.Errorf("ParseTools(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSchemasRoundTrip lists the tools through the SDK client and finds
// each catalog tool's description and contract in what it reads.
func TestSchemasRoundTrip(t *testing.T) {
	f := newFixture(t)
	s, err := mcpserver.New(mcpserver.Config{Catalog: f.set, Runner: &mcpserver.LoopRunner{Backend: f.loop, Events: f.events}, RunScript: true})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, s, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool
	}
	if want := append(f.set.Names(), mcpserver.RunScriptTool); len(got) != len(want) || !slices.Equal(s.Tools(), want) {
		t.Fatalf("tools = %v, want %v", s.Tools(), want)
	}
	for _, name := range f.set.Names() {
		def, _ := f.set.Lookup(name)
		if got[name].Description != def.Spec().Description {
			t.Errorf("%s: description %q", name, got[name].Description)
		}
	}
	sum, _ := f.set.Lookup("t.sum")
	if !sameJSON(t, got["t.sum"].InputSchema, sum.Spec().InputSchema) || !sameJSON(t, got["t.sum"].OutputSchema, sum.Spec().OutputSchema) {
		t.Errorf("t.sum schemas = %v, %v", got["t.sum"].InputSchema, got["t.sum"].OutputSchema)
	}
	wrapped := `{"type":"object","properties":{"input":{"type":"string"}},"required":["input"],"additionalProperties":false}`
	if !sameJSON(t, got["t.echo"].InputSchema, json.RawMessage(wrapped)) || got["t.echo"].OutputSchema != nil {
		t.Errorf("t.echo schemas = %v, %v", got["t.echo"].InputSchema, got["t.echo"].OutputSchema)
	}
}

func sameJSON(t *testing.T, got any, want json.RawMessage) bool {
	t.Helper()
	g, _ := json.Marshal(got)
	var a, b any
	if err := json.Unmarshal(g, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &b); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(a, b)
}

func TestCallTools(t *testing.T) {
	f := newFixture(t)
	for runnerName, runner := range f.runners(t) {
		t.Run(runnerName, func(t *testing.T) {
			s, err := mcpserver.New(mcpserver.Config{Catalog: f.set, Runner: runner, RunScript: true})
			if err != nil {
				t.Fatal(err)
			}
			cs := connect(t, s, nil)
			tests := []struct {
				tool           string
				args           any
				wantError      bool
				wantText       string // substring for errors
				wantStructured string
			}{
				{"t.echo", map[string]any{"input": `he said "hi"`}, false, `he said "hi"`, ""},
				{"t.sum", map[string]any{"numbers": []float64{1, 2, 3.5}}, false, `{"sum":6.5}`, `{"sum":6.5}`},
				{"t.any", map[string]any{"input": []int{1, 2}}, false, `[1,2]`, ""},
				{"t.any", map[string]any{"input": map[string]int{"a": 1}}, false, `{"a":1}`, `{"a":1}`},
				{"t.fail", map[string]any{"input": "x"}, true, "boom", ""},
				{"t.echo", map[string]any{}, true, `"input"`, ""},
				{"t.echo", map[string]any{"input": 5}, true, "must be a string", ""},
				{"t.sum", map[string]any{"numbers": "many"}, true, "t.sum failed", ""},
				{mcpserver.RunScriptTool, map[string]any{"source": `const a = await tool.start("t.echo", "x"); return a + "y";`}, false, `xy`, ""},
				{mcpserver.RunScriptTool, map[string]any{"source": `throw new Error("nope")`}, true, "nope", ""},
				{mcpserver.RunScriptTool, map[string]any{"source": `return typeof tool`, "grants": []string{}}, false, `undefined`, ""},
			}
			for _, tt := range tests {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
				if err != nil {
					t.Fatalf("%s %v: %v", tt.tool, tt.args, err)
				}
				text := textOf(res)
				if res.IsError != tt.wantError || (tt.wantError && !strings.Contains(text, tt.wantText)) || (!tt.wantError && text != tt.wantText) {
					t.Errorf("%s %v: error=%v text=%q; want error=%v text %q", tt.tool, tt.args, res.IsError, text, tt.wantError, tt.wantText)
				}
				if tt.wantStructured != "" {
					if b, _ := json.Marshal(res.StructuredContent); string(b) != tt.wantStructured {
						t.Errorf("%s: structured %s, want %s", tt.tool, b, tt.wantStructured)
					}
				}
			}
		})
	}
}

// progressLog collects the progress notifications a client receives.
type progressLog struct {
	mu  sync.Mutex
	got []string
}

func (p *progressLog) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, req.Params.Message)
}

func (p *progressLog) messages() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got)
}

func TestProgressNotifications(t *testing.T) {
	f := newFixture(t)
	for runnerName, runner := range f.runners(t) {
		t.Run(runnerName, func(t *testing.T) {
			s, err := mcpserver.New(mcpserver.Config{Catalog: f.set, Runner: runner})
			if err != nil {
				t.Fatal(err)
			}
			var log progressLog
			cs := connect(t, s, &mcp.ClientOptions{ProgressNotificationHandler: log.handler})
			params := &mcp.CallToolParams{Name: "t.stream", Arguments: map[string]any{"input": "go"}}
			params.SetProgressToken("p1")
			res, err := cs.CallTool(context.Background(), params)
			if err != nil || res.IsError || textOf(res) != "streamed" {
				t.Fatalf("call = %+v, %v", res, err)
			}
			want := []string{"one", "two [redacted]", "three"}
			testwait.Until(t, 0, "three progress notifications", func() bool { return len(log.messages()) == len(want) })
			if got := log.messages(); !slices.Equal(got, want) {
				t.Fatalf("progress = %q, want %q", got, want)
			}
			// Without a token, no notification.
			before := len(log.messages())
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t.stream", Arguments: map[string]any{"input": "go"}}); err != nil {
				t.Fatal(err)
			}
			if n := len(log.messages()); n != before {
				t.Fatalf("%d notifications without a progress token", n-before)
			}
		})
	}
}

// TestCancellation cancels a call from the client: the SDK sends
// notifications/cancelled, the server's context ends, the host asks the
// worker to cancel, the worker acknowledges and the session ends.
func TestCancellation(t *testing.T) {
	f := newFixture(t)
	for runnerName, runner := range f.runners(t) {
		t.Run(runnerName, func(t *testing.T) {
			s, err := mcpserver.New(mcpserver.Config{Catalog: f.set, Runner: runner})
			if err != nil {
				t.Fatal(err)
			}
			cs := connect(t, s, nil)
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.sleep", Arguments: map[string]any{"input": "forever"}})
				errc <- err
			}()
			inv := <-f.invoked
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("call err = %v", err)
			}
			select {
			case id := <-f.acked:
				if id != inv.RequestID {
					t.Fatalf("acked %s, want %s", id, inv.RequestID)
				}
			case <-time.After(testwait.DefaultTimeout):
				t.Fatal("the worker was never asked to cancel")
			}
			testwait.Until(t, 0, "no live operation", func() bool {
				ops, err := f.loop.Operations(context.Background())
				return err == nil && len(ops) == 0
			})
		})
	}
}

func TestHTTPMount(t *testing.T) {
	f := newFixture(t)
	s, err := mcpserver.New(mcpserver.Config{Catalog: f.set, Runner: &mcpserver.LoopRunner{Backend: f.loop, Events: f.events}, Expose: []string{"t.sleep", "t.stream", "t.sum"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := f.api(t, s.Handler())

	t.Run("wrong token", func(t *testing.T) {
		for _, token := range []string{"", "wrong"} {
			if _, err := connectHTTP(t, srv.URL, token, nil); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
				t.Fatalf("token %q: err = %v", token, err)
			}
		}
	})

	var log progressLog
	cs, err := connectHTTP(t, srv.URL, testToken, &mcp.ClientOptions{ProgressNotificationHandler: log.handler})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if slices.Sort(names); !slices.Equal(names, []string{"t.sleep", "t.stream", "t.sum"}) {
		t.Fatalf("tools = %v", names)
	}
	call, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t.sum", Arguments: map[string]any{"numbers": []int{2, 3}}})
	if err != nil || textOf(call) != `{"sum":5}` {
		t.Fatalf("t.sum = %+v, %v", call, err)
	}
	params := &mcp.CallToolParams{Name: "t.stream", Arguments: map[string]any{"input": "go"}}
	params.SetProgressToken(7)
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 0, "progress over HTTP", func() bool { return len(log.messages()) == 3 })

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.sleep", Arguments: map[string]any{"input": "x"}})
		errc <- err
	}()
	for inv := range f.invoked {
		if inv.Tool == "t.sleep" {
			break
		}
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("call err = %v", err)
	}
	select {
	case <-f.acked:
	case <-time.After(testwait.DefaultTimeout):
		t.Fatal("the worker was never asked to cancel over HTTP")
	}
}

// TestOneCallSession checks what a tools/call runs: a session that may
// make one call, of that tool, and holds only the tool capability.
func TestOneCallSession(t *testing.T) {
	f := newFixture(t)
	var subs []mcpserver.Submission
	rec := runnerFunc(func(ctx context.Context, sub mcpserver.Submission, chunk func(mcpserver.Chunk)) (mcpserver.Outcome, error) {
		subs = append(subs, sub)
		return (&mcpserver.LoopRunner{Backend: f.loop, Events: f.events}).Run(ctx, sub, chunk)
	})
	s, err := mcpserver.New(mcpserver.Config{Catalog: f.set, Runner: rec, Expose: []string{"t.echo"}})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, s, nil)
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t.echo", Arguments: map[string]any{"input": "\u2028\"); evil(); (\""}}); err != nil {
		t.Fatal(err)
	}
	want := mcpserver.Submission{Source: `return await tool.start("t.echo", "\u2028\"); evil(); (\"");`, Grants: []string{"tool"}, Tools: []string{"t.echo"}, ToolCallBudget: 1, MaxPending: 1}
	if len(subs) != 1 || !reflect.DeepEqual(subs[0], want) {
		t.Fatalf("submissions = %#v", subs)
	}
	_ = hostloop.SessionCompleted
}

type runnerFunc func(context.Context, mcpserver.Submission, func(mcpserver.Chunk)) (mcpserver.Outcome, error)

func (f runnerFunc) Run(ctx context.Context, sub mcpserver.Submission, chunk func(mcpserver.Chunk)) (mcpserver.Outcome, error) {
	return f(ctx, sub, chunk)
}

// TestFollowsTheCatalog: a server given Current serves the catalog as it
// is when a client asks, and tells its clients the list changed.
func TestFollowsTheCatalog(t *testing.T) {
	f := newFixture(t)
	echo, _ := f.set.Lookup("t.echo")
	sum, _ := f.set.Lookup("t.sum")
	first, _ := toolspec.NewSet(echo)
	var current atomic.Pointer[toolspec.Set]
	current.Store(first)
	s, err := mcpserver.New(mcpserver.Config{Catalog: first, Current: current.Load, Runner: &mcpserver.LoopRunner{Backend: f.loop, Events: f.events}})
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 4)
	cs := connect(t, s, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	names := func() []string {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range res.Tools {
			out = append(out, tool.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := names(); !slices.Equal(got, []string{"t.echo"}) {
		t.Fatalf("tools = %v", got)
	}
	second, _ := toolspec.NewSet(sum)
	current.Store(second)
	if got := names(); !slices.Equal(got, []string{"t.sum"}) {
		t.Fatalf("after the change, tools = %v", got)
	}
	select {
	case <-changed:
	case <-time.After(testwait.DefaultTimeout):
		t.Fatal("no tools/list_changed")
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t.sum", Arguments: map[string]any{"numbers": []int{4}}})
	if err != nil || textOf(res) != `{"sum":4}` {
		t.Fatalf("t.sum = %+v, %v", res, err)
	}
}
