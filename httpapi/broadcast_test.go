package httpapi_test

import (
	"errors"
	"testing"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi"
)

func drain(ch <-chan *httpapi.Event) []httpapi.Event {
	var out []httpapi.Event
	for ev := range ch {
		out = append(out, *ev)
	}
	return out
}

func kinds(evs []httpapi.Event) []httpapi.EventKind {
	out := make([]httpapi.EventKind, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

func TestBroadcasterDropsSlowSubscriberWithLagged(t *testing.T) {
	b := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{Buffer: 4, MaxQueued: 2, Backlog: -1})
	slow, cancelSlow := b.Subscribe("s")
	defer cancelSlow()
	fast, cancelFast := b.Subscribe("s")
	defer cancelFast()
	var fastGot []httpapi.Event
	// Neither call may block, however far behind slow is.
	for i := range 10 {
		b.Chunk("s", host.ExternalToolStreamChunk{ID: 1, Index: i})
		fastGot = append(fastGot, *<-fast)
	}
	// Its channel and queue full, then the notice: a gapless prefix of
	// the chunks and EventLagged. How many precede it depends on how far
	// the pump got (one may be in its hand): at least the channel's
	// direct room and the queue, never all ten.
	got := drain(slow)
	if n := len(got); n < 3+2+1 || n > 10 || got[n-1].Kind != httpapi.EventLagged {
		t.Fatalf("slow got %v", kinds(got))
	}
	for i, ev := range got[:len(got)-1] {
		if ev.Chunk.Index != i {
			t.Fatalf("slow chunk %d has index %d", i, ev.Chunk.Index)
		}
	}
	if len(fastGot) != 10 || fastGot[9].Chunk.Index != 9 {
		t.Fatalf("fast got %d events", len(fastGot))
	}
}

func TestBroadcasterReplaysBoundedBacklog(t *testing.T) {
	b := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{Backlog: 3})
	for i := range 5 {
		b.Chunk("s", host.ExternalToolStreamChunk{Index: i})
	}
	b.SessionChanged(hostloop.SessionStatus{ID: "s", State: hostloop.SessionCompleted})
	got := drain(mustSubscribe(b, "s"))
	if len(got) != 3 || got[0].Chunk.Index != 3 || got[1].Chunk.Index != 4 || !got[2].Terminal() {
		t.Fatalf("replay %v", got)
	}
}

func mustSubscribe(b *httpapi.Broadcaster, s hostloop.SessionID) <-chan *httpapi.Event {
	ch, _ := b.Subscribe(s)
	return ch
}

func TestBroadcasterSkipsUnchangedStateAndClosesOnTerminal(t *testing.T) {
	b := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{Backlog: -1})
	ch, cancel := b.Subscribe("s")
	defer cancel()
	suspended := hostloop.SessionStatus{ID: "s", State: hostloop.SessionSuspended, Operations: []hostloop.OperationStatus{{ID: 1, Tool: "t"}}}
	b.SessionChanged(suspended)
	b.SessionChanged(suspended)
	b.Audit("s", []host.AuditEvent{{Seq: 1}, {Seq: 2}})
	b.SessionChanged(hostloop.SessionStatus{ID: "s", State: hostloop.SessionFailed, Error: "boom"})
	// After the terminal state nothing more reaches the stream.
	b.Chunk("s", host.ExternalToolStreamChunk{})
	got := kinds(drain(ch))
	want := []httpapi.EventKind{httpapi.EventState, httpapi.EventAudit, httpapi.EventAudit, httpapi.EventState}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestBroadcasterOtherSessionsAndCancel(t *testing.T) {
	b := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{})
	ch, cancel := b.Subscribe("a")
	b.Chunk("b", host.ExternalToolStreamChunk{Text: "not for a"})
	cancel()
	cancel()
	if got := drain(ch); len(got) != 0 {
		t.Fatalf("a got %v", got)
	}
}

func TestEventKindString(t *testing.T) {
	tests := []struct {
		kind httpapi.EventKind
		want string
	}{
		{httpapi.EventState, "state"},
		{httpapi.EventChunk, "chunk"},
		{httpapi.EventAudit, "audit"},
		{httpapi.EventLagged, "lagged"},
		{0, "unknown"},
	}
	for _, tt := range tests {
		if got := tt.kind.String(); got != tt.want {
			t.Errorf("%d: %q, want %q", tt.kind, got, tt.want)
		}
	}
}

// countingObserver counts every call.
type countingObserver struct{ calls int }

func (c *countingObserver) SessionChanged(hostloop.SessionStatus) { c.calls++ }
func (c *countingObserver) OperationChanged(hostloop.SessionID, hostloop.OperationStatus) {
	c.calls++
}
func (c *countingObserver) Chunk(hostloop.SessionID, host.ExternalToolStreamChunk) { c.calls++ }
func (c *countingObserver) Audit(hostloop.SessionID, []host.AuditEvent)            { c.calls++ }
func (c *countingObserver) Dispatched(hostloop.SessionID, host.ExternalInvocation) { c.calls++ }
func (c *countingObserver) Rejected(string, error)                                 { c.calls++ }

func TestTeeForwardsToEveryObserver(t *testing.T) {
	a, c := &countingObserver{}, &countingObserver{}
	b := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{})
	o := httpapi.Tee(a, nil, b, c)
	o.SessionChanged(hostloop.SessionStatus{ID: "s"})
	o.OperationChanged("s", hostloop.OperationStatus{Session: "s", ID: 1})
	o.Chunk("s", host.ExternalToolStreamChunk{})
	o.Audit("s", nil)
	o.Dispatched("s", host.ExternalInvocation{})
	o.Rejected("x", errors.New("y"))
	if a.calls != 6 || c.calls != 6 {
		t.Fatalf("calls %d %d", a.calls, c.calls)
	}
	if got := drain(closeAfterReplay(b, "s")); len(got) != 3 {
		t.Fatalf("broadcaster saw %v", kinds(got))
	}
}

// closeAfterReplay subscribes and cancels at once, leaving the replay in
// the channel.
func closeAfterReplay(b *httpapi.Broadcaster, s hostloop.SessionID) <-chan *httpapi.Event {
	ch, cancel := b.Subscribe(s)
	cancel()
	return ch
}

// A step of a script can change thousands of operations at once: a reader
// that takes its events as they come is not dropped for the burst, and
// gets every event in order, then the terminal state.
func TestBroadcasterKeepsAReaderThatKeepsUpThroughABurst(t *testing.T) {
	b := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{Backlog: -1})
	ch, cancel := b.Subscribe("s")
	defer cancel()
	const burst = 10_000
	for i := range burst {
		b.OperationChanged("s", hostloop.OperationStatus{Session: "s", ID: host.ExternalToolID(i + 1)})
	}
	b.SessionChanged(hostloop.SessionStatus{ID: "s", State: hostloop.SessionCompleted})
	got := drain(ch)
	if len(got) != burst+1 || !got[burst].Terminal() {
		t.Fatalf("got %d events, the last %v", len(got), got[len(got)-1].Kind)
	}
	for i, ev := range got[:burst] {
		if ev.Kind != httpapi.EventOperation || ev.Operation.ID != host.ExternalToolID(i+1) {
			t.Fatalf("event %d: %v %d", i, ev.Kind, ev.Operation.ID)
		}
	}
}

// A reader that leaves in the middle of a burst stops what was moving its
// events (no goroutine is left, see TestMain).
func TestBroadcasterReaderLeavingMidBurst(t *testing.T) {
	b := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{Backlog: -1})
	ch, cancel := b.Subscribe("s")
	for i := range 1000 {
		b.Chunk("s", host.ExternalToolStreamChunk{Index: i})
	}
	<-ch
	cancel()
	b.SessionChanged(hostloop.SessionStatus{ID: "s", State: hostloop.SessionCompleted})
	for range ch {
	}
}

// Done gets the final state whatever the number of other events, and
// cannot be dropped for them.
func TestBroadcasterDoneOutlastsABurst(t *testing.T) {
	b := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{Buffer: 1, MaxQueued: 1, Backlog: -1})
	done, cancel := b.Done("s")
	defer cancel()
	lagging, cancelLagging := b.Subscribe("s")
	defer cancelLagging()
	for i := range 1000 {
		b.Chunk("s", host.ExternalToolStreamChunk{Index: i})
	}
	b.SessionChanged(hostloop.SessionStatus{ID: "s", State: hostloop.SessionCompleted, Value: "v"})
	if st, ok := <-done; !ok || st.Value != "v" {
		t.Fatalf("done: %+v, %v", st, ok)
	}
	if _, ok := <-done; ok {
		t.Fatal("done sent twice")
	}
	if got := drain(lagging); got[len(got)-1].Kind != httpapi.EventLagged {
		t.Fatalf("the lagging subscriber ended with %v", got[len(got)-1].Kind)
	}
}
