package itest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// mcpCatalog is examples/mcp/catalog.yaml, as docs/mcp.md shows it, with
// a short deadline on text.upper so a cancelled call ends soon, and
// containment on or off.
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
			s.MCP.Contain = nil
		}
		if s.Name == "text.upper" {
			s.Deadline = toolspec.Duration(3 * time.Second)
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

			id = c.submit(`return await tool.start_json("text.upper", {text: "` + strings.Repeat("word ", 40) + `"})`)
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
