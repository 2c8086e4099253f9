package hostnats

import "testing"

// TestPublishedSeqsOrderings drives the sequence table through the orders
// its writers can race in: Publish (published), the ack watcher (stored),
// the events consumer (heard) and the loop (forget).
func TestPublishedSeqsOrderings(t *testing.T) {
	type step struct {
		op              string // published, stored, heard, forget
		attempt         uint32
		seq             uint64
		terminal, retry bool
	}
	const limit = 3
	tests := []struct {
		name      string
		steps     []step
		wantKnown bool
		wantSeq   uint64
		wantHeard bool
	}{
		{name: "never published here", steps: []step{{op: "heard", attempt: 1}, {op: "stored", attempt: 1, seq: 7}}},
		{name: "published, not yet stored", steps: []step{{op: "published", attempt: 1}}, wantKnown: true},
		{name: "stored", steps: []step{{op: "published", attempt: 1}, {op: "stored", attempt: 1, seq: 7}}, wantKnown: true, wantSeq: 7},
		{name: "stored then a chunk", steps: []step{{op: "published", attempt: 1}, {op: "stored", attempt: 1, seq: 7}, {op: "heard"}},
			wantKnown: true, wantSeq: 7, wantHeard: true},
		{name: "answered", steps: []step{{op: "published", attempt: 1}, {op: "stored", attempt: 1, seq: 7}, {op: "heard", attempt: 1, terminal: true}}},
		{name: "answered before its ack", steps: []step{{op: "published", attempt: 1}, {op: "heard", attempt: 1, terminal: true}, {op: "stored", attempt: 1, seq: 7}}},
		{name: "a chunk before its ack", steps: []step{{op: "published", attempt: 1}, {op: "heard"}, {op: "stored", attempt: 1, seq: 7}},
			wantKnown: true, wantHeard: true},
		{name: "retryable, between attempts", steps: []step{
			{op: "published", attempt: 1}, {op: "stored", attempt: 1, seq: 7}, {op: "heard", attempt: 1, terminal: true, retry: true},
		}, wantKnown: true},
		{name: "retryable at the attempt limit", steps: []step{
			{op: "published", attempt: limit}, {op: "stored", attempt: limit, seq: 7}, {op: "heard", attempt: limit, terminal: true, retry: true},
		}},
		{name: "the next attempt stored", steps: []step{
			{op: "published", attempt: 1}, {op: "stored", attempt: 1, seq: 7}, {op: "heard", attempt: 1, terminal: true, retry: true},
			{op: "published", attempt: 2}, {op: "stored", attempt: 2, seq: 9},
		}, wantKnown: true, wantSeq: 9},
		{name: "a late ack of an earlier attempt", steps: []step{
			{op: "published", attempt: 1}, {op: "published", attempt: 2}, {op: "stored", attempt: 2, seq: 9}, {op: "stored", attempt: 1, seq: 7},
		}, wantKnown: true, wantSeq: 9},
		{name: "a stale answer of an earlier attempt", steps: []step{
			{op: "published", attempt: 2}, {op: "stored", attempt: 2, seq: 9}, {op: "heard", attempt: 1, terminal: true},
		}, wantKnown: true, wantSeq: 9},
		{name: "forgotten", steps: []step{{op: "published", attempt: 1}, {op: "stored", attempt: 1, seq: 7}, {op: "forget"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPublishedSeqs()
			for _, s := range tt.steps {
				switch s.op {
				case "published":
					p.published("r", "tool", s.attempt, limit)
				case "stored":
					p.stored("r", s.attempt, s.seq)
				case "heard":
					p.heard("r", "tool", s.attempt, s.terminal, s.retry)
				case "forget":
					p.forget("r")
				}
			}
			got, ok := p.get("r")
			if ok != tt.wantKnown || got.seq != tt.wantSeq || got.heard != tt.wantHeard {
				t.Fatalf("entry = %+v, %v; want seq %d heard %v known %v", got, ok, tt.wantSeq, tt.wantHeard, tt.wantKnown)
			}
		})
	}
}
