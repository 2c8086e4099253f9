package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/httpapi/apitoken"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/tracing"
)

// RunScriptTool is the name of the optional tool that runs a whole
// script.
const RunScriptTool = "run_script"

// SessionTimeout is how long an idle streamable-HTTP MCP session is kept
// before the server forgets it; a client that comes back after it
// initialises again.
const SessionTimeout = 30 * time.Minute

// Config configures a Server.
type Config struct {
	// Catalog holds the tools the server may expose. Required.
	Catalog *toolspec.Set
	// Current, if set, returns the catalog as it is now (a host's live
	// catalog, with the tools published since it started); the server
	// follows it, comparing it with the last one it served by identity,
	// as clients list and call tools. Nil serves Catalog for good.
	Current func() *toolspec.Set
	// Expose names the catalog tools to serve; nil or empty serves every
	// one. A name the catalog does not define is refused.
	Expose []string
	// Runner runs the sessions. Required.
	Runner Runner
	// RunScript adds the run_script tool, which runs a whole script with
	// the grants its caller names. Off by default: it hands the caller
	// every tool of the catalog, under one call.
	RunScript bool
	// Version is reported to clients in the server's implementation
	// info.
	Version string
	// Logger receives the SDK's internal errors; nil discards them.
	Logger *slog.Logger
}

// Server is the fabric as an MCP server: each exposed catalog tool is an
// MCP tool, and each tools/call runs as a one-call script session under
// the tool's policy. It is safe for concurrent use; one Server serves any
// number of MCP sessions, over any transports.
type Server struct {
	cfg Config
	srv *mcp.Server

	// mu guards the fields below, written by sync.
	mu  sync.Mutex
	set *toolspec.Set
	// served maps each catalog tool served to its definition's digest,
	// so a changed definition is served anew.
	served map[string]string
	tools  []string
}

// New builds the server. Its errors wrap ErrInvalidConfig.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Catalog == nil:
		return nil, fmt.Errorf("%w: no catalog", ErrInvalidConfig)
	case cfg.Runner == nil:
		return nil, fmt.Errorf("%w: no runner", ErrInvalidConfig)
	}
	for _, name := range cfg.Expose {
		if _, ok := cfg.Catalog.Lookup(name); !ok {
			return nil, fmt.Errorf("%w: %w: %q (the catalog has: %s)", ErrInvalidConfig, ErrUnknownTool, name, strings.Join(cfg.Catalog.Names(), ", "))
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	version := cfg.Version
	if version == "" {
		version = "dev"
	}
	s := &Server{cfg: cfg, served: map[string]string{}, srv: mcp.NewServer(&mcp.Implementation{Name: "splash", Title: "Splash Fabric", Version: version},
		&mcp.ServerOptions{Logger: cfg.Logger})}
	s.sync(cfg.Catalog)
	if cfg.RunScript {
		s.srv.AddTool(runScriptTool(), s.runScript)
	}
	// A client that came in with an API token sees the tools that
	// token's sessions may use; calling another is refused by the host
	// all the same.
	s.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if list, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				if t, ok := callerToken(req); ok {
					list.Tools = slices.DeleteFunc(list.Tools, func(tool *mcp.Tool) bool {
						return tool.Name != RunScriptTool && !t.MayUse(tool.Name)
					})
				}
			}
			return res, err
		}
	})
	if cfg.Current != nil {
		// The catalog is read where it matters, as a client lists or
		// calls: a changed catalog costs one comparison per request
		// until it changes, and clients hear of it (tools/list_changed).
		s.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/list" || method == "tools/call" {
					if set := cfg.Current(); set != nil {
						s.sync(set)
					}
				}
				return next(ctx, method, req)
			}
		})
	}
	return s, nil
}

// sync serves the exposed tools of set: tools gone from it are removed,
// new or changed ones (re)added. A name in Expose that set lacks is left
// out until it comes back.
func (s *Server) sync(set *toolspec.Set) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if set == s.set {
		return
	}
	s.set = set
	want := s.cfg.Expose
	if len(want) == 0 {
		want = set.Names()
	}
	var tools []string
	for _, name := range want {
		t, ok := set.Lookup(name)
		if !ok || slices.Contains(tools, name) {
			continue
		}
		tools = append(tools, name)
		if s.served[name] != t.Digest() {
			desc, m := mcpTool(t)
			s.srv.AddTool(desc, s.handle(m))
			s.served[name] = t.Digest()
		}
	}
	for name := range s.served {
		if !slices.Contains(tools, name) {
			s.srv.RemoveTools(name)
			delete(s.served, name)
		}
	}
	s.tools = tools
}

// Tools returns the names of the MCP tools served, catalog tools first
// (in Expose order, or the catalog's), then run_script when enabled.
func (s *Server) Tools() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	tools := slices.Clone(s.tools)
	if s.cfg.RunScript {
		tools = append(tools, RunScriptTool)
	}
	return tools
}

// MCP returns the SDK server, to serve it over a transport of the
// caller's choosing.
func (s *Server) MCP() *mcp.Server { return s.srv }

// ServeStdio serves one MCP session over the process's stdin and stdout
// until the client goes or ctx ends.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.srv.Run(ctx, &mcp.StdioTransport{})
}

// Handler serves MCP over the streamable HTTP transport. It does not
// authenticate: mount it behind the API's token check.
func (s *Server) Handler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv },
		&mcp.StreamableHTTPOptions{Logger: s.cfg.Logger, SessionTimeout: SessionTimeout})
}

// Close ends every MCP session the server holds, so that a server
// shutting down is not held open by their streams. Calls in flight end
// as if their clients had cancelled them.
func (s *Server) Close() {
	for ss := range s.srv.Sessions() {
		_ = ss.Close()
	}
}

// handle runs a call of one catalog tool as `return await
// tool.start(name, input)` in a session that may make that one call.
func (s *Server) handle(m mapping) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		source, err := m.script(req.Params.Arguments)
		if err != nil {
			return errorResult(fmt.Sprintf("%s: %v", m.tool.Name(), err)), nil
		}
		out, err := s.cfg.Runner.Run(callerContext(ctx, req), Submission{
			Source: source, Grants: []string{host.GrantTool}, Tools: []string{m.tool.Name()}, ToolCallBudget: 1, MaxPending: 1,
		}, progress(ctx, req))
		if ctx.Err() != nil {
			// Cancelled: the runner asked the host to cancel; the
			// caller expects no answer.
			return nil, ctx.Err()
		}
		if err != nil {
			return errorResult(fmt.Sprintf("%s: the host did not run the call: %v", m.tool.Name(), err)), nil
		}
		return m.result(out), nil
	}
}

// progress returns the chunk sink of a call: progress notifications when
// the caller sent a progress token, nothing otherwise.
func progress(ctx context.Context, req *mcp.CallToolRequest) func(Chunk) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func(Chunk) {}
	}
	n := 0
	return func(c Chunk) {
		n++
		// A notification that cannot be sent is a caller gone; the
		// call's context ends with it.
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token, Progress: float64(n), Message: c.Text,
		})
	}
}

// callerToken returns the API token an MCP request came with, if it came
// over the host's /mcp endpoint.
func callerToken(req mcp.Request) (*apitoken.Token, bool) {
	if extra := req.GetExtra(); extra != nil {
		return httpapi.MCPToken(extra.TokenInfo)
	}
	return nil, false
}

// callerContext is ctx carrying the caller's API token, for the runner to
// admit its session as the API would (see httpapi.Gate), and the caller's
// trace context, so the submission's span joins the caller's trace as
// POST /v1/sessions does: the request's `_meta` traceparent (the MCP
// convention) or else its HTTP header. It is trusted for nothing else.
func callerContext(ctx context.Context, req mcp.Request) context.Context {
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		ctx = tracing.Extract(ctx, propagation.HeaderCarrier(extra.Header))
	}
	if p := req.GetParams(); p != nil {
		ctx = tracing.Extract(ctx, metaCarrier(p.GetMeta()))
	}
	if t, ok := callerToken(req); ok {
		return apitoken.NewContext(ctx, t)
	}
	return ctx
}

// metaCarrier reads trace context from a request's `_meta`; a value that
// is not a string is absent.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	v, _ := m[key].(string)
	return v
}

func (metaCarrier) Set(string, string) {}

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// runScriptArgs are run_script's arguments.
type runScriptArgs struct {
	Source string   `json:"source"`
	Grants []string `json:"grants,omitempty"`
	Tools  []string `json:"tools,omitempty"`
}

func runScriptTool() *mcp.Tool {
	return &mcp.Tool{
		Name:        RunScriptTool,
		Description: "runs a Splash script (JavaScript; `await tool.start(name, input)` calls a tool) and returns its value: a string as it is, anything else as JSON",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"source":{"type":"string","description":"the script"},` +
			`"grants":{"type":"array","items":{"type":"string"},"description":"the script's capabilities; absent keeps the host's defaults"},` +
			`"tools":{"type":"array","items":{"type":"string"},"description":"patterns of the tools the script may call (\"demo.*\", \"text.>\"); absent: every tool the caller's token may use"}},` +
			`"required":["source"],"additionalProperties":false}`),
	}
}

func (s *Server) runScript(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args runScriptArgs
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.Source == "" {
		return errorResult("run_script: arguments must be {\"source\": \"...\", \"grants\": [...], \"tools\": [...]}"), nil
	}
	// Refused here as POST /v1/sessions refuses them, whatever the
	// runner: a script run without the capability or with other tools
	// than its caller meant is worse than none.
	if err := httpapi.CheckGrants(args.Grants); err != nil {
		return errorResult("run_script: " + err.Error()), nil
	}
	if err := httpapi.CheckTools(args.Tools); err != nil {
		return errorResult("run_script: " + err.Error()), nil
	}
	out, err := s.cfg.Runner.Run(callerContext(ctx, req), Submission{Source: args.Source, Grants: args.Grants, Tools: args.Tools}, progress(ctx, req))
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return errorResult(fmt.Sprintf("run_script: the host did not run the script: %v", err)), nil
	}
	if out.Failed {
		return errorResult("run_script: the script failed: " + out.Error), nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.Value}}}, nil
}

// ParseTools reads a --mcp-tools value: "all" (or "") exposes every
// catalog tool, anything else is a comma-separated list of names.
func ParseTools(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" || v == "all" {
		return nil
	}
	var out []string
	for _, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
