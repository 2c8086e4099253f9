package e2e_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/toolspec"
)

// The README's Python tool on the cluster (deploy/compose/tools.yaml).
const (
	pythonTool   = "text.slowupper"
	pythonInput  = "kill the worker mid call"
	pythonScript = `return await tool.start("text.slowupper", "kill the worker mid call")`
	toolWorkers  = 2
)

// TestScenarioPythonTool: the README's Python tool runs contained on the
// cluster's tool workers (the splash-worker image: Bubblewrap, python3,
// the SDK) under load, and one of them is killed mid-call. Every script
// ends: completed with its input upper-cased, or, for a call the killed
// worker held (a claim in the journal), failed indeterminate or timed out,
// never run again (the tool is not idempotent). The tool records each
// answer in a volume every tool worker shares: no idempotency key there
// twice, and one for each completed script.
func TestScenarioPythonTool(t *testing.T) {
	s := newStack(t)
	// An operator's order: the catalog is applied and the host has made
	// the pool's consumer before the pool starts; a tool worker that
	// binds earlier exits ErrNotProvisioned and restarts until it can.
	s.mustCompose("--profile", "tools", "up", "-d", "--no-color",
		"--scale", "worker=1", "--scale", "toolworker=0")
	s.waitHealthy(3 * time.Minute)
	s.publishTools(filepath.Join(repoRoot(t), "deploy", "compose", "tools.yaml"))
	s.waitConsumer(pythonTool)
	s.mustCompose("--profile", "tools", "up", "-d", "--no-color",
		"--scale", "worker=1", "--scale", fmt.Sprintf("toolworker=%d", toolWorkers))
	s.waitHealthy(3 * time.Minute)
	s.logf("up with %d tool workers: healthy", toolWorkers)
	api := newAPIClient(s.apiURL(), s.apiToken())
	s.firstCall(api)

	l := startLoadOf(t, api, loadClients, pythonScript)
	during(t, 6*time.Second)
	v := s.pickVictimOf("toolworker", "tools")
	if out, err := execDocker("kill", v.container); err != nil {
		t.Fatalf("docker kill: %v %s", err, out)
	}
	s.logf("killed tool worker %s", v.workerID)
	s.lost(v)
	during(t, 20*time.Second)
	s.auditPython(l, v)
}

// waitConsumer waits until a host has made the pool consumer of tool,
// which a bind-only worker of its pool needs to start.
func (s *stack) waitConsumer(tool string) {
	s.t.Helper()
	js := s.opsJS()
	testwait.Until(s.t, time.Minute, "the host made the consumer of "+tool, func() bool {
		ctx, cancel := context.WithTimeout(s.t.Context(), 5*time.Second)
		defer cancel()
		_, err := js.Consumer(ctx, fabric.StreamInvoke, fabric.ConsumerName(tool))
		return err == nil
	})
}

// publishTools publishes a catalog file's definitions to the fabric as
// the ops user, as `splash tools apply` does; the host picks them up.
func (s *stack) publishTools(path string) {
	s.t.Helper()
	cat, err := toolspec.Load(path)
	if err != nil {
		s.fatalf("%s: %v", path, err)
	}
	ctx, cancel := context.WithTimeout(s.t.Context(), time.Minute)
	defer cancel()
	cfg := fabric.DefaultConfig()
	cfg.Replicas = clusterReplicas
	store, err := fabric.OpenCatalogStore(ctx, s.opsJS(), cfg, true)
	if err != nil {
		s.fatalf("catalog store: %v", err)
	}
	applied, err := store.Apply(ctx, cat)
	if err != nil {
		s.fatalf("publish %s: %v", path, err)
	}
	s.logf("published %v", applied)
}

// firstCall waits until the host knows the published tool and a call of
// it runs through: the host has the definition, a tool worker took the
// call and started its sandbox.
func (s *stack) firstCall(api *apiClient) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.t.Context(), 2*time.Minute)
	defer cancel()
	var last string
	testwait.Until(s.t, 2*time.Minute, "a first call of "+pythonTool, func() bool {
		ss, err := api.submit(ctx, `return await tool.start("text.slowupper", "up")`)
		if err != nil {
			last = err.Error() // the host has not seen the tool yet
			return false
		}
		fin, ok := waitTerminal(ctx, api, ss.ID)
		if !ok || fin.State != "completed" || unquote(fin.Value) != "UP" {
			s.fatalf("first call: %+v (last refusal: %s)", fin, last)
		}
		return true
	})
	s.logf("first call of %s answered", pythonTool)
}

// unquote is a script's string value with or without its JSON quotes.
func unquote(v string) string { return strings.Trim(v, `"`) }

// auditPython stops the load and checks the scenario's outcome.
func (s *stack) auditPython(l *load, v *victim) {
	s.t.Helper()
	l.finish()
	final := s.terminal(l)
	ctx, cancel := context.WithTimeout(s.t.Context(), time.Minute)
	defer cancel()
	var completed, lost int
	want := strings.ToUpper(pythonInput)
	for _, ss := range final {
		switch {
		case ss.State == "completed" && unquote(ss.Value) == want:
			completed++
		case ss.State == "completed":
			s.errorf("session %s answered %q, want %q", ss.ID, ss.Value, want)
		case strings.Contains(ss.Error, indeterminate) || strings.Contains(ss.Error, timedOut):
			lost++
		default:
			s.errorf("session %s failed: %s", ss.ID, ss.Error)
		}
	}
	if lost > v.held {
		s.errorf("%d calls ended indeterminate or timed out; the killed worker %s held %d claims", lost, v.workerID, v.held)
	}

	// The tool's own record of its effects, read from a tool worker
	// still running.
	effects := s.toolEffects()
	for key, n := range effects {
		if n != 1 {
			s.errorf("idempotency key %q: the tool's effect ran %d times", key, n)
		}
	}
	// The first call's, and one per completed script; a lost call's at
	// most once.
	if got := len(effects) - 1; got < completed || got > completed+lost {
		s.errorf("the tool recorded %d effects for %d completed and %d lost scripts", got, completed, lost)
	}
	fams, err := l.api.metrics(ctx)
	if err != nil {
		s.fatalf("metrics: %v", err)
	}
	if ok := metricSum(fams, "splash_operations_finished_total", map[string]string{"tool": pythonTool, "outcome": "succeeded"}); int(ok) != completed+1 {
		s.errorf("metrics: %v %s operations succeeded, the audit found %d scripts completed and the first call", ok, pythonTool, completed)
	}
	s.logf("audit: submitted %d (refused %d), completed %d, lost with the worker %d (it held %d claims), effects %d (each once)",
		len(final), l.refused, completed, lost, v.held, len(effects))
}

// toolEffects counts the idempotency keys the tool recorded in the
// effects volume, by key.
func (s *stack) toolEffects() map[string]int {
	s.t.Helper()
	var from string
	for _, id := range s.containers("toolworker") {
		if st := s.inspect(id); len(st) == 1 && st[0].State.Running {
			from = id
			break
		}
	}
	if from == "" {
		s.fatalf("no tool worker runs to read the effects from")
	}
	counts := map[string]int{}
	tr := tar.NewReader(bytes.NewReader(dockerCopy(s.t, from, "/effects")))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			s.fatalf("effects: %v", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			s.fatalf("effects: %v", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line != "" {
				counts[line]++
			}
		}
	}
	return counts
}

// The cluster runs the README's tool under the README's contract: the
// compose catalog's entry differs from examples/python/catalog.yaml's
// only in how it runs, so their digests agree.
func TestComposeToolIsTheExample(t *testing.T) {
	load := func(parts ...string) *toolspec.Tool {
		cat, err := toolspec.Load(filepath.Join(append([]string{repoRoot(t)}, parts...)...))
		if err != nil {
			t.Fatal(err)
		}
		set, err := cat.Compile()
		if err != nil {
			t.Fatal(err)
		}
		tool, ok := set.Lookup(pythonTool)
		if !ok {
			t.Fatalf("%v has no %s", parts, pythonTool)
		}
		return tool
	}
	compose, example := load("deploy", "compose", "tools.yaml"), load("examples", "python", "catalog.yaml")
	if compose.Digest() != example.Digest() {
		t.Fatalf("digests differ: compose %s, example %s", compose.Digest(), example.Digest())
	}
}
