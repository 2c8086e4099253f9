package fabric

import (
	"strconv"
	"testing"
)

// TestPublishedSeqsOrderings drives the sequence table through the orders
// its writers can race in: the ack watcher (stored), the events consumer
// (heard) and the loop (forget).
func TestPublishedSeqsOrderings(t *testing.T) {
	type step struct {
		op       string // stored, heard, ended, forget
		attempt  uint32
		seq      uint64
		terminal bool
	}
	tests := []struct {
		name      string
		steps     []step
		wantKnown bool
		wantSeq   uint64
		wantHeard bool
	}{
		{name: "stored", steps: []step{{op: "stored", attempt: 1, seq: 7}}, wantKnown: true, wantSeq: 7},
		{name: "stored then chunk", steps: []step{{op: "stored", attempt: 1, seq: 7}, {op: "heard"}}, wantKnown: true, wantSeq: 7, wantHeard: true},
		{name: "stored then answered", steps: []step{{op: "stored", attempt: 1, seq: 7}, {op: "heard", attempt: 1, terminal: true}}},
		{name: "answered before its ack", steps: []step{{op: "heard", attempt: 1, terminal: true}, {op: "stored", attempt: 1, seq: 7}}},
		{name: "retry stored after an answer", steps: []step{
			{op: "stored", attempt: 1, seq: 7}, {op: "heard", attempt: 1, terminal: true}, {op: "stored", attempt: 2, seq: 9},
		}, wantKnown: true, wantSeq: 9},
		{name: "a late ack of an earlier attempt", steps: []step{
			{op: "stored", attempt: 2, seq: 9}, {op: "stored", attempt: 1, seq: 7},
		}, wantKnown: true, wantSeq: 9},
		{name: "a stale answer of an earlier attempt", steps: []step{
			{op: "stored", attempt: 2, seq: 9}, {op: "heard", attempt: 1, terminal: true},
		}, wantKnown: true, wantSeq: 9},
		{name: "forgotten", steps: []step{{op: "stored", attempt: 1, seq: 7}, {op: "forget"}}},
		{name: "forgotten before its ack", steps: []step{{op: "heard", attempt: 1, terminal: true}, {op: "forget"}, {op: "stored", attempt: 2, seq: 9}},
			wantKnown: true, wantSeq: 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPublishedSeqs()
			for _, s := range tt.steps {
				switch s.op {
				case "stored":
					p.stored("r", "tool", s.attempt, s.seq)
				case "heard":
					p.heard("r", s.attempt, s.terminal)
				case "forget":
					p.forget("r")
				}
			}
			got, ok := p.get("r")
			if ok != tt.wantKnown || got.seq != tt.wantSeq || got.heard != tt.wantHeard {
				t.Fatalf("entry = %+v, %v; want seq %d heard %v known %v", got, ok, tt.wantSeq, tt.wantHeard, tt.wantKnown)
			}
			if len(p.ended) > 1 {
				t.Fatalf("ended holds %d requests", len(p.ended))
			}
		})
	}
}

func TestPublishedSeqsEndedIsBounded(t *testing.T) {
	p := newPublishedSeqs()
	for i := range 3 * maxEnded {
		p.heard("late-"+strconv.Itoa(i), 1, true)
	}
	if len(p.ended) > maxEnded {
		t.Fatalf("ended holds %d, bound %d", len(p.ended), maxEnded)
	}
}
