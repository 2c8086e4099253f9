package itest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// mcpCatalog is examples/mcp/catalog.yaml, as docs/mcp.md shows it, with
// a shorter deadline on text.upper so a cancelled call ends sooner (yet
// long enough for a first call to start the server on a loaded machine),
// and containment on or off.
func mcpCatalog(t *testing.T, contained bool) *toolspec.Set {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	if contained {
		requireBwrap(t)
	}
	cat, err := toolspec.Load(filepath.Join(repoRoot(t), "examples", "mcp", "catalog.yaml"))
	must(t, err)
	for i := range cat.Tools {
		s := &cat.Tools[i]
		if !contained {
			s.MCP.Contain = &toolspec.Contain{Disabled: true}
		}
		if s.Name == "text.upper" {
			s.Deadline = toolspec.Duration(10 * time.Second)
		}
	}
	must(t, cat.CheckCommands())
	set, err := cat.Compile()
	must(t, err)
	return set
}

// The example MCP server's tools run on the pool from their catalog
// entries: one server process for both, progress as chunks, structured
// results, and a cancellation that the server honours by not answering,
// which is never confirmed as cancelled: the call ends at its deadline,
// indeterminate.
func TestMCPServerToolsEndToEnd(t *testing.T) {
	for _, contained := range []bool{false, true} {
		t.Run(fmt.Sprintf("contained=%v", contained), func(t *testing.T) {
			set := mcpCatalog(t, contained)
			c := newCluster(t, options{defs: func() *toolspec.Set { return set }})
			c.startWorker("w1", func(a *workeragent.Agent) {
				for _, name := range set.Names() {
					def, _ := set.Lookup(name)
					must(t, a.HandleTool(def, nil))
				}
			})

			id := c.submit(`return await tool.start_json("text.upper", {text: "hello big world"})`)
			s := c.wait(id, 30*time.Second)
			if s.State != hostloop.SessionCompleted || s.Value != "HELLO BIG WORLD" {
				t.Fatalf("session %s %q (%v), want completed HELLO BIG WORLD", s.State, s.Value, s.Err)
			}
			if got := c.obs.chunkTexts(id); strings.Join(got, "|") != "word 1/3: hello|word 2/3: big|word 3/3: world" {
				t.Errorf("chunks %q", got)
			}

			id = c.submit(`const r = await tool.start_json("text.count_words", {text: "one two three four"}); return r.words`)
			if s := c.wait(id, 30*time.Second); s.State != hostloop.SessionCompleted || s.Value != "4" {
				t.Fatalf("count_words session %s %q (%v)", s.State, s.Value, s.Err)
			}

			id = c.submit(`return await tool.start_json("text.upper", {text: "` + strings.Repeat("word ", 80) + `"})`)
			op := c.liveOp(id)
			waitChunk(t, c, id)
			ctx, cancel := opCtx()
			defer cancel()
			must(t, c.loop.Cancel(ctx, id, op.ID))
			s = c.wait(id, 30*time.Second)
			if s.State != hostloop.SessionFailed || s.Err == nil {
				t.Fatalf("cancelled session %s (%v), want failed", s.State, s.Err)
			}
			_, audit := c.status(id)
			for _, e := range audit {
				if strings.Contains(string(e.Outcome), "cancelled") {
					t.Fatalf("an MCP call was confirmed cancelled: %+v (session error %v)", e, s.Err)
				}
			}
			t.Logf("cancelled call ended: %v", s.Err)
		})
	}
}

// itestMCPEnv makes the test binary an MCP server (see TestMain), built
// with the SDK:
//
//	steps {n}            reports n steps as progress, answers "done"
//	crash_once {marker}  the first run (marker absent) creates it and exits 3 mid-call; later runs answer "ran"
//	hang                 never answers
const itestMCPEnv = "SPLASH_ITEST_MCP"

func runItestMCPServer() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "itest", Version: "1"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "steps"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		N int `json:"n"`
	}) (*mcp.CallToolResult, any, error) {
		for i := 1; i <= in.N; i++ {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Message: fmt.Sprintf("step %d", i)})
		}
		return text("done"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash_once"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Marker string `json:"marker"`
	}) (*mcp.CallToolResult, any, error) {
		if _, err := os.Stat(in.Marker); errors.Is(err, os.ErrNotExist) {
			_ = os.WriteFile(in.Marker, nil, 0o600)
			os.Exit(3)
		}
		return text("ran"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hang"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		select {}
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return 0
}

// goMCPTool is a definition of one tool of this binary as an uncontained
// MCP server.
func goMCPTool(t testing.TB, name string, idempotent bool, deadline time.Duration) toolspec.Spec {
	t.Helper()
	exe, err := os.Executable()
	must(t, err)
	return toolspec.Spec{
		Name: name, Format: toolspec.FormatJSON, Idempotent: idempotent, Deadline: toolspec.Duration(deadline),
		Stream: &toolspec.StreamPolicy{MaxChunks: 16, MaxChunkBytes: 64, MaxSourceBytes: 1024, MaxReleasedBytes: 1024},
		// Uncontained: the crash test leaves its marker in a file under
		// /tmp, which a sandbox would not share.
		MCP: &toolspec.MCP{Command: []string{exe}, Env: []string{itestMCPEnv + "=1"}, Contain: &toolspec.Contain{Disabled: true}},
	}
}

// A Go MCP server's tools on the pool: progress as chunks; a server that
// crashes mid-call is restarted, the call indeterminate for a tool whose
// effect must not repeat and run again for an idempotent one; a hung call
// is stopped at its deadline.
func TestGoMCPServerOnThePool(t *testing.T) {
	steps := compile(t, goMCPTool(t, "go.steps", true, 20*time.Second))
	claimed := compile(t, goMCPTool(t, "go.crash_once", false, 20*time.Second))
	again := compile(t, toolspec.Spec{Name: "go.again", Format: toolspec.FormatJSON, Idempotent: true, Deadline: toolspec.Duration(20 * time.Second),
		MCP: &toolspec.MCP{Command: claimed.Spec().MCP.Command, Env: claimed.Spec().MCP.Env, Contain: claimed.Spec().MCP.Contain, Tool: "crash_once"}})
	hang := compile(t, goMCPTool(t, "go.hang", false, time.Second))
	set := setOf(t, steps, claimed, again, hang)
	c := newCluster(t, options{defs: func() *toolspec.Set { return set }})
	c.startWorker("w1", func(a *workeragent.Agent) {
		for _, def := range []*toolspec.Tool{steps, claimed, again, hang} {
			must(t, a.HandleTool(def, nil))
		}
	})

	id := c.submit(`return await tool.start_json("go.steps", {n: 3})`)
	if s := c.wait(id, 30*time.Second); s.State != hostloop.SessionCompleted || s.Value != "done" {
		t.Fatalf("steps: %s %q (%v)", s.State, s.Value, s.Err)
	}
	if got := strings.Join(c.obs.chunkTexts(id), "|"); got != "step 1|step 2|step 3" {
		t.Errorf("chunks %q", got)
	}

	marker := filepath.Join(t.TempDir(), "crashed")
	id = c.submit(`return await tool.start_json("go.crash_once", {marker: ` + strconv.Quote(marker) + `})`)
	if s := c.wait(id, 30*time.Second); s.State != hostloop.SessionFailed || s.Err == nil || !strings.Contains(s.Err.Error(), "indeterminate") {
		t.Fatalf("crash of a claimed call: %s (%v), want failed indeterminate", s.State, s.Err)
	}
	marker = filepath.Join(t.TempDir(), "crashed")
	id = c.submit(`return await tool.start_json("go.again", {marker: ` + strconv.Quote(marker) + `})`)
	if s := c.wait(id, 30*time.Second); s.State != hostloop.SessionCompleted || s.Value != "ran" {
		t.Fatalf("crash of an idempotent call: %s %q (%v), want it run again on a restarted server", s.State, s.Value, s.Err)
	}

	id = c.submit(`return await tool.start_json("go.hang", {})`)
	if s := c.wait(id, 30*time.Second); s.State != hostloop.SessionFailed || s.Err == nil {
		t.Fatalf("hung call: %s (%v), want failed at its deadline", s.State, s.Err)
	}
	// The server was stopped: a later call runs in a fresh one.
	id = c.submit(`return await tool.start_json("go.steps", {n: 1})`)
	if s := c.wait(id, 30*time.Second); s.State != hostloop.SessionCompleted {
		t.Fatalf("after the watchdog: %s (%v)", s.State, s.Err)
	}
}
