package itest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/sdk/go/splashtool"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// itestToolEnv makes the test binary the Go tool of these tests (see
// TestMain): a splashtool tool whose input picks what it does.
//
//	echo:X            answers X
//	effect:FILE       appends a line to FILE (an effect counted outside the worker), answers "done"
//	crash-once:FILE   the first run (FILE absent) creates FILE and exits 3 mid-call; later runs append and answer
//	crash             exits 3 mid-call
const itestToolEnv = "SPLASH_ITEST_TOOL"

func runItestTool() int {
	err := splashtool.Serve(func(ctx context.Context, call *splashtool.Call) (splashtool.Output, error) {
		verb, arg, _ := strings.Cut(call.Input.Text, ":")
		switch verb {
		case "echo":
			return splashtool.Text(arg), nil
		case "crash":
			os.Exit(3)
		case "crash-once":
			if _, err := os.Stat(arg); errors.Is(err, os.ErrNotExist) {
				_ = os.WriteFile(arg, nil, 0o600)
				os.Exit(3)
			}
		}
		f, err := os.OpenFile(arg, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return splashtool.Output{}, splashtool.Permanent(err)
		}
		fmt.Fprintln(f, call.IdempotencyKey)
		f.Close()
		return splashtool.Text("done"), nil
	}, splashtool.Cancellable(true))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// compile compiles one definition or fails the test.
func compile(t testing.TB, s toolspec.Spec) *toolspec.Tool {
	t.Helper()
	def, err := s.Compile()
	must(t, err)
	return def
}

func setOf(t testing.TB, defs ...*toolspec.Tool) *toolspec.Set {
	t.Helper()
	set, err := toolspec.NewSet(defs...)
	must(t, err)
	return set
}

// repoRoot is the module's root, from this package's directory.
func repoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	must(t, err)
	return filepath.Join(wd, "..", "..")
}

// pythonTool is the catalog entry of examples/python/slow_upper.py, as
// docs/catalog.md writes it.
func pythonTool(t testing.TB, contained bool) toolspec.Spec {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	s := toolspec.Spec{
		Name: "text.slowupper", Description: "upper-cases its input, a word at a time",
		Cancellable: true, MaxAttempts: 2, Deadline: toolspec.Duration(20 * time.Second),
		Stream: &toolspec.StreamPolicy{MaxChunks: 16, MaxChunkBytes: 256, MaxSourceBytes: 4096, MaxReleasedBytes: 4096},
		Process: &toolspec.Process{
			Command: []string{py, "slow_upper.py"},
			Dir:     filepath.Join(repoRoot(t), "examples", "python"),
			Env:     []string{"PYTHONPATH=../../sdk/python"},
			Contain: &toolspec.Contain{Disabled: true},
		},
	}
	if contained {
		requireBwrap(t)
		// In the sandbox, python3 is the system's (the worker's PATH may
		// name a version manager's shim in its home), and the SDK is
		// bound read-only as the example's catalog binds it.
		s.Process.Command[0] = "python3"
		s.Process.Contain = &toolspec.Contain{ROBinds: []string{filepath.Join(repoRoot(t), "sdk", "python")}}
	}
	return s
}

func requireBwrap(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("SPLASH_BWRAP") == "require" {
			t.Fatalf("bwrap required: %v", err)
		}
		t.Skip("bwrap not installed (apt-get install bubblewrap)")
	}
}

// A script's call runs in the Python example tool, through the whole
// fabric: live chunks, a transient failure retried with the same key, and
// a cancellation acknowledged by the tool; uncontained and under
// Bubblewrap.
func TestPythonProcessToolEndToEnd(t *testing.T) {
	for _, contained := range []bool{false, true} {
		t.Run(fmt.Sprintf("contained=%v", contained), func(t *testing.T) {
			def := compile(t, pythonTool(t, contained))
			c := newCluster(t, options{defs: func() *toolspec.Set { return setOf(t, def) }})
			c.startWorker("w1", func(a *workeragent.Agent) { must(t, a.HandleTool(def, nil)) })

			id := c.submit(`return await tool.start("text.slowupper", "hello big world")`)
			s := c.wait(id, 30*time.Second)
			if s.State != hostloop.SessionCompleted || s.Value != "HELLO BIG WORLD" {
				t.Fatalf("session %s %q (%v), want completed HELLO BIG WORLD", s.State, s.Value, s.Err)
			}
			if got := c.obs.chunkTexts(id); strings.Join(got, "|") != "word 1/3: hello|word 2/3: big|word 3/3: world" {
				t.Errorf("chunks %q", got)
			}

			id = c.submit(`return await tool.start("text.slowupper", "flaky input")`)
			if s := c.wait(id, 30*time.Second); s.State != hostloop.SessionCompleted || s.Value != "FLAKY INPUT" {
				t.Fatalf("flaky session %s %q (%v), want completed on the retry", s.State, s.Value, s.Err)
			}

			id = c.submit(`return await tool.start("text.slowupper", "` + strings.Repeat("word ", 12) + `")`)
			op := c.liveOp(id)
			waitChunk(t, c, id)
			ctx, cancel := opCtx()
			defer cancel()
			must(t, c.loop.Cancel(ctx, id, op.ID))
			s = c.wait(id, 30*time.Second)
			if s.State != hostloop.SessionFailed || s.Err == nil || !strings.Contains(s.Err.Error(), "cancel") {
				t.Fatalf("cancelled session %s (%v), want failed by the acknowledged cancellation", s.State, s.Err)
			}
		})
	}
}

func waitChunk(t testing.TB, c *cluster, id hostloop.SessionID) {
	t.Helper()
	waitUntil(t, "a chunk of "+string(id), func() bool { return len(c.obs.chunkTexts(id)) > 0 })
}

// goTool is a definition of this binary as an uncontained process tool.
func goTool(t testing.TB, name string, idempotent bool) toolspec.Spec {
	t.Helper()
	exe, err := os.Executable()
	must(t, err)
	return toolspec.Spec{
		Name: name, Idempotent: idempotent, Deadline: toolspec.Duration(20 * time.Second),
		// Uncontained: these tests count effects in files under /tmp,
		// which a sandbox would not share.
		Process: &toolspec.Process{Command: []string{exe}, Env: []string{itestToolEnv + "=1"}, Concurrency: 2,
			Contain: &toolspec.Contain{Disabled: true}},
	}
}

// A tool process that crashes mid-call: for a tool whose effect must not
// repeat, the call ends indeterminate; for an idempotent one, the call is
// delivered again, runs in a fresh process and answers once.
func TestProcessToolCrashMidCall(t *testing.T) {
	t.Run("claimed is indeterminate", func(t *testing.T) {
		def := compile(t, goTool(t, "go.claimed", false))
		c := newCluster(t, options{defs: func() *toolspec.Set { return setOf(t, def) }})
		c.startWorker("w1", func(a *workeragent.Agent) { must(t, a.HandleTool(def, nil)) })
		id := c.submit(`return await tool.start("go.claimed", "crash")`)
		s := c.wait(id, 30*time.Second)
		if s.State != hostloop.SessionFailed || s.Err == nil || !strings.Contains(s.Err.Error(), "indeterminate") {
			t.Fatalf("session %s (%v), want failed indeterminate", s.State, s.Err)
		}
	})
	t.Run("idempotent runs again", func(t *testing.T) {
		def := compile(t, goTool(t, "go.idempotent", true))
		c := newCluster(t, options{defs: func() *toolspec.Set { return setOf(t, def) }})
		c.startWorker("w1", func(a *workeragent.Agent) { must(t, a.HandleTool(def, nil)) })
		marker := filepath.Join(t.TempDir(), "effects")
		id := c.submit(`return await tool.start("go.idempotent", "crash-once:` + marker + `")`)
		s := c.wait(id, 30*time.Second)
		if s.State != hostloop.SessionCompleted || s.Value != "done" {
			t.Fatalf("session %s %q (%v), want completed", s.State, s.Value, s.Err)
		}
		b, err := os.ReadFile(marker)
		must(t, err)
		if lines := strings.Count(string(b), "\n"); lines != 1 {
			t.Errorf("the effect ran %d times after the crash, want once", lines)
		}
	})
}

// A worker whose definition of a tool differs from the host's refuses the
// call with a clear error instead of running it under the wrong contract.
func TestDefinitionMismatchRefused(t *testing.T) {
	hostDef := compile(t, toolspec.Spec{Name: demotools.Upper, Idempotent: true, MaxOutputBytes: 64})
	workerDef := compile(t, toolspec.Spec{Name: demotools.Upper, Idempotent: true, MaxOutputBytes: 128})
	c := newCluster(t, options{defs: func() *toolspec.Set { return setOf(t, hostDef) }})
	var agent *workeragent.Agent
	c.startWorker("w1", func(a *workeragent.Agent) {
		agent = a
		h, err := demotools.Handler(demotools.Upper)
		must(t, err)
		must(t, a.HandleTool(workerDef, h))
	})
	id := c.submit(`return await tool.start("demo.upper", "hi")`)
	s := c.wait(id, 30*time.Second)
	if s.State != hostloop.SessionFailed || s.Err == nil || !strings.Contains(s.Err.Error(), "tool definition mismatch") {
		t.Fatalf("session %s (%v), want failed with a definition mismatch", s.State, s.Err)
	}
	if st := agent.Stats(); st.ContractMismatches != 1 || st.Executed != 0 {
		t.Errorf("mismatches %d executed %d, want 1 and 0", st.ContractMismatches, st.Executed)
	}
}

// A running host picks up a tool published to the fabric's catalog,
// without a restart: a script naming it is refused before, and runs
// after.
func TestCatalogChangePickedUpByRunningHost(t *testing.T) {
	def, err := demotools.Definition(demotools.Upper)
	must(t, err)
	live := fabric.NewLiveCatalog(nil)
	c := newCluster(t, options{defs: live.Current})
	ctx, cancel := opCtx()
	defer cancel()
	store, err := fabric.OpenCatalogStore(ctx, c.hostJS, c.fcfg, true)
	must(t, err)
	stop, err := store.Watch(context.Background(), live.SetPublished, func(err error) { t.Errorf("watch: %v", err) })
	must(t, err)
	t.Cleanup(stop)
	c.startWorker("w1", func(a *workeragent.Agent) { must(t, demotools.Register(a, demotools.Upper)) })

	if _, err := c.loop.Submit(ctx, hostloop.Submission{Source: `return await tool.start("demo.upper", "hi")`}); !errors.Is(err, host.ErrUnknownTool) {
		t.Fatalf("before publishing: %v, want ErrUnknownTool", err)
	}
	_, err = store.Apply(ctx, &toolspec.Catalog{Tools: []toolspec.Spec{def.Spec()}})
	must(t, err)
	waitUntil(t, "the host to see the published tool", func() bool {
		_, ok := live.Current().Lookup(demotools.Upper)
		return ok
	})
	id := c.submit(`return await tool.start("demo.upper", "hi")`)
	if s := c.wait(id, 30*time.Second); s.State != hostloop.SessionCompleted || s.Value != "HI" {
		t.Fatalf("after publishing: %s %q (%v)", s.State, s.Value, s.Err)
	}
}

func (o *observer) chunkTexts(id hostloop.SessionID) []string {
	var out []string
	for _, c := range o.chunksOf(id) {
		out = append(out, c.Text)
	}
	return out
}

func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, 30*time.Second, what, cond)
}
