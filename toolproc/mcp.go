package toolproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// mcpStartTimeout bounds an MCP server's handshake and its first tool
// listing: a server that hangs there is stopped and the start fails.
const mcpStartTimeout = 10 * time.Second

// mcpListTimeout bounds a later tool listing.
const mcpListTimeout = 10 * time.Second

// maxMCPErrorBytes bounds the error text taken from an MCP result.
const maxMCPErrorBytes = 4 << 10

// mcpSession is the MCP side of a session whose process is an MCP server:
// the SDK's client session over the process's stdio.
//
// The connection (mcpConn) sees every message in wire order on the SDK's
// reader goroutine; it releases progress as chunks there, before the SDK
// sees the result that follows them, and notes tool-list changes.
type mcpSession struct {
	conn   *mcpConn
	client *mcp.ClientSession

	// Guarded by the session's mu.
	tools map[string]bool // the server's tools, as last listed
	stale bool            // the server said its list changed since
}

// startMCP launches an MCP server, performs the handshake and lists its
// tools. A server that cannot is stopped and the start fails.
func (s *Supervisor) startMCP() (*session, error) {
	s.mu.Lock()
	s.started++
	n := s.started
	s.mu.Unlock()
	id := s.cfg.Tool + "/" + strconv.FormatUint(n, 10) + "-" + s.incarnation
	proc, err := s.launch(id, nil)
	if err != nil {
		return nil, err
	}
	ss := &session{
		sup: s, id: id, proc: proc,
		calls:  make(map[string]*call),
		exited: make(chan struct{}),
		done:   make(chan struct{}),
	}
	conn, _ := (&mcp.IOTransport{Reader: proc.stdout, Writer: proc.stdin}).Connect(context.Background())
	ss.mcp = &mcpSession{conn: &mcpConn{ss: ss, Connection: conn}}
	log := s.cfg.Logger.With("tool", s.cfg.Tool, "session", id)
	ss.startWatch()
	var stderrDone sync.WaitGroup
	stderrDone.Add(1)
	go func() {
		defer stderrDone.Done()
		logStderr(proc.stderr, log)
	}()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := proc.cmd.Wait()
		proc.signal(syscall.SIGKILL)
		close(ss.exited)
		stderrDone.Wait()
		// Poisoned before the connection closes, so a limit the
		// sandbox reached is the reason, not the broken connection.
		ss.poison(ss.exitPoison(err))
		// Closing the connection ends the SDK's reader and fails the
		// calls still waiting on it; the poison above has ended them.
		_ = ss.mcp.conn.Close()
		proc.stderr.Close()
		ss.removeCgroup()
		ss.mu.Lock()
		client := ss.mcp.client
		ss.mu.Unlock()
		if client != nil {
			_ = client.Close()
		}
		close(ss.done)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), mcpStartTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "splash-worker", Title: "Splash Fabric worker"}, &mcp.ClientOptions{
		// Asking for list changes subscribes the session to them (a
		// server of the newer protocol sends them only then); the
		// connection notes each one as it reads it.
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	})
	cs, err := client.Connect(ctx, ss.mcp.conn, nil)
	if err == nil {
		ss.mu.Lock()
		ss.mcp.client = cs
		ss.mu.Unlock()
		err = ss.mcpList(ctx)
	}
	if err != nil {
		// Not yet the supervisor's: it is stopped quietly and the
		// caller backs off.
		ss.mu.Lock()
		ss.stopping = true
		ss.mu.Unlock()
		// The SDK's error may quote what the server wrote: it goes to
		// the log, and the error says only that the handshake failed.
		log.Warn("MCP handshake failed", "err", clip.String(err.Error(), maxMCPErrorBytes))
		ss.poison(poison(ReasonExited, "MCP handshake failed"))
		<-ss.done
		return nil, fmt.Errorf("%w: %q: the MCP handshake or tool listing failed (the worker's log says how)", ErrStartFailed, clip.String(s.cfg.Command[0], clip.Echo))
	}
	ss.mu.Lock()
	offered := len(ss.mcp.tools)
	ss.mu.Unlock()
	server := ""
	if info := cs.InitializeResult().ServerInfo; info != nil {
		server = info.Name
	}
	log.Info("MCP server started", "pid", proc.cmd.Process.Pid, "contained", s.cfg.Contain != nil,
		"server", server, "tools", offered)
	return ss, nil
}

// mcpList reads the server's tool list, every page of it.
func (ss *session) mcpList(ctx context.Context) error {
	tools := map[string]bool{}
	for t, err := range ss.mcp.client.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		tools[t.Name] = true
	}
	ss.mu.Lock()
	ss.mcp.tools = tools
	ss.mu.Unlock()
	return nil
}

// mcpCall runs c on the server and waits for its end: its result, its
// deadline (the watchdog), the loss of the process, or a cancellation
// left unanswered past the grace.
func (ss *session) mcpCall(c *call) Outcome {
	name := c.req.ServerTool
	if name == "" {
		name = c.req.Invoke.Tool
	}
	ss.mu.Lock()
	stale := ss.mcp.stale
	ss.mcp.stale = false
	ss.mu.Unlock()
	if stale {
		ctx, cancel := context.WithTimeout(context.Background(), mcpListTimeout)
		err := ss.mcpList(ctx)
		cancel()
		if err != nil {
			ss.sup.cfg.Logger.Warn("MCP tools/list failed", "tool", ss.sup.cfg.Tool, "session", ss.id, "err", clip.String(err.Error(), maxMCPErrorBytes))
			ss.poison(poison(ReasonMCP, "tools/list after a change failed"))
			return <-c.out
		}
	}
	ss.mu.Lock()
	offered := ss.mcp.tools[name]
	ss.mu.Unlock()
	args, err := mcpArguments(c.req.Invoke.Input)
	if !offered {
		err = fmt.Errorf("the MCP server offers no tool %q", name)
	}
	if err != nil {
		ss.mu.Lock()
		ss.end(c, Outcome{Kind: Answered, Result: failed(c, err.Error())})
		ss.mu.Unlock()
		return <-c.out
	}
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	// The call's id is its progress token: the connection routes the
	// server's progress by it, and finds the request to cancel by it.
	params.SetProgressToken(c.id)
	s := ss.sup
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// Not the caller's context: cancelling the call is a
		// notification of its own (mcpCancel), after which the call
		// still ends by its result, its deadline or a stop.
		res, err := ss.mcp.client.CallTool(context.Background(), params)
		ss.mcpAnswer(c, res, err)
	}()
	cancel := c.req.Cancel
	for {
		select {
		case o := <-c.out:
			return o
		case <-cancel:
			cancel = nil
			ss.mcpCancel(c)
		}
	}
}

// mcpArguments turns a call's input into MCP arguments, a JSON object.
func mcpArguments(in protocol.WorkerPayload) (json.RawMessage, error) {
	raw := in.JSON
	if in.Format != protocol.FormatJSON {
		raw = json.RawMessage(in.Text)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, errors.New("an MCP tool's input must be a JSON object (its arguments)")
	}
	return raw, nil
}

// mcpAnswer ends c with how its tools/call returned, unless something
// ended it first.
func (ss *session) mcpAnswer(c *call, res *mcp.CallToolResult, err error) {
	ss.mcp.conn.forget(c.id)
	var rpcErr *jsonrpc.Error
	ss.mu.Lock()
	switch {
	case c.ended:
	case err == nil:
		ss.answered = true
		ss.end(c, Outcome{Kind: Answered, Result: mcpResult(c, res)})
	case errors.As(err, &rpcErr):
		// The server refused the call (unknown tool, bad arguments): it
		// answered, and nothing ran.
		ss.answered = true
		ss.end(c, Outcome{Kind: Answered, Result: failed(c, "MCP error "+strconv.FormatInt(rpcErr.Code, 10)+": "+clip.String(rpcErr.Message, maxMCPErrorBytes))})
	default:
		ss.mu.Unlock()
		// The connection failed: the process is going or broke the
		// protocol. Either way it is given up, and c is lost with it.
		// A process that is going is left to the reaper, which knows
		// whether a limit ended it.
		t := time.NewTimer(ss.sup.cfg.StopGrace)
		defer t.Stop()
		select {
		case <-ss.exited:
			return
		case <-t.C:
		}
		ss.sup.cfg.Logger.Warn("MCP tools/call failed", "tool", ss.sup.cfg.Tool, "session", ss.id, "err", clip.String(err.Error(), maxMCPErrorBytes))
		ss.poison(poison(ReasonMCP, "tools/call failed while the server ran"))
		return
	}
	ss.mu.Unlock()
}

// mcpResult maps a tools/call result to a result frame: isError is a
// failure with the result's text; otherwise a JSON tool answers the
// structured content, or the text when it is JSON, or the text as a JSON
// string, and a text tool answers the text.
func mcpResult(c *call, res *mcp.CallToolResult) protocol.Result {
	var text strings.Builder
	for _, content := range res.Content {
		if tc, ok := content.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		msg := text.String()
		if msg == "" {
			msg = "the MCP tool reported an error"
		}
		return failed(c, clip.String(msg, maxMCPErrorBytes))
	}
	if c.req.Invoke.Input.Format != protocol.FormatJSON {
		p := protocol.TextPayload(text.String())
		return protocol.Result{RequestID: c.id, Attempt: c.req.Invoke.Attempt, Status: protocol.ResultSucceeded, Payload: &p}
	}
	var raw json.RawMessage
	switch {
	case res.StructuredContent != nil:
		raw, _ = json.Marshal(res.StructuredContent)
	case json.Valid([]byte(text.String())) && text.Len() > 0:
		raw = json.RawMessage(text.String())
	default:
		raw, _ = json.Marshal(text.String())
	}
	p := protocol.JSONPayload(raw)
	return protocol.Result{RequestID: c.id, Attempt: c.req.Invoke.Attempt, Status: protocol.ResultSucceeded, Payload: &p}
}

func failed(c *call, msg string) protocol.Result {
	return protocol.Result{RequestID: c.id, Attempt: c.req.Invoke.Attempt, Status: protocol.ResultFailed, Error: msg}
}

// mcpCancel sends notifications/cancelled for c, once. MCP has no
// acknowledgement: the call goes on until its result, its deadline, or
// Config.CancelGrace, after which the process is stopped and the call
// is lost, its effect indeterminate; it is never reported cancelled.
func (ss *session) mcpCancel(c *call) {
	ss.mu.Lock()
	if ss.dead != nil || c.ended || c.cancelSent {
		ss.mu.Unlock()
		return
	}
	// No disposition follows: the call is forgotten as soon as it ends.
	c.cancelSent, c.disposed = true, true
	c.unsupported = c.req.Uncancellable
	ss.mu.Unlock()
	if !c.req.Uncancellable {
		_ = ss.mcp.conn.cancel(c.id)
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if c.ended {
		return
	}
	ss.armGraceLocked(c)
}

// mcpConn is the client's connection to the server: the SDK's stdio
// connection, watched in both directions.
type mcpConn struct {
	mcp.Connection
	ss *session

	mu sync.Mutex
	// ids maps a call's progress token to its JSON-RPC request id, for
	// notifications/cancelled.
	ids map[string]jsonrpc.ID
	// early holds the tokens of calls cancelled before their request was
	// written; Write sends the cancellation right after the request.
	early map[string]bool
}

// Connect makes mcpConn its own transport.
func (c *mcpConn) Connect(context.Context) (mcp.Connection, error) { return c, nil }

// Write notes the request id of each tools/call.
func (c *mcpConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" && req.ID.IsValid() {
		var p struct {
			Meta struct {
				Token any `json:"progressToken"`
			} `json:"_meta"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if token, ok := p.Meta.Token.(string); ok {
				c.mu.Lock()
				if c.ids == nil {
					c.ids = map[string]jsonrpc.ID{}
				}
				c.ids[token] = req.ID
				early := c.early[token]
				delete(c.early, token)
				c.mu.Unlock()
				if err := c.Connection.Write(ctx, msg); err != nil || !early {
					return err
				}
				return c.cancel(token)
			}
		}
	}
	return c.Connection.Write(ctx, msg)
}

// Read releases progress and notes list changes in wire order, so every
// chunk a server sent before its result is released before the result
// ends the call.
func (c *mcpConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || req.ID.IsValid() {
			return msg, nil
		}
		switch req.Method {
		case "notifications/progress":
			var p mcp.ProgressNotificationParams
			if json.Unmarshal(req.Params, &p) == nil {
				c.ss.mcpProgress(p)
			}
			continue
		case "notifications/tools/list_changed":
			c.ss.mu.Lock()
			c.ss.mcp.stale = true
			c.ss.mu.Unlock()
		}
		return msg, nil
	}
}

// forget drops what Write noted of the call with token, once it ended.
func (c *mcpConn) forget(token string) {
	c.mu.Lock()
	delete(c.ids, token)
	delete(c.early, token)
	c.mu.Unlock()
}

// cancel writes notifications/cancelled for the call with token.
func (c *mcpConn) cancel(token string) error {
	c.mu.Lock()
	id, ok := c.ids[token]
	delete(c.ids, token)
	if !ok {
		// Not written yet: Write sends it after the request.
		if c.early == nil {
			c.early = map[string]bool{}
		}
		c.early[token] = true
	}
	c.mu.Unlock()
	if !ok {
		return nil
	}
	n, err := jsonrpc2Notification("notifications/cancelled", map[string]any{"requestId": id.Raw(), "reason": "cancelled by the host"})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), mcpListTimeout)
	defer cancel()
	return c.Connection.Write(ctx, n)
}

func jsonrpc2Notification(method string, params any) (*jsonrpc.Request, error) {
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	return &jsonrpc.Request{Method: method, Params: b}, nil
}

// mcpProgress releases a progress notification as a chunk of its call:
// the message, or "progress/total" when it has none. A notification for
// no call in flight is ignored; refused chunks past the flood slack give
// the server up, as for any process.
func (ss *session) mcpProgress(p mcp.ProgressNotificationParams) {
	token, _ := p.ProgressToken.(string)
	ss.mu.Lock()
	c := ss.calls[token]
	if c == nil || c.ended {
		ss.mu.Unlock()
		return
	}
	c.chunks++
	release := c.req.Chunk
	ss.mu.Unlock()
	text := p.Message
	if text == "" {
		text = strconv.FormatFloat(p.Progress, 'g', -1, 64)
		if p.Total > 0 {
			text += "/" + strconv.FormatFloat(p.Total, 'g', -1, 64)
		}
	}
	if release != nil && release(text) == nil {
		return
	}
	ss.mu.Lock()
	c.refused++
	flood := c.refused > ss.sup.cfg.FloodSlack
	ss.mu.Unlock()
	if flood {
		ss.poison(poison(ReasonFlood, "call %s kept streaming past its bounds (%d chunks refused)", c.id, c.refused))
	}
}
