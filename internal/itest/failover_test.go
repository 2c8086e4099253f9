package itest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// peerHost is a host process besides the cluster's own, sharing its
// fabric: its own connection, transport, archive, ledger and leases.
type peerHost struct {
	id      string
	nc      *nats.Conn
	tr      *hostnats.HostTransport
	archive *hostnats.SessionArchive
	leases  *hostnats.HostLeases
	loop    *hostloop.Loop
	stopped bool
}

// testLease is the hosts' lease in the failover tests: short, so an
// abandoned host's sessions move quickly.
const testLease = time.Second

func (c *cluster) startPeer(id string) *peerHost {
	c.t.Helper()
	p := &peerHost{id: id, nc: c.srv.Connect(reconnecting()...)}
	ctx, cancel := opCtx()
	defer cancel()
	var err error
	p.tr, err = hostnats.NewHostTransport(ctx, p.nc, c.fcfg, id, c.key)
	must(c.t, err)
	p.archive, err = hostnats.NewSessionArchive(ctx, p.nc, c.fcfg, c.key)
	must(c.t, err)
	ledger, err := hostnats.NewLedgerLog(ctx, p.nc, c.fcfg, c.key)
	must(c.t, err)
	p.leases, err = hostnats.NewHostLeases(ctx, p.nc, c.fcfg, c.key, testLease)
	must(c.t, err)
	p.loop, err = hostloop.StartLoop(hostloop.LoopConfig{
		Transport: p.tr, HostID: id, Catalog: c.catalog, Observer: c.obs,
		Archive: p.archive, Ledger: ledger, Leases: p.leases,
		AdoptEvery: 100 * time.Millisecond, ArchiveTimeout: 5 * time.Second, LedgerRetry: 100 * time.Millisecond,
		RetryInitial: c.opts.retryInitial, RetryMax: c.opts.retryMax,
		ReconcileAfter: c.opts.reconcileAfter, RedeliveryHorizon: c.opts.horizon, DuplicateWindow: c.opts.duplicateWindow,
	})
	must(c.t, err)
	c.t.Cleanup(func() { p.stop() })
	return p
}

// stop ends the host gracefully.
func (p *peerHost) stop() {
	if p.stopped {
		return
	}
	p.stopped = true
	p.loop.Stop()
	_ = p.tr.Close()
	_ = p.leases.Close()
	_ = p.archive.Close()
}

// abandon ends the host as a kill does: its connection is cut first, so
// nothing more of it reaches NATS and its leases lapse unrenewed.
func (p *peerHost) abandon() {
	_ = p.leases.Close()
	p.nc.Close()
	p.stop()
}

func (p *peerHost) submit(t testing.TB, src string) hostloop.SessionID {
	t.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	s, err := p.loop.Submit(ctx, hostloop.Submission{Source: src})
	must(t, err)
	return s.ID
}

// TestSecondHostAdoptsTheSessionsOfAnAbandonedHost runs two hosts on one
// fabric. Scripts started on the first wait on calls a worker holds; the
// first host is abandoned mid-load; the second adopts every session within
// the lease and a few seconds, takes the answers that come for them
// (published and bound under the first host's request ids), and every
// script completes with each effect once. Asked about a session it does
// not drive, a host names the one that does.
func TestSecondHostAdoptsTheSessionsOfAnAbandonedHost(t *testing.T) {
	const scripts = 12
	c := newCluster(t, options{tools: []toolspec.Spec{tool("it.step")}, durable: true})
	var ok successes
	release := make(chan struct{})
	started := make(chan struct{}, 2*scripts)
	c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.step"), heldSecondStep(&ok, started, release)))
	})
	a, b := c.startPeer("ha"), c.startPeer("hb")
	var ids []hostloop.SessionID
	for i := range scripts {
		p := a
		if i%3 == 0 {
			p = b // a few of the second host's own, untouched by the loss
		}
		ids = append(ids, p.submit(t, sprintf(twoStepScript, "it.step")))
	}
	for range scripts {
		testwait.Receive(t, 0, "the second calls to start", started)
	}
	ctx, cancel := opCtx()
	defer cancel()
	if _, _, err := b.loop.Status(ctx, ids[1]); !errors.As(err, new(*hostloop.SessionElsewhereError)) {
		t.Fatalf("the second host on the first's session: %v, want SessionElsewhereError", err)
	}

	a.abandon()
	lost := time.Now()
	testwait.Until(t, 30*time.Second, "the second host to drive every session", func() bool {
		for _, id := range ids {
			s, _, err := b.loop.Status(ctx, id)
			if err != nil || s.State != hostloop.SessionSuspended || len(s.Operations) != 1 {
				return false
			}
		}
		return true
	})
	adopted := time.Since(lost)
	close(release)
	b.wantCompleted(t, ids, "one!|one!-two!")
	ok.check(t, 2*scripts)
	t.Logf("adopted %d sessions %v after the first host was abandoned (lease %v)", scripts-scripts/3, adopted.Round(time.Millisecond), testLease)
}

// TestAdoptedIdempotentAnswersCompleteUnderTheirHost loses the first host
// while its sessions wait on an idempotent tool, whose answers come while
// no host reads them: they are stored on the answer subjects of the first
// host's events. The invocation stream's memory of message ids is made
// tiny, so the second host, once it has adopted the sessions, cannot
// publish their calls again: the answers it holds for the adopted
// incarnation until each session is in (parked, not refused as unknown)
// complete them, or a reconciliation under the accepting host does (see
// TestReconcileNamesTheSessionsAcceptingHost in hostnats), and every
// script completes without a call running twice.
func TestAdoptedIdempotentAnswersCompleteUnderTheirHost(t *testing.T) {
	const scripts = 6
	l := loseHostWithHeldAnswers(t, options{reconcileAfter: 300 * time.Millisecond, duplicateWindow: time.Nanosecond}, scripts)
	l.b.wantCompleted(t, l.ids, "one!|one!-two!")
	l.ok.check(t, 2*scripts)
}

// heldLoss is what loseHostWithHeldAnswers leaves: the second host, the
// first host's sessions, the worker and the effects it had.
type heldLoss struct {
	c   *cluster
	b   *peerHost
	ids []hostloop.SessionID
	w   *worker
	ok  *successes
}

// loseHostWithHeldAnswers starts, on a durable cluster with opts, a worker
// whose idempotent it.step holds every second call, and two hosts, "ha"
// and "hb". The first takes scripts sessions of twoStepScript and is
// abandoned once every one waits on its second call; then the held calls
// answer, to the first host's answer subjects.
func loseHostWithHeldAnswers(t *testing.T, opts options, scripts int) heldLoss {
	t.Helper()
	opts.tools, opts.durable = []toolspec.Spec{idempotentTool("it.step")}, true
	l := heldLoss{c: newCluster(t, opts), ok: &successes{}}
	release := make(chan struct{})
	started := make(chan struct{}, scripts)
	l.w = l.c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(l.c.tool("it.step"), heldSecondStep(l.ok, started, release)))
	})
	a := l.c.startPeer("ha")
	l.b = l.c.startPeer("hb")
	for range scripts {
		l.ids = append(l.ids, a.submit(t, sprintf(twoStepScript, "it.step")))
	}
	for range scripts {
		testwait.Receive(t, 0, "the second calls to start", started)
	}
	a.abandon()
	close(release)
	return l
}

// TestAnswersStoredBeforeAnAdoptionReachTheAdopter loses the first host
// while its sessions wait on an idempotent tool, and lets every call
// answer before the second host adopts the sessions: the answers wait on
// the first host's answer subjects. The adopter reads those events only
// once the sessions are in its loop, so it takes every stored answer
// itself; reconciliation is put out of reach, so a session completes only
// if its answer was not refused as a call the loop did not know yet.
func TestAnswersStoredBeforeAnAdoptionReachTheAdopter(t *testing.T) {
	const scripts = 6
	l := loseHostWithHeldAnswers(t, options{reconcileAfter: time.Hour}, scripts)
	events, err := l.c.hostJS.Stream(context.Background(), fabric.StreamEvents)
	must(t, err)
	testwait.Until(t, 10*time.Second, "every answer stored", func() bool {
		ctx, cancel := opCtx()
		defer cancel()
		// Answer subjects only: one token (the hash) below a tool's.
		info, err := events.Info(ctx, jetstream.WithSubjectFilter("splash.events.ha.*.*"))
		return err == nil && len(info.State.Subjects) == 2*scripts
	})
	ctx, cancel := opCtx()
	defer cancel()
	if _, _, err := l.b.loop.Status(ctx, l.ids[0]); !errors.As(err, new(*hostloop.SessionElsewhereError)) {
		t.Fatalf("the second host before the lease lapsed: %v, want SessionElsewhereError", err)
	}
	l.b.wantCompleted(t, l.ids, "one!|one!-two!")
	l.ok.check(t, 2*scripts)
}

// heldSecondStep is it.step for twoStepScript: it answers its input with
// "!" appended, except that a second step ("…-two") first signals started
// and waits for release (or its context); every answered call is added
// to ok.
func heldSecondStep(ok *successes, started chan<- struct{}, release <-chan struct{}) workeragent.HandlerFunc {
	return func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
		in := call.Input.Text
		if strings.HasSuffix(in, "-two") {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return workeragent.Output{}, ctx.Err()
			}
		}
		ok.add(call.IdempotencyKey)
		return workeragent.Result(in + "!"), nil
	}
}

// wantCompleted waits for each of ids to complete on p, with want as its
// value.
func (p *peerHost) wantCompleted(t *testing.T, ids []hostloop.SessionID, want string) {
	t.Helper()
	status := func(id hostloop.SessionID) (hostloop.SessionStatus, error) {
		ctx, cancel := opCtx()
		defer cancel()
		s, _, err := p.loop.Status(ctx, id)
		return s, err
	}
	for _, id := range ids {
		testwait.Until(t, 30*time.Second, "session "+string(id)+" to complete", func() bool {
			s, err := status(id)
			return err == nil && s.State == hostloop.SessionCompleted
		})
		s, _ := status(id)
		wantCompleted(t, s, want)
	}
}
