package itest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"

	"github.com/splashfabric/splashfabric/internal/testwait"
)

// BenchmarkToolCall measures one script call through the whole fabric
// (host loop, sealed invocation, worker agent with its journal, sealed
// answer) three ways in one run: the tool as an in-process Go handler, as
// a process tool (this binary speaking the stdio protocol through the Go
// SDK), and as that process under Bubblewrap. The ratio of the process
// rows to the handler row is what a call costs for living in a child
// process; the process is already running, so no start is counted (see
// toolproc's BenchmarkProcessStart for that).
//
//	go test -run '^$' -bench ToolCall -benchtime 2000x ./internal/itest/
func BenchmarkToolCall(b *testing.B) {
	for _, inflight := range []int{1, 16} {
		for _, kind := range []string{"go", "process", "contained"} {
			b.Run(fmt.Sprintf("inflight=%d/%s", inflight, kind), func(b *testing.B) {
				benchToolCall(b, kind, inflight)
			})
		}
	}
}

func benchToolCall(b *testing.B, kind string, inflight int) {
	spec := goTool(b, "bench.echo", true)
	spec.Process.Concurrency = 16
	spec.Deadline = 0
	switch kind {
	case "go":
		spec.Process = nil
	case "contained":
		requireBwrap(b)
		spec.Process.Contain = nil // the default sandbox
	}
	def := compile(b, spec)
	c := newCluster(b, options{defs: func() *toolspec.Set { return setOf(b, def) }})
	c.startWorker("w1", func(a *workeragent.Agent) {
		var h workeragent.Handler
		if kind == "go" {
			var err error
			if h, err = demotools.Handler(demotools.Echo); err != nil {
				b.Fatal(err)
			}
		}
		must(b, a.HandleTool(def, h, workeragent.Concurrency(16)))
	})
	done := make(chan hostloop.SessionStatus, inflight)
	c.obs.mu.Lock()
	c.obs.onFinal = func(s hostloop.SessionStatus) { done <- s }
	c.obs.mu.Unlock()
	src := `return await tool.start("bench.echo", "echo:x")`
	if kind == "go" {
		src = `return await tool.start("bench.echo", "x")`
	}
	run := func(n int) {
		ctx := context.Background()
		sent, finished := 0, 0
		for finished < n {
			for sent < n && sent-finished < inflight {
				if _, err := c.loop.Submit(ctx, hostloop.Submission{Source: src}); err != nil {
					b.Fatal(err)
				}
				sent++
			}
			select {
			case s := <-done:
				if s.State != hostloop.SessionCompleted {
					b.Fatalf("session %s (%v)", s.State, s.Err)
				}
				finished++
			case <-time.After(testwait.Scale(30 * time.Second)):
				b.Fatalf("%d of %d calls finished", finished, n)
			}
		}
	}
	run(min(100, b.N)) // the process starts, the paths warm up
	b.ResetTimer()
	run(b.N)
	b.StopTimer()
}
