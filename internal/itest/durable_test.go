package itest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
	"github.com/splashfabric/splashfabric/workflow"
)

// gatedLog is the host's ledger log with a hand on its writes: a test can
// hold the first Append that stores an input of a kind, before it writes
// (gateBefore) or after (gateAfter), then let it go on or fail it as if the
// process had died there.
type gatedLog struct {
	workflow.Log

	mu      sync.Mutex
	mode    gateMode
	kind    workflow.InputKind
	held    chan struct{} // closed when a write is held
	release chan bool     // true lets a held write go on, false fails it
	stored  []workflow.Entry
}

type gateMode int

const (
	gateOpen gateMode = iota
	gateBefore
	gateAfter
)

// arm makes the first Append holding an input of kind stop at mode; it
// returns the channel closed when it does.
func (g *gatedLog) arm(mode gateMode, kind workflow.InputKind) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mode, g.kind, g.held, g.release = mode, kind, make(chan struct{}), make(chan bool, 1)
	return g.held
}

// open lets a held write go on (true) or fail it (false).
func (g *gatedLog) open(proceed bool) {
	g.mu.Lock()
	release := g.release
	g.mode, g.release = gateOpen, nil
	g.mu.Unlock()
	if release != nil {
		release <- proceed
	}
}

func (g *gatedLog) Append(ctx context.Context, session string, from int, entries []workflow.Entry) error {
	g.mu.Lock()
	mode, held, release := g.mode, g.held, g.release
	if mode != gateOpen && holds(entries, g.kind) {
		g.mode = gateOpen
	} else {
		mode = gateOpen
	}
	g.mu.Unlock()
	wait := func() bool {
		close(held)
		select {
		case ok := <-release:
			return ok
		case <-ctx.Done():
			return false
		}
	}
	if mode == gateBefore && !wait() {
		return errors.New("gated: the process died before the write")
	}
	if err := g.Log.Append(ctx, session, from, entries); err != nil {
		return err
	}
	g.mu.Lock()
	g.stored = append(g.stored, entries...)
	g.mu.Unlock()
	if mode == gateAfter && !wait() {
		return errors.New("gated: the process died after the write")
	}
	return nil
}

func holds(entries []workflow.Entry, kind workflow.InputKind) bool {
	for _, e := range entries {
		if e.Applied != nil && e.Applied.Kind == kind {
			return true
		}
	}
	return false
}

// storedKinds lists the applied inputs stored so far.
func (g *gatedLog) storedKinds() []workflow.InputKind {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []workflow.InputKind
	for _, e := range g.stored {
		if e.Applied != nil {
			out = append(out, e.Applied.Kind)
		}
	}
	return out
}

// killHost ends the host's loop. Gracefully, it stops as an orderly
// shutdown does; otherwise its connection is cut first (and a held ledger
// write fails), so nothing more of it reaches NATS, as when the process
// is killed. startHost brings up the next process of the same host id.
func (c *cluster) killHost(graceful bool) {
	c.t.Helper()
	if graceful {
		c.stopHost(true)
		return
	}
	c.hostNC.Close()
	c.gate.open(false)
	c.stopHost(false)
	c.hostNC = c.srv.Connect(reconnecting()...)
	var err error
	c.hostJS, err = jetstream.New(c.hostNC)
	must(c.t, err)
}

// successes counts, per idempotency key, the runs that took effect: the
// audit kept outside the worker.
type successes struct {
	mu    sync.Mutex
	byKey map[string]int
}

func (s *successes) add(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey == nil {
		s.byKey = make(map[string]int)
	}
	s.byKey[key]++
}

func (s *successes) check(t testing.TB, want int) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byKey) != want {
		t.Fatalf("%d operations took effect, want %d: %v", len(s.byKey), want, s.byKey)
	}
	for k, n := range s.byKey {
		if n != 1 {
			t.Fatalf("operation %s took effect %d times", k, n)
		}
	}
}

// twoStepScript calls the first tool, then the second with what the first
// answered; a second call that ends failed (cancelled) reads "stopped".
const twoStepScript = `const a = await tool.start("it.step", "one");
let b;
try { b = await tool.start(%q, a + "-two"); } catch (e) { b = "stopped"; }
a + "|" + b`

// The points of an operation's life (the script's second call) at which
// TestDurableSessionSurvivesHostStop stops the host.
var interruptions = []string{
	"before_persist",
	"after_persist_before_publish",
	"after_publish_before_pickup",
	"while_worker_runs",
	"after_answer_before_apply",
	"during_retry_backoff",
	"during_cancellation",
	"during_streaming",
}

// TestDurableSessionSurvivesHostStop stops the host at each point of an
// operation's life, gracefully and by cutting it off, and checks that the
// script completes with the value of an uninterrupted run and that every
// effect ran once, counted outside the worker.
func TestDurableSessionSurvivesHostStop(t *testing.T) {
	for _, p := range interruptions {
		for _, graceful := range []bool{true, false} {
			name := p + "/killed"
			if graceful {
				name = p + "/graceful"
			}
			t.Run(name, func(t *testing.T) { runInterruption(t, p, graceful) })
		}
	}
}

func runInterruption(t *testing.T, point string, graceful bool) {
	step := func(name string) toolspec.Spec {
		s := tool(name)
		s.Cancellable, s.MaxAttempts = true, 3
		s.Stream = &toolspec.StreamPolicy{MaxChunks: 16, MaxChunkBytes: 64, MaxSourceBytes: 1024, MaxReleasedBytes: 1024}
		return s
	}
	retryInitial := 20 * time.Millisecond
	if point == "during_retry_backoff" {
		// Long enough that the stop lands inside it.
		retryInitial = 3 * time.Second
	}
	c := newCluster(t, options{tools: []toolspec.Spec{step("it.step"), step("it.later")}, durable: true, retryInitial: retryInitial, retryMax: retryInitial})
	var ok successes
	secondStarted := make(chan struct{}, 8)
	releaseSecond := make(chan struct{})
	// cancelSeen: the worker heard the cancellation and has not answered
	// it yet.
	cancelSeen := make(chan struct{}, 8)
	handler := workeragent.HandlerFunc(func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
		in := call.Input.Text
		if !strings.HasSuffix(in, "-two") {
			ok.add(call.IdempotencyKey)
			return workeragent.Result(in + "!"), nil
		}
		secondStarted <- struct{}{}
		switch point {
		case "during_retry_backoff":
			if call.Attempt == 1 {
				return workeragent.Output{}, workeragent.Retryable(errors.New("busy, try again"))
			}
		case "during_streaming":
			_ = call.Stream.Write("half way")
		}
		select {
		case <-releaseSecond:
		case <-ctx.Done():
			if !errors.Is(context.Cause(ctx), workeragent.ErrCancelRequested) {
				return workeragent.Output{}, ctx.Err()
			}
			cancelSeen <- struct{}{}
			<-releaseSecond
			return workeragent.Output{}, workeragent.CancelAcknowledged()
		}
		ok.add(call.IdempotencyKey)
		return workeragent.Result(in + "!"), nil
	})
	// Claimed (not idempotent) tools: the journal lets each key run once.
	serve := func(tools ...string) func(*workeragent.Agent) {
		return func(a *workeragent.Agent) {
			for _, name := range tools {
				must(t, a.HandleTool(c.tool(name), handler))
			}
		}
	}
	second := "it.step"
	if point == "after_publish_before_pickup" {
		// No worker serves it until the host is back.
		second = "it.later"
	}
	c.startWorker("w1", serve("it.step"))
	var held <-chan struct{}
	switch point {
	case "before_persist":
		held = c.gate.arm(gateBefore, workflow.InputSucceeded)
	case "after_persist_before_publish":
		held = c.gate.arm(gateAfter, workflow.InputSucceeded)
	}
	id := c.submit(sprintf(twoStepScript, second))
	want := "one!|one!-two!"
	switch point {
	case "before_persist", "after_persist_before_publish":
		testwait.Receive(t, 0, "the ledger write to be held", held)
		if graceful {
			c.gate.open(true)
		}
	case "after_publish_before_pickup":
		testwait.Until(t, 0, "the second call to be published", func() bool { return c.streamSeq(fabric.StreamInvoke) >= 2 })
	case "while_worker_runs", "after_answer_before_apply", "during_streaming":
		testwait.Receive(t, 0, "the second call to start", secondStarted)
	case "during_retry_backoff":
		testwait.Until(t, 0, "the retry to be stored", func() bool {
			return slices.Contains(c.gate.storedKinds(), workflow.InputRetryTransient)
		})
	case "during_cancellation":
		testwait.Receive(t, 0, "the second call to start", secondStarted)
		c.cancel(id)
		testwait.Until(t, 0, "the cancellation to be stored", func() bool {
			return slices.Contains(c.gate.storedKinds(), workflow.InputCancelRequested)
		})
		testwait.Receive(t, 0, "the worker to hear the cancellation", cancelSeen)
		want = "one!|stopped"
	}
	events := c.streamSeq(fabric.StreamEvents)
	c.killHost(graceful)
	if point == "after_answer_before_apply" {
		// The answer comes while no host runs.
		close(releaseSecond)
		testwait.Until(t, 0, "the answer to be stored", func() bool { return c.streamSeq(fabric.StreamEvents) > events })
	}
	c.startHost()
	switch point {
	case "after_publish_before_pickup":
		c.startWorker("w2", serve("it.later"))
		close(releaseSecond)
	case "after_answer_before_apply":
	default:
		close(releaseSecond)
	}
	wantCompleted(t, c.wait(id, 60*time.Second), want)
	if point == "during_cancellation" {
		ok.check(t, 1)
		return
	}
	ok.check(t, 2)
}

// TestResumedOperationIsReconciled loses an answer for good: the worker
// answers while the host is down and the answer is purged from the
// host's events before it comes back. The resumed operation's invocation
// is published again but the stream drops it as a duplicate, so nothing
// answers; the host asks the tool's workers over NATS, the one that ran
// it answers from its journal, and the script completes with that result
// without the effect running again.
func TestResumedOperationIsReconciled(t *testing.T) {
	c := newCluster(t, options{tools: []toolspec.Spec{tool("it.step")}, durable: true, reconcileAfter: 300 * time.Millisecond})
	var ok successes
	started, release := make(chan struct{}, 1), make(chan struct{})
	w := c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.step"), workeragent.HandlerFunc(func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
			started <- struct{}{}
			<-release
			ok.add(call.IdempotencyKey)
			return workeragent.Result(call.Input.Text + "!"), nil
		})))
	})
	id := c.submit(`await tool.start("it.step", "one")`)
	testwait.Receive(t, 0, "the call to start", started)
	events := c.streamSeq(fabric.StreamEvents)
	c.killHost(false)
	close(release)
	testwait.Until(t, 0, "the answer to be stored", func() bool { return c.streamSeq(fabric.StreamEvents) > events })
	ctx, cancel := opCtx()
	defer cancel()
	stream, err := c.hostJS.Stream(ctx, fabric.StreamEvents)
	must(t, err)
	must(t, stream.Purge(ctx, jetstream.WithPurgeSubject(fabric.EventsSubject(hostID, "it.step"))))
	c.startHost()
	wantCompleted(t, c.wait(id, 30*time.Second), "one!")
	ok.check(t, 1)
	// The worker counts its answer after sending it, so the script can
	// complete first.
	testwait.Until(t, 0, "a reconciliation answered", func() bool { return w.Stats().Reconciled > 0 })
}

// TestOldResumedOperationIsNeverDispatchedAgain resumes an operation whose
// attempt is older than the invocation stream's memory of message ids
// (here made tiny), which its earlier process had stored in the ledger
// but never published. Publishing it now could not be told from a second
// dispatch, so the host asks the workers instead: nobody knows of it, and
// once its redelivery horizon passed the claimed tool's call ends
// indeterminate. It never ran.
func TestOldResumedOperationIsNeverDispatchedAgain(t *testing.T) {
	c := newCluster(t, options{tools: []toolspec.Spec{tool("it.step")}, durable: true,
		reconcileAfter: 100 * time.Millisecond, horizon: 500 * time.Millisecond, duplicateWindow: time.Nanosecond})
	var ok successes
	c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.step"), workeragent.HandlerFunc(func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
			ok.add(call.IdempotencyKey)
			return workeragent.Result(call.Input.Text + "!"), nil
		})))
	})
	held := c.gate.arm(gateAfter, workflow.InputSucceeded)
	id := c.submit(sprintf(twoStepScript, "it.step"))
	testwait.Receive(t, 0, "the second call's ledger write to be held", held)
	c.killHost(false)
	c.startHost()
	s := c.wait(id, 30*time.Second)
	wantCompleted(t, s, "one!|stopped")
	ok.check(t, 1)
}
