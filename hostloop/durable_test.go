package hostloop

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workflow"
)

// dyingLog is a ledger log whose process can die: from then on nothing
// more is written, as when a host is killed, until the next process. Its
// writes can also stall, as writes do while the server fails over.
type dyingLog struct {
	workflow.Log
	dead atomic.Bool
	// stall, when set, holds every Append until it is closed.
	stall atomic.Pointer[chan struct{}]
	// losing, when set, decides which Appends lose their answer, and
	// whether each lands first, as when the node that took the write
	// goes away before it answers.
	losing func() (lose, landed bool)
	// lost counts the answers lost.
	lost atomic.Int64
	// landed, when set, is told of every Append that landed before its
	// answer goes back; returning true kills the process there, so the
	// writer never learns its write is stored.
	landed func() bool
}

var (
	errDead       = errors.New("the process died")
	errAnswerLost = errors.New("nats: timeout")
)

func (d *dyingLog) Append(ctx context.Context, session string, from int, entries []workflow.Entry) error {
	if stall := d.stall.Load(); stall != nil {
		select {
		case <-*stall:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if d.dead.Load() {
		return errDead
	}
	if d.losing != nil {
		if lose, landed := d.losing(); lose {
			d.lost.Add(1)
			if landed {
				if err := d.Log.Append(ctx, session, from, entries); err != nil {
					return err
				}
			}
			return errAnswerLost
		}
	}
	if err := d.Log.Append(ctx, session, from, entries); err != nil {
		return err
	}
	if d.landed != nil && d.landed() {
		return errDead
	}
	return nil
}

// submitLeaving submits src to l while log's writes stall, and has the
// caller leave before the session's first write is stored (leavesFirst)
// or just after; it returns what Submit did. It runs in a synctest bubble.
func submitLeaving(l *Loop, log *dyingLog, src string, leavesFirst bool) (SessionStatus, error) {
	release := log.hold()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan submitAnswer, 1)
	go func() {
		s, err := l.Submit(ctx, Submission{Source: src})
		out <- submitAnswer{s, err}
	}()
	synctest.Wait() // Submit waits for the stalled write
	if leavesFirst {
		cancel()
		synctest.Wait()
		release()
	} else {
		release()
		synctest.Wait()
		cancel()
	}
	got := <-out
	synctest.Wait()
	return got.s, got.err
}

// hold stalls the log's writes until the returned function is called.
func (d *dyingLog) hold() (release func()) {
	stall := make(chan struct{})
	d.stall.Store(&stall)
	return func() {
		d.stall.Store(nil)
		close(stall)
	}
}

func (d *dyingLog) Remove(ctx context.Context, session string) error {
	if d.dead.Load() {
		return errDead
	}
	return d.Log.Remove(ctx, session)
}

func durableLoop(t *testing.T, tr Transport, a SessionArchive, log workflow.Log, catalog func(*host.Runtime) error) *Loop {
	t.Helper()
	l, err := StartLoop(LoopConfig{
		Transport:    tr,
		HostID:       "h1",
		Archive:      a,
		Ledger:       log,
		RetryInitial: 5 * time.Millisecond,
		RetryMax:     50 * time.Millisecond,
		Catalog:      catalog,
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// remoteCatalog(t) registers text.remote, with three attempts, in every
// session.
func remoteCatalog(tb testing.TB) func(*host.Runtime) error {
	return tooltest.Catalog[*host.Runtime](tb, toolspec.Spec{Name: "text.remote", MaxAttempts: 3})
}

// remoteCancellable(t) is remoteCatalog(t)'s tool, cancellable.
func remoteCancellable(tb testing.TB) func(*host.Runtime) error {
	return tooltest.Catalog[*host.Runtime](tb, toolspec.Spec{Name: "text.remote", MaxAttempts: 3, Cancellable: true})
}

// A resumed script sees the time and random numbers its first run saw:
// what it computed before the restart and what it computes after agree
// with what its worker was sent.
func TestDurableLoopResumesWithTheSameTimeAndRandomness(t *testing.T) {
	tr, a, log := newChanTransport(), newMemArchive(), workflow.NewMemoryLog()
	l := durableLoop(t, tr, a, log, remoteCatalog(t))
	s := submit(t, l, `const r = Math.random(), t = Date.now(), d = new Date().toISOString();
const sent = await tool.start("text.remote", r + "@" + t + "@" + d);
const again = await tool.start("text.remote", String(Math.random()));
[sent, r + "@" + t + "@" + d, again, Date.now() >= t].join(" ")`)
	first := next(t, tr)
	l.Stop()

	l = durableLoop(t, tr, a, log, remoteCatalog(t))
	defer l.Stop()
	resent := next(t, tr)
	if resent.RequestID != first.RequestID || resent.IdempotencyKey != first.IdempotencyKey || resent.Input.Text != first.Input.Text {
		t.Fatalf("resumed call %+v, first run sent %+v", resent, first)
	}
	tr.Succeed(resent, resent.Input.Text)
	second := next(t, tr)
	tr.Succeed(second, second.Input.Text)
	got := waitState(t, l, s.ID, SessionCompleted)
	parts := strings.Split(got.Value, " ")
	if len(parts) != 4 || parts[0] != first.Input.Text || parts[1] != first.Input.Text || parts[2] != second.Input.Text || parts[3] != "true" {
		t.Fatalf("value %q; first call was sent %q", got.Value, first.Input.Text)
	}
	testwait.Until(t, 0, "the finished session's ledger to go", func() bool {
		sessions, _ := log.Sessions(context.Background())
		return len(sessions) == 0
	})
}

// A ledger the script no longer follows (here: altered under it) ends the
// session failed as nondeterministic, and nothing is dispatched for it.
func TestDurableLoopRefusesADivergedReplay(t *testing.T) {
	tr, a, mem := newChanTransport(), newMemArchive(), workflow.NewMemoryLog()
	l := durableLoop(t, tr, a, mem, remoteCatalog(t))
	s := submit(t, l, `await tool.start("text.remote", "as recorded")`)
	next(t, tr)
	l.Stop()

	entries, err := mem.Load(context.Background(), string(s.ID))
	if err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		if p := entries[i].Prepared; p != nil {
			altered := *p
			altered.Input = "as altered"
			entries[i].Prepared = &altered
		}
	}
	altered := workflow.NewMemoryLog()
	if err := altered.Append(context.Background(), string(s.ID), 0, entries); err != nil {
		t.Fatal(err)
	}
	published := len(tr.Published())
	l = durableLoop(t, tr, a, altered, remoteCatalog(t))
	defer l.Stop()
	got := waitState(t, l, s.ID, SessionFailed)
	if !errors.Is(got.Err, host.ErrNondeterministic) {
		t.Fatalf("session failed with %v, want ErrNondeterministic", got.Err)
	}
	if n := len(tr.Published()); n != published {
		t.Fatalf("%d invocations published for a diverged session", n-published)
	}
}

// Under the fail policy a session keeps no ledger and ends with its host,
// as sessions did before ledgers.
func TestDurableLoopFailPolicyEndsWithTheHost(t *testing.T) {
	tr, a, log := newChanTransport(), newMemArchive(), workflow.NewMemoryLog()
	l := durableLoop(t, tr, a, log, remoteCatalog(t))
	s, err := l.Submit(context.Background(), Submission{Source: remoteScript, Restart: workflow.RestartFail})
	if err != nil {
		t.Fatal(err)
	}
	next(t, tr)
	if sessions, _ := log.Sessions(context.Background()); len(sessions) != 0 {
		t.Fatalf("a fail-policy session wrote a ledger: %v", sessions)
	}
	l.Stop()
	l = durableLoop(t, tr, a, log, remoteCatalog(t))
	defer l.Stop()
	got, _, err := l.Status(context.Background(), s.ID)
	if err != nil || !errors.Is(got.Err, ErrHostStopped) {
		t.Fatalf("status %+v, %v; want failed with ErrHostStopped", got, err)
	}
}

func TestDurableLoopRefusesAnUnknownRestartPolicy(t *testing.T) {
	tr, a, log := newChanTransport(), newMemArchive(), workflow.NewMemoryLog()
	l := durableLoop(t, tr, a, log, remoteCatalog(t))
	defer l.Stop()
	_, err := l.Submit(context.Background(), Submission{Source: remoteScript, Restart: "sometimes"})
	if !errors.Is(err, ErrInvalidSubmission) {
		t.Fatalf("Submit = %v, want ErrInvalidSubmission", err)
	}
	if sessions, _ := log.Sessions(context.Background()); len(sessions) != 0 || len(tr.Published()) != 0 {
		t.Fatalf("a refused submission left %v and published %d", sessions, len(tr.Published()))
	}
}

// Submit answers for a durable session only once its ledger is stored: a
// host that dies right after cannot lose a session its client was told of.
func TestDurableSubmitAnswersOnceTheLedgerIsStored(t *testing.T) {
	tr, a, log := newChanTransport(), newMemArchive(), workflow.NewMemoryLog()
	l := durableLoop(t, tr, a, log, remoteCatalog(t))
	defer l.Stop()
	s := submit(t, l, remoteScript)
	entries, err := log.Load(context.Background(), string(s.ID))
	if err != nil || len(entries) != 2 || entries[0].Submitted == nil || entries[1].Prepared == nil {
		t.Fatalf("ledger after Submit: %+v, %v", entries, err)
	}
	if len(s.Operations) != 1 {
		t.Fatalf("status lists %d operations", len(s.Operations))
	}
}

// TestDurableLoopModel drives durable sessions through generated
// interleavings of workers answering (results, retryable failures,
// repeated answers), operators ending sessions, time passing over
// backoffs, and the host restarting gracefully or dying at any step, and
// at each boundary of a session's Ready: after an append landed but
// before its writer learnt it (so before what it explains was published),
// as an invocation is published (before what follows it is acked), and as
// a cancel is sent. Workers keep a journal by idempotency key, as the real
// ones do, and an answer the host did not acknowledge is delivered again
// to its next process, as JetStream does. After every step: no
// operation's effect ran twice; at every death, every answer the host
// acknowledged is accounted for by what it stored. At the end every
// session completed with the value an uninterrupted run gives, or was
// ended by its operator, and no ledger is left.
//
// A failing seed prints its trace; -loop.seed replays it, -loop.seeds
// explores more.
func TestDurableLoopModel(t *testing.T) {
	seeds := testwait.Seeds(loopFixedSeeds, *loopSeeds, *loopSeed)
	steps, restarts, deaths, lost := 0, 0, 0, int64(0)
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newDurableModel(t, seed)
				m.run()
				steps += m.steps
				restarts += m.restarts
				deaths += m.deaths
				lost += m.log.lost.Load()
			})
		})
	}
	t.Logf("%d seeds, %d generated steps, %d host restarts (%d deaths at a boundary), %d ledger answers lost", len(seeds), steps, restarts, deaths, lost)
}

const modelCalls = 4

type durableModel struct {
	t        *testing.T
	rng      *rand.Rand
	trace    []string
	steps    int
	restarts int

	tr      *MemTransport
	archive *memArchive
	log     *dyingLog
	l       *Loop

	sessions []SessionID
	// journal and effects are the workers' side: each key's stored
	// answer, and how often its effect ran.
	journal map[string]string
	effects map[string]int
	// running are invocations a worker took and has not answered;
	// answered are those it answered with a result.
	running, answered []protocol.Invoke
	// left counts the submissions whose caller left; withdrawn holds the
	// tags of those that left before they were answered.
	left      int
	withdrawn map[string]bool

	// dieAt arms a death at one boundary of a session's Ready (see the
	// die constants); dead is set once the process died there, and the
	// next step restarts it. The hooks run on the loop's goroutines.
	dieAt atomic.Int32
	dead  atomic.Bool
	// ackMu guards answers: every answer event sent, and whether the
	// host acknowledged it.
	ackMu   sync.Mutex
	answers []*sentAnswer
	// cancelled holds the sessions an operator ended.
	cancelled map[SessionID]bool
	deaths    int
	// proc numbers the host processes.
	proc atomic.Int32
	// sessionOf maps a submission's tag (in its calls' inputs) to its
	// session.
	sessionOf map[string]SessionID
	// stopped holds the request ids whose worker was told to cancel
	// (written on the loop's goroutine): it runs them no more.
	stopped sync.Map
}

// The boundaries a death is armed at.
const (
	dieNowhere int32 = iota
	dieAfterAppend
	dieAtPublish
	dieAtCancel
)

// sentAnswer is a worker's answer event, until the host acknowledged it.
type sentAnswer struct {
	ev    Event
	acked bool
	// tag is the submission the answered call belongs to.
	tag string
	// sent and ackedBy are the host processes it was sent to and acked
	// by, for a failure's report.
	sent, ackedBy int32
}

func newDurableModel(t *testing.T, seed uint64) *durableModel {
	m := &durableModel{
		t:         t,
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		tr:        NewMemTransport(4096),
		archive:   newMemArchive(),
		log:       &dyingLog{Log: workflow.NewMemoryLog()},
		journal:   make(map[string]string),
		effects:   make(map[string]int),
		withdrawn: make(map[string]bool),
		cancelled: make(map[SessionID]bool),
		sessionOf: make(map[string]SessionID),
	}
	m.log.landed = func() bool { return m.dieHere(dieAfterAppend) }
	m.tr.OnPublish = func(protocol.Invoke) { m.dieHere(dieAtPublish) }
	m.tr.OnCancel = func(c protocol.Cancel) {
		if !m.dieHere(dieAtCancel) && !m.dead.Load() {
			// The worker holding it stops, and says so.
			m.stopped.Store(c.RequestID, true)
			m.sendAnswer(protocol.CancelReplyMessage(protocol.CancelReply{RequestID: c.RequestID, Attempt: c.Attempt, Disposition: protocol.CancelAcknowledged}), m.tagOfRequest(c.RequestID))
		}
	}
	// One ledger write in eight loses its answer, landed or not. The
	// writes run on the loop's goroutines, hence a source of their own.
	var mu sync.Mutex
	losses := rand.New(rand.NewPCG(^seed, seed))
	m.log.losing = func() (lose, landed bool) {
		mu.Lock()
		defer mu.Unlock()
		return losses.IntN(8) == 0, losses.IntN(2) == 0
	}
	m.note("seed %d", seed)
	m.start()
	return m
}

// dieHere kills the process if a death is armed at boundary: from then
// on nothing more of it is stored, as when a host is killed.
func (m *durableModel) dieHere(boundary int32) bool {
	if !m.dieAt.CompareAndSwap(boundary, dieNowhere) {
		return false
	}
	m.log.dead.Store(true)
	m.archive.crash()
	m.dead.Store(true)
	return true
}

// sendAnswer hands the host a worker's answer, keeping it until the host
// acknowledges it.
func (m *durableModel) sendAnswer(msg protocol.WorkerMessage, tag string) {
	a := &sentAnswer{tag: tag, sent: m.proc.Load()}
	a.ev = Event{Kind: EventMessage, Message: msg, Worker: "w1", Ack: func() {
		m.ackMu.Lock()
		a.acked, a.ackedBy = true, m.proc.Load()
		m.ackMu.Unlock()
	}}
	m.ackMu.Lock()
	m.answers = append(m.answers, a)
	m.ackMu.Unlock()
	select {
	case m.tr.EventsIn() <- a.ev:
	default:
		// A full buffer is a lost delivery; it comes again at the
		// next process, being unacknowledged.
	}
}

func (m *durableModel) start() {
	m.proc.Add(1)
	l, err := StartLoop(LoopConfig{
		Transport: m.tr, HostID: "h1", Archive: m.archive, Ledger: m.log,
		RetryInitial: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond,
		Catalog: remoteCancellable(m.t),
	})
	if err != nil {
		m.fail("StartLoop: %v", err)
	}
	m.l = l
}

func (m *durableModel) note(format string, v ...any) {
	m.trace = append(m.trace, fmt.Sprintf(format, v...))
}

func (m *durableModel) fail(format string, v ...any) {
	m.t.Helper()
	m.t.Fatalf("%s\ntrace:\n  %s", fmt.Sprintf(format, v...), strings.Join(m.trace, "\n  "))
}

func (m *durableModel) run() {
	defer func() { m.l.Stop() }()
	for range 60 + m.rng.IntN(60) {
		m.step()
		synctest.Wait()
		m.check()
	}
	m.settle()
}

func (m *durableModel) step() {
	m.steps++
	if m.dead.Load() {
		m.note("the host died at the armed boundary")
		m.deaths++
		m.restart(false)
		return
	}
	m.take()
	switch r := m.rng.IntN(100); {
	case r < 4:
		b := int32(1 + m.rng.IntN(3))
		m.note("arm a death at boundary %d", b)
		m.dieAt.Store(b)
	case r < 7 && len(m.sessions) > 0:
		id := m.sessions[m.rng.IntN(len(m.sessions))]
		force := m.rng.IntN(3) == 0
		if _, err := m.l.CancelSession(context.Background(), id, force); err == nil {
			m.cancelled[id] = true
			m.note("an operator cancels %s (force %v)", id, force)
		}
	case r < 12 && len(m.sessions) < 6:
		// A client gives up after a while: a host that died under its
		// submission never answers it.
		m.left++
		tag := fmt.Sprintf("s%d", m.left)
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(5*time.Second))
		s, err := m.l.Submit(ctx, Submission{Source: modelScript(tag)})
		cancel()
		switch {
		case err == nil:
			m.sessions = append(m.sessions, s.ID)
			m.sessionOf[tag] = s.ID
			m.note("submit %s (%s)", s.ID, tag)
		case errors.Is(err, context.DeadlineExceeded) && m.dead.Load():
			m.withdrawn[tag] = true
			m.note("submit %s, unanswered: the host died under it", tag)
		default:
			m.fail("Submit: %v", err)
		}
	case r < 16 && len(m.sessions) < 6:
		m.submitAndLeave()
	case r < 55 && len(m.running) > 0:
		m.answer(m.rng.IntN(len(m.running)))
	case r < 62 && len(m.answered) > 0:
		// A worker's answer delivered again.
		inv := m.answered[m.rng.IntN(len(m.answered))]
		m.note("repeat the answer to %s/%d", inv.RequestID, inv.Attempt)
		m.succeed(inv, m.journal[inv.IdempotencyKey])
	case r < 70:
		m.restart(true)
	case r < 78:
		m.restart(false)
	default:
		d := time.Duration(1+m.rng.IntN(200)) * time.Millisecond
		m.note("sleep %s", d)
		time.Sleep(d)
	}
}

// modelScript is the model's script: its calls' inputs carry tag, so an
// invocation tells which submission it came from.
func modelScript(tag string) string {
	return fmt.Sprintf(`let s = 0; for (let i = 1; i <= %d; i++) { s += Number((await tool.start("text.remote", i + "#%s")).split("#")[0]); } s`, modelCalls, tag)
}

// submitAndLeave submits while the ledger's writes stall, and has the
// caller leave either before the first write is stored or just after.
// One that left is told an error, so nothing of its script may ever be
// dispatched (take checks); one answered first is an ordinary session.
func (m *durableModel) submitAndLeave() {
	m.left++
	tag := fmt.Sprintf("left%d", m.left)
	leavesFirst := m.rng.IntN(2) == 0
	lostBefore := m.log.lost.Load()
	s, err := submitLeaving(m.l, m.log, modelScript(tag), leavesFirst)
	switch {
	case err == nil:
		m.sessions = append(m.sessions, s.ID)
		m.sessionOf[tag] = s.ID
		m.note("submit %s (%s), its caller leaving once answered", s.ID, tag)
	case leavesFirst && errors.Is(err, context.Canceled):
		m.withdrawn[tag] = true
		m.note("submit %s, its caller leaving first", tag)
	case errors.Is(err, context.Canceled) && m.dead.Load():
		// The host died under it (an armed death): it was never
		// answered.
		m.withdrawn[tag] = true
		m.note("submit %s, its caller leaving: the host died under it", tag)
	case errors.Is(err, context.Canceled) && m.log.lost.Load() > lostBefore:
		// The first write's answer was lost, so the submission was
		// still unanswered when its caller left.
		m.withdrawn[tag] = true
		m.note("submit %s, its caller leaving first: the first write's answer was lost", tag)
	default:
		m.fail("Submit (%s, caller leaving first: %v): %v", tag, leavesFirst, err)
	}
}

// take moves every published invocation to the workers.
func (m *durableModel) take() {
	for {
		select {
		case inv := <-m.tr.Invocations():
			if _, tag, _ := strings.Cut(inv.Input.Text, "#"); m.withdrawn[tag] {
				m.fail("%s of a withdrawn submission was dispatched", inv.RequestID)
			}
			m.running = append(m.running, inv)
		default:
			return
		}
	}
}

// answer has a worker answer running[i]: from the journal when its key
// already ran, else a retryable failure on a first attempt now and then,
// else the effect and its result.
func (m *durableModel) answer(i int) {
	inv := m.running[i]
	m.running = append(m.running[:i], m.running[i+1:]...)
	if _, ok := m.stopped.Load(inv.RequestID); ok {
		m.note("%s/%d was cancelled: its worker stopped", inv.RequestID, inv.Attempt)
		return
	}
	if out, ok := m.journal[inv.IdempotencyKey]; ok {
		m.note("answer %s/%d from the journal", inv.RequestID, inv.Attempt)
		m.succeed(inv, out)
		m.answered = append(m.answered, inv)
		return
	}
	if inv.Attempt == 1 && m.rng.IntN(4) == 0 {
		m.note("retry %s/%d", inv.RequestID, inv.Attempt)
		m.sendAnswer(protocol.ResultMessage(protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultRetryTransient, Error: "busy"}), tagOf(inv))
		return
	}
	m.effects[inv.IdempotencyKey]++
	m.journal[inv.IdempotencyKey] = inv.Input.Text
	m.note("run %s/%d (%s)", inv.RequestID, inv.Attempt, inv.Input.Text)
	m.succeed(inv, inv.Input.Text)
	m.answered = append(m.answered, inv)
}

func (m *durableModel) succeed(inv protocol.Invoke, text string) {
	p := protocol.TextPayload(text)
	m.sendAnswer(protocol.ResultMessage(protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultSucceeded, Payload: &p}), tagOf(inv))
}

// tagOf is the tag of the submission inv's call belongs to.
func tagOf(inv protocol.Invoke) string {
	_, tag, _ := strings.Cut(inv.Input.Text, "#")
	return tag
}

// tagOfRequest finds, among what was published, the tag of a request;
// it runs on the loop's goroutine (a cancel hook).
func (m *durableModel) tagOfRequest(req string) string {
	for _, inv := range m.tr.Published() {
		if inv.RequestID == req {
			return tagOf(inv)
		}
	}
	return ""
}

// checkAcked, as the host dies, finds every answer it acknowledged
// accounted for by what it stored: an entry of the answer's operation in
// its session's ledger, or the session's outcome in the archive.
func (m *durableModel) checkAcked() {
	ctx := context.Background()
	ids, _ := m.log.Sessions(ctx)
	recorded := make(map[string]bool) // request ids with an applied entry
	prepared := make(map[string]string)
	for _, id := range ids {
		entries, err := m.log.Load(ctx, id)
		if err != nil {
			continue
		}
		byOp := make(map[host.ExternalToolID]string)
		for _, e := range entries {
			switch {
			case e.Prepared != nil:
				byOp[e.Prepared.Op] = e.Prepared.Request
				prepared[e.Prepared.Request] = id
			case e.Applied != nil && e.Applied.Kind != workflow.InputStreamed:
				recorded[byOp[e.Applied.Op]] = true
			}
		}
	}
	m.ackMu.Lock()
	defer m.ackMu.Unlock()
	for _, a := range m.answers {
		req := requestOf(a.ev.Message)
		if !a.acked || recorded[req] {
			continue
		}
		if m.ended(a.tag) {
			continue
		}
		if id := prepared[req]; id != "" {
			if _, ok := m.archive.record(SessionID(id)); ok {
				continue // its outcome is stored: the ledger is left over
			}
		}
		var lines []string
		if id := prepared[req]; id != "" {
			entries, _ := m.log.Load(ctx, id)
			for _, e := range entries {
				switch {
				case e.Prepared != nil:
					lines = append(lines, fmt.Sprintf("prepared %s %s", e.Prepared.Op, e.Prepared.Request))
				case e.Applied != nil:
					lines = append(lines, fmt.Sprintf("%s %s", e.Applied.Kind, e.Applied.Op))
				default:
					lines = append(lines, "submitted")
				}
			}
		}
		for _, b := range m.answers {
			if requestOf(b.ev.Message) == req {
				lines = append(lines, fmt.Sprintf("[copy sent to %d, acked %v by %d]", b.sent, b.acked, b.ackedBy))
			}
		}
		m.fail("the host (process %d) acknowledged the answer to %s (%s), and stored no record of it; prepared in %q: %s", m.proc.Load(), req, describeMsg(a.ev.Message), prepared[req], strings.Join(lines, ", "))
	}
}

// ended reports whether the session of submission tag has its outcome
// in the archive (its ledger went with its end).
func (m *durableModel) ended(tag string) bool {
	id, ok := m.sessionOf[tag]
	if !ok {
		return false
	}
	_, ok = m.archive.record(id)
	return ok
}

func describeMsg(msg protocol.WorkerMessage) string {
	switch {
	case msg.Result != nil:
		return fmt.Sprintf("%s attempt %d", msg.Result.Status, msg.Result.Attempt)
	case msg.CancelDisp != nil:
		return fmt.Sprintf("cancel %s attempt %d", msg.CancelDisp.Disposition, msg.CancelDisp.Attempt)
	}
	return string(msg.Kind)
}

func requestOf(msg protocol.WorkerMessage) string {
	switch {
	case msg.Result != nil:
		return msg.Result.RequestID
	case msg.CancelDisp != nil:
		return msg.CancelDisp.RequestID
	}
	return ""
}

// restart ends the host process, gracefully or as a kill (nothing more it
// would write is stored), and starts the next one.
func (m *durableModel) restart(graceful bool) {
	m.restarts++
	if graceful {
		m.note("restart gracefully")
	} else {
		m.note("kill and restart")
		m.exposeWithdrawn()
		m.log.dead.Store(true)
		m.archive.crash()
		m.dead.Store(true)
		m.deaths++
	}
	m.dieAt.Store(dieNowhere)
	m.l.Stop()
	if m.dead.Load() {
		m.checkAcked()
	}
	m.dead.Store(false)
	m.log.dead.Store(false)
	m.archive.mu.Lock()
	m.archive.crashed = false
	m.archive.mu.Unlock()
	// The workers lose nothing: an invocation stays in the stream, an
	// answer in the host's events until a process acknowledges it.
	m.start()
	m.ackMu.Lock()
	var again []Event
	kept := m.answers[:0]
	for _, a := range m.answers {
		if !a.acked {
			again = append(again, a.ev)
			kept = append(kept, a)
		}
	}
	m.answers = kept
	m.ackMu.Unlock()
	for _, ev := range again {
		select {
		case m.tr.EventsIn() <- ev:
		default:
		}
	}
}

// exposeWithdrawn, as the host is killed, finds the withdrawn submissions
// whose ledger is stored all the same: their first write landed but its
// answer was lost, and the loop, which withdraws a session once it learns
// the write is stored, had not learnt it yet. The next process resumes
// them although their callers were told an error. That is the gap
// docs/decisions/0038-a-submission-whose-caller-left-is-withdrawn.md
// names (a host killed between a durable session's first write and its
// withdrawal; closing it needs a key the client supplies), so they are no
// longer held to never being dispatched: they are sessions like the
// others, to run to their end.
func (m *durableModel) exposeWithdrawn() {
	ctx := context.Background()
	ids, _ := m.log.Sessions(ctx)
	for _, id := range ids {
		entries, err := m.log.Load(ctx, id)
		if err != nil || len(entries) == 0 || entries[0].Submitted == nil {
			continue
		}
		for tag := range m.withdrawn {
			if strings.Contains(entries[0].Submitted.Source, `"#`+tag+`"`) {
				delete(m.withdrawn, tag)
				m.sessions = append(m.sessions, SessionID(id))
				m.sessionOf[tag] = SessionID(id)
				m.note("the ledger of withdrawn %s is stored as the host dies: the next process resumes it", tag)
			}
		}
	}
}

func (m *durableModel) check() {
	for key, n := range m.effects {
		if n > 1 {
			m.fail("the effect of %s ran %d times", key, n)
		}
	}
}

// settle lets the workers answer everything until every session ended.
func (m *durableModel) settle() {
	want := strconv.Itoa(modelCalls * (modelCalls + 1) / 2)
	for round := 0; ; round++ {
		if round > 500 {
			m.fail("sessions did not end")
		}
		if m.dead.Load() {
			m.note("the host died at the armed boundary")
			m.deaths++
			m.restart(false)
		}
		m.take()
		for len(m.running) > 0 {
			m.answer(0)
		}
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		m.check()
		done := true
		for _, id := range m.sessions {
			s, _, err := m.l.Status(context.Background(), id)
			if err != nil {
				m.fail("status of %s: %v", id, err)
			}
			switch s.State {
			case SessionSuspended:
				done = false
			case SessionCancelled:
				if !m.cancelled[id] {
					m.fail("session %s cancelled, and no operator asked", id)
				}
			case SessionFailed:
				m.fail("session %s failed: %v", id, s.Err)
			case SessionCompleted:
				if s.Value != want {
					m.fail("session %s = %s, want %s", id, s.Value, want)
				}
			}
		}
		if done {
			break
		}
	}
	// A withdrawn submission whose first write went unanswered keeps its
	// ledger until the loop's next try of that write (LedgerRetry) tells
	// it the write is stored, and withdraws it then.
	for range 10 {
		synctest.Wait()
		if left, _ := m.log.Sessions(context.Background()); len(left) == 0 {
			return
		}
		time.Sleep(time.Second)
	}
	left, _ := m.log.Sessions(context.Background())
	m.fail("ledgers left: %v", left)
}

// failingLog is a ledger log whose reads fail, as a store that does not
// answer in time.
type failingLog struct{ workflow.Log }

func (failingLog) Load(context.Context, string) ([]workflow.Entry, error) {
	return nil, errors.New("timed out")
}

// A host asked about a durable session of an earlier process that it does
// not drive yet never calls it lost: with its ledger there it is
// suspended (the adoption scan carries it on), and a ledger that cannot
// be read is ErrLedgerUnavailable, not a verdict.
func TestDurableStatusOfASessionNotYetResumed(t *testing.T) {
	tr, a, mem := newChanTransport(), newMemArchive(), workflow.NewMemoryLog()
	l := durableLoop(t, tr, a, mem, remoteCatalog(t))
	s := submit(t, l, remoteScript)
	next(t, tr)
	// Killed: nothing more is stored, nothing resumes it here.
	a.crash()
	l.Stop()

	for _, tc := range []struct {
		name    string
		log     workflow.Log
		state   SessionState
		wantErr error
	}{
		{"ledger there", struct{ workflow.Log }{mem}, SessionSuspended, nil},
		{"ledger unreadable", failingLog{mem}, "", ErrLedgerUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No Ledger in the config: this loop resumes nothing, as one
			// whose adoption scan has not come round yet.
			other, err := StartLoop(LoopConfig{Transport: newChanTransport(), HostID: "h1", Archive: a})
			if err != nil {
				t.Fatal(err)
			}
			defer other.Stop()
			other.cfg.Ledger = tc.log
			got, err := other.archived(context.Background(), s.ID)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) || got.State != tc.state {
				t.Fatalf("archived = %+v, %v; want %q, %v", got, err, tc.state, tc.wantErr)
			}
		})
	}
}
