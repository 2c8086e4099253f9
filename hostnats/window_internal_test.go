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
		if got := w.accept(s.id, "t", s.seq, s.terminal); got != s.want {
			t.Fatalf("step %d accept(%s, %d) = %v, want %v", i, s.id, s.seq, got, s.want)
		}
	}
	if n := w.size(); n > 4 {
		t.Fatalf("window holds %d requests", n)
	}
	w.forget("e")
	if !w.accept("e", "t", 1<<32|1, false) {
		t.Fatal("forgotten request refused")
	}
}

// A frame another tool's pool sealed for a request moves that pool's
// window only: the genuine answer, sealed by the pool of the request's
// tool, is still accepted, and its replay still refused.
func TestReplayWindowIsPerPool(t *testing.T) {
	w := newReplayWindow(8)
	if !w.accept("r", "other.tool", fabric.WorkerSeq(1, 1), true) {
		t.Fatal("the forged frame's first sight refused")
	}
	if !w.accept("r", "demo.sleep", fabric.WorkerSeq(1, 1), true) {
		t.Fatal("the genuine answer refused after a forgery under another pool's key")
	}
	if w.accept("r", "demo.sleep", fabric.WorkerSeq(1, 1), true) {
		t.Fatal("a replay of the genuine answer accepted")
	}
	w.forget("r")
	if !w.accept("r", "demo.sleep", fabric.WorkerSeq(1, 1), true) {
		t.Fatal("forgotten request refused")
	}
}
