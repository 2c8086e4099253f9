package hostloop

import (
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/toolspec"

	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
)

var (
	loopSeeds = flag.Int("loop.seeds", 0, "run the loop's model test with this many random seeds besides the fixed ones")
	loopSeed  = flag.Uint64("loop.seed", 0, "replay the loop's model test with this seed alone")
)

// loopFixedSeeds run in every go test.
var loopFixedSeeds = []uint64{1, 2, 3, 4, 5, 6, 7, 8, 42, 1234}

// TestLoopModel drives a loop through generated interleavings of what its
// environment can do: submissions; workers answering with results,
// retryable and rate-limited failures, permanent and indeterminate
// failures, chunks; cancellation requests and every disposition;
// duplicated, reordered, replayed and forged events; time passing over
// deadlines and backoffs. After every step it checks the invariants:
// every operation settles at most once; nothing is published for an
// operation whose cancellation was requested or that settled; every
// operation the loop tracks is live in its runtime and every suspended
// session is counted; and once the generator stops and time passes every
// deadline, every session has ended and, with the loop stopped, every
// goroutine too (synctest would report one left blocked).
//
// A failing seed prints its trace; -loop.seed replays it, -loop.seeds
// explores more.
func TestLoopModel(t *testing.T) {
	seeds := testwait.Seeds(loopFixedSeeds, *loopSeeds, *loopSeed)
	steps := 0
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newLoopModel(t, seed)
				defer m.stop()
				m.run()
				steps += m.steps
			})
		})
	}
	t.Logf("%d seeds, %d generated steps", len(seeds), steps)
}

// checkPublish checks, on the loop's goroutine as the loop publishes,
// that nothing goes out for an operation that may not receive it.
func (m *loopModel) checkPublish(inv protocol.Invoke) {
	st := m.l.st
	d := st.byRequest[inv.RequestID]
	switch {
	case d == nil:
		m.fail("published %s attempt %d for no tracked operation", inv.RequestID, inv.Attempt)
	default:
		if info, ok := d.s.core.Operation(d.op.ID); !ok || info.State != host.Claimed {
			m.fail("published %s attempt %d while the operation is %s", inv.RequestID, inv.Attempt, info.State)
		}
	}
}

type loopModel struct {
	t     *testing.T
	rng   *rand.Rand
	l     *Loop
	tr    *MemTransport
	steps int

	mu       sync.Mutex
	failures []string

	sessions []SessionID
	sent     []Event // every event sent, for replays
	trace    []string
}

func newLoopModel(t *testing.T, seed uint64) *loopModel {
	m := &loopModel{t: t, rng: rand.New(rand.NewPCG(seed, ^seed))}
	m.tr = NewMemTransport(64)
	m.tr.OnPublish = m.checkPublish
	l, err := StartLoop(LoopConfig{
		Transport:    m.tr,
		HostID:       "h1",
		RetryInitial: 50 * time.Millisecond,
		RetryMax:     400 * time.Millisecond,
		Catalog: tooltest.Catalog[*host.Runtime](t,
			toolspec.Spec{Name: "t", MaxAttempts: 3, Deadline: toolspec.Duration(3 * time.Second), Cancellable: true,
				Stream: &toolspec.StreamPolicy{MaxChunks: 4, MaxChunkBytes: 64, MaxSourceBytes: 256, MaxReleasedBytes: 256}},
			toolspec.Spec{Name: "u", MaxAttempts: 2}),
	})
	if err != nil {
		t.Fatal(err)
	}
	m.l = l
	return m
}

func (m *loopModel) fail(format string, v ...any) {
	m.mu.Lock()
	m.failures = append(m.failures, fmt.Sprintf(format, v...))
	m.mu.Unlock()
}

func (m *loopModel) note(format string, v ...any) {
	m.trace = append(m.trace, fmt.Sprintf(format, v...))
}

func (m *loopModel) stop() { m.l.Stop() }

// run generates steps, checking after each, then lets time pass every
// deadline and checks that everything ended.
func (m *loopModel) run() {
	n := 40 + m.rng.IntN(40)
	for range n {
		m.step()
		synctest.Wait()
		m.steps++
		m.check(false)
	}
	m.note("quiet: time passes every deadline")
	// Every operation has a deadline or is answered by then: a script's
	// calls of "u" have none, so the model answers whatever is still out.
	for range 20 {
		time.Sleep(time.Second)
		synctest.Wait()
		m.answerAllU()
		synctest.Wait()
	}
	m.check(true)
}

// step does one generated thing.
func (m *loopModel) step() {
	ctx := context.Background()
	pub := m.snapshotPublished()
	switch k := m.rng.IntN(100); {
	case k < 14 || len(pub) == 0:
		src := `await tool.start("t", "x")`
		switch m.rng.IntN(3) {
		case 1:
			src = `await Promise.all([tool.start("t", "a"), tool.start("u", "b")])`
		case 2:
			src = `try { await tool.start("u", "x") } catch (e) {} return "done"`
		}
		s, err := m.l.Submit(ctx, Submission{Source: src})
		if err != nil {
			m.fail("submit: %v", err)
			return
		}
		m.sessions = append(m.sessions, s.ID)
		m.note("submit %s: %s", s.ID, src)
	case k < 44:
		inv := pub[m.rng.IntN(len(pub))]
		r := protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt}
		switch m.rng.IntN(6) {
		case 0, 1:
			p := protocol.TextPayload("ok")
			r.Status, r.Payload = protocol.ResultSucceeded, &p
		case 2:
			r.Status, r.Error = protocol.ResultRetryTransient, "again"
		case 3:
			r.Status, r.Error, r.RetryAfterMillis = protocol.ResultRetryRateLimited, "slow", int64(m.rng.IntN(500))
		case 4:
			r.Status, r.Error = protocol.ResultFailed, "no"
		default:
			r.Status, r.Error = protocol.ResultIndeterminate, "unknown"
		}
		m.send(Event{Kind: EventMessage, Message: protocol.ResultMessage(r), Worker: "w1"}, "result %s#%d %s", inv.RequestID, inv.Attempt, r.Status)
	case k < 52:
		inv := pub[m.rng.IntN(len(pub))]
		c := protocol.Chunk{RequestID: inv.RequestID, Sequence: uint64(1 + m.rng.IntN(5)), Text: strings.Repeat("c", m.rng.IntN(80))}
		m.send(Event{Kind: EventMessage, Message: protocol.ChunkMessage(c), Worker: "w1"}, "chunk %s", inv.RequestID)
	case k < 64:
		// A cancellation request for a live operation of a session.
		if len(m.sessions) == 0 {
			return
		}
		id := m.sessions[m.rng.IntN(len(m.sessions))]
		s, _, err := m.l.Status(ctx, id)
		if err != nil || len(s.Operations) == 0 {
			return
		}
		op := s.Operations[m.rng.IntN(len(s.Operations))]
		err = m.l.Cancel(ctx, id, op.ID)
		m.note("cancel %s %s: %v", id, op.ID, err)
	case k < 74:
		inv := pub[m.rng.IntN(len(pub))]
		d := []protocol.CancelDisposition{protocol.CancelAcknowledged, protocol.CancelTooLate, protocol.CancelUnsupported}[m.rng.IntN(3)]
		cr := protocol.CancelReply{RequestID: inv.RequestID, Attempt: inv.Attempt, Disposition: d}
		m.send(Event{Kind: EventMessage, Message: protocol.CancelReplyMessage(cr), Worker: "w1"}, "disposition %s#%d %s", inv.RequestID, inv.Attempt, d)
	case k < 80:
		// A duplicate or a replay of an earlier event, possibly long after.
		if len(m.sent) == 0 {
			return
		}
		ev := m.sent[m.rng.IntN(len(m.sent))]
		m.send(ev, "replay of an earlier event")
	case k < 84:
		// A stale attempt or a request no one made.
		inv := pub[m.rng.IntN(len(pub))]
		p := protocol.TextPayload("forged")
		r := protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt + 7, Status: protocol.ResultSucceeded, Payload: &p}
		if m.rng.IntN(2) == 0 {
			r.RequestID, r.Attempt = "h1-forged-"+fmt.Sprint(m.rng.IntN(9)), 1
		}
		m.send(Event{Kind: EventMessage, Message: protocol.ResultMessage(r), Worker: "w9"}, "stale or unknown %s#%d", r.RequestID, r.Attempt)
	case k < 88:
		inv := pub[m.rng.IntN(len(pub))]
		m.send(Event{Kind: EventPublishFailed, Invoke: inv, Err: errors.New("lost")}, "publish failed %s#%d", inv.RequestID, inv.Attempt)
	default:
		d := time.Duration(m.rng.IntN(1500)) * time.Millisecond
		time.Sleep(d)
		m.note("time +%v", d)
	}
}

func (m *loopModel) send(ev Event, format string, v ...any) {
	m.note(format, v...)
	m.sent = append(m.sent, ev)
	m.tr.Send(ev)
}

func (m *loopModel) snapshotPublished() []protocol.Invoke { return m.tr.Published() }

// answerAllU answers every call of "u" still out: that tool has no
// deadline, so only an answer ends it.
func (m *loopModel) answerAllU() {
	for _, inv := range m.snapshotPublished() {
		if inv.Tool == "u" {
			p := protocol.TextPayload("late ok")
			m.tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultSucceeded, Payload: &p})
		}
	}
}

// check verifies the invariants on the loop goroutine.
func (m *loopModel) check(final bool) {
	problems, err := call(context.Background(), m.l, func(reply chan<- []string) command {
		return cmdFunc(func(st *loopState) { reply <- invariants(st, final) })
	})
	if err != nil {
		m.fail("check: %v", err)
	}
	m.mu.Lock()
	all := append(append([]string(nil), m.failures...), problems...)
	m.mu.Unlock()
	if len(all) > 0 {
		m.t.Fatalf("after %d steps:\n  %s\ntrace:\n  %s\nreplay: go test ./host -run 'TestLoopModel' -loop.seed <the seed above>",
			m.steps, strings.Join(all, "\n  "), strings.Join(m.trace, "\n  "))
	}
}

// invariants lists what is wrong with st; it runs on the loop goroutine.
func invariants(st *loopState, final bool) []string {
	var out []string
	suspended := 0
	for id, s := range st.sessions {
		settled := map[host.ExternalToolID]int{}
		for _, e := range s.audit {
			switch e.Outcome {
			case host.AuditSucceeded, host.AuditFailed, host.AuditTimedOut, host.AuditCancelled:
				settled[e.ID]++
				if settled[e.ID] > 1 {
					out = append(out, fmt.Sprintf("%s %s settled twice", id, e.ID))
				}
			}
		}
		for opID, d := range s.ops {
			info, ok := s.core.Operation(opID)
			if !ok || info.State.Terminal() {
				out = append(out, fmt.Sprintf("%s tracks %s, which the runtime holds %v (%s)", id, opID, ok, info.State))
			}
			if st.byRequest[d.requestID()] != d {
				out = append(out, fmt.Sprintf("%s %s is not indexed by its request %s", id, opID, d.requestID()))
			}
		}
		if !s.done {
			suspended++
		}
		if final && !s.done {
			out = append(out, fmt.Sprintf("%s still suspended after every deadline passed (ops %d)", id, len(s.ops)))
		}
	}
	if suspended != st.suspended {
		out = append(out, fmt.Sprintf("%d sessions counted suspended, the loop says %d", suspended, st.suspended))
	}
	return out
}
