package hostnats

import (
	"testing"

	"github.com/splashfabric/splashfabric/fabric"
)

func TestReplayWindowRemembersRecentFinishedRequests(t *testing.T) {
	w := newReplayWindow(2)
	steps := []struct {
		id       string
		seq      uint64
		terminal bool
		want     bool
	}{
		{"a", fabric.WorkerSeq(1, 1), false, true},
		{"a", fabric.WorkerSeq(1, 1), false, false}, // replay
		{"a", fabric.WorkerSeq(1, 2), true, true},   // result of attempt 1
		{"a", fabric.WorkerSeq(1, 2), true, false},  // replayed result, still refused
		{"a", fabric.WorkerSeq(2, 1), true, true},   // host retry: attempt 2 continues the window
		{"b", fabric.WorkerSeq(1, 1), true, true},   // evicts a's stale first slot only
		{"a", fabric.WorkerSeq(2, 1), true, false},  // so a is still remembered
		{"c", fabric.WorkerSeq(1, 1), true, true},   // evicts a's live slot
		{"a", fabric.WorkerSeq(2, 1), true, true},   // forgotten: beyond the memory
	}
	for i, s := range steps {
		if got := w.accept(s.id, s.seq, s.terminal); got != s.want {
			t.Fatalf("step %d accept(%s, %d) = %v, want %v", i, s.id, s.seq, got, s.want)
		}
	}
	if n := w.size(); n > 4 {
		t.Fatalf("window holds %d requests", n)
	}
	w.forget("e")
	if !w.accept("e", 1<<32|1, false) {
		t.Fatal("forgotten request refused")
	}
}
