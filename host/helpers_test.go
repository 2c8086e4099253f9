package host

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/toolspec"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

var testNonce = NewCapabilitySessionNonce([16]byte{0xab, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})

// newTestRuntime returns a runtime on a manual clock with a fixed nonce
// unless cfg brings its own.
func newTestRuntime(t testing.TB, cfg Config) (*Runtime, *ManualClock) {
	t.Helper()
	clock := NewManualClock(t0)
	if cfg.Clock == nil {
		cfg.Clock = clock
	}
	if cfg.SessionNonce == nil && cfg.Entropy == nil {
		n := testNonce
		cfg.SessionNonce = &n
	}
	return NewRuntime(cfg), clock
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// register registers an external tool from each definition, as a
// catalog would.
func register(t testing.TB, r *Runtime, specs ...toolspec.Spec) {
	t.Helper()
	for _, s := range specs {
		must(t, r.RegisterTool(tooltest.Tool(t, s)))
	}
}

// streamDef is sp as a definition's stream bounds.
func streamDef(sp ToolStreamPolicy) *toolspec.StreamPolicy {
	return &toolspec.StreamPolicy{MaxChunks: sp.MaxChunks, MaxChunkBytes: sp.MaxChunkBytes,
		MaxSourceBytes: sp.MaxSourceBytes, MaxReleasedBytes: sp.MaxReleasedBytes}
}

func start(t testing.TB, r *Runtime, tool, in string) *Promise {
	t.Helper()
	p, err := r.Start(tool, in)
	must(t, err)
	return p
}

func claim(t testing.TB, r *Runtime) ExternalInvocation {
	t.Helper()
	inv, ok := r.ClaimNextExternalTool()
	if !ok {
		t.Fatal("nothing to claim")
	}
	return inv
}

func wantErr(t testing.TB, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

func settled(t testing.TB, p *Promise) Settlement {
	t.Helper()
	s, ok := p.Settled()
	if !ok {
		t.Fatalf("%s not settled", p.ID())
	}
	return s
}

func pendingPromise(t testing.TB, p *Promise) {
	t.Helper()
	if s, ok := p.Settled(); ok {
		t.Fatalf("%s settled early: %+v", p.ID(), s)
	}
}

func wantState(t testing.TB, r *Runtime, id ExternalToolID, want OperationState) {
	t.Helper()
	info, ok := r.Operation(id)
	if !ok {
		t.Fatalf("%s unknown", id)
	}
	if info.State != want {
		t.Fatalf("%s state = %s, want %s", id, info.State, want)
	}
}

// outcomes lists the audit outcomes for one id (0: all events).
func outcomes(r *Runtime, id ExternalToolID) []string {
	var out []string
	for _, e := range r.Audit() {
		if id == 0 || e.ID == id {
			out = append(out, string(e.Outcome))
		}
	}
	return out
}

func wantOutcomes(t testing.TB, r *Runtime, id ExternalToolID, want ...string) {
	t.Helper()
	if got := outcomes(r, id); !slices.Equal(got, want) {
		t.Fatalf("audit of %s = %v, want %v", id, got, want)
	}
}

// snapshot renders every piece of runtime state, so two snapshots are
// equal exactly when a call changed nothing.
func snapshot(r *Runtime) string {
	var b strings.Builder
	fmt.Fprintf(&b, "calls=%d lastID=%d pending=%d now=%s nonce=%s nonceErr=%v\n", r.calls, r.lastID, r.pending, r.clock.Now().Format(time.RFC3339Nano), r.nonce, r.nonceErr)
	for _, name := range slices.Sorted(maps.Keys(r.tools)) {
		t := r.tools[name]
		fmt.Fprintf(&b, "tool %s ext=%v fmt=%s started=%v redactor=%v policy=%+v\n", name, t.external, t.format, t.started, t.redactor != nil, t.policy)
	}
	queue := func(name string, q *opQueue) {
		fmt.Fprintf(&b, "%s n=%d:", name, q.n)
		for op := q.head; op != nil; op = op.next {
			fmt.Fprintf(&b, " %s", op.id)
		}
		b.WriteByte('\n')
	}
	queue("external", &r.external)
	queue("local", &r.local)
	b.WriteString("deadlines:")
	for i, op := range r.deadlines {
		fmt.Fprintf(&b, " %d:%s@%s", i, op.id, op.deadline.Format(time.RFC3339Nano))
	}
	b.WriteByte('\n')
	fmt.Fprintf(&b, "ops base=%d head=%d len=%d inWin=%d stragglers=%d\n", r.ops.base, r.ops.head, len(r.ops.win), r.ops.inWin, len(r.ops.stragglers))
	for id := ExternalToolID(1); id <= r.lastID; id++ {
		op := r.ops.get(id)
		if op == nil {
			continue
		}
		fmt.Fprintf(&b, "op %s tool=%s in=%q key=%s call=%d attempt=%d state=%s queued=%v heap=%d deadline=%s chunks=%d/%d/%d\n",
			op.id, op.tool.policy.Name, op.input, op.key, op.callIndex, op.attempt, op.state, op.queued, op.heapIndex,
			op.deadline.Format(time.RFC3339Nano), op.chunks, op.sourceBytes, op.releasedBytes)
		if p := op.promise; p != nil {
			fmt.Fprintf(&b, "  promise settled=%v dropped=%v s=%+v\n", p.settled, p.dropped, p.s)
		}
	}
	ids := slices.SortedFunc(maps.Keys(r.finished.recs), func(a, b ExternalToolID) int { return cmp.Compare(a, b) })
	for _, id := range ids {
		rec := r.finished.recs[id]
		fmt.Fprintf(&b, "finished %s tool=%s call=%d attempt=%d state=%s\n", id, rec.tool.policy.Name, rec.callIndex, rec.attempt, rec.state)
	}
	fmt.Fprintf(&b, "finished ring=%v next=%d\n", r.finished.ring, r.finished.next)
	fmt.Fprintf(&b, "audit seq=%d dropped=%d start=%d\n", r.audit.seq, r.audit.dropped, r.audit.start)
	for _, e := range r.audit.buf {
		fmt.Fprintf(&b, "  %+v\n", e)
	}
	fmt.Fprintf(&b, "toNotify=%d flushing=%v\n", len(r.toNotify), r.flushing)
	return b.String()
}

// fakeScript records how often the core resumed it.
type fakeScript struct {
	resumes int
	result  *EvalResult
}

func (f *fakeScript) afterSettle() *EvalResult {
	f.resumes++
	return f.result
}
