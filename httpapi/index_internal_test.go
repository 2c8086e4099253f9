package httpapi

import (
	"fmt"
	"slices"
	"testing"

	"github.com/splashfabric/splashfabric/hostloop"
)

// TestIndexLetsTheOldestGo adds many more sessions than the index keeps:
// after each one it lists exactly the newest, newest first, and holds no
// entry it does not list.
func TestIndexLetsTheOldestGo(t *testing.T) {
	const keep = 3
	x := NewSessionIndex(IndexConfig{Sessions: keep})
	var ids []string
	for i := range 500 {
		id := fmt.Sprintf("s-%d", i)
		ids = append(ids, id)
		x.SessionChanged(hostloop.SessionStatus{ID: hostloop.SessionID(id), State: hostloop.SessionSuspended})
		want := slices.Clone(ids[max(0, len(ids)-keep):])
		slices.Reverse(want)
		var got []string
		for _, s := range x.list("", keep+1, func(hostloop.SessionID, string) bool { return true }) {
			got = append(got, s.ID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("after %s: listed %q, want %q", id, got, want)
		}
		if len(x.sessions) != len(want) || len(x.order) != len(want) {
			t.Fatalf("after %s: %d entries, %d ids in order, want %d", id, len(x.sessions), len(x.order), len(want))
		}
	}
}

// BenchmarkIndexNewSession is a new session in a full index of the
// default size: letting the oldest go must not cost a copy of the rest.
func BenchmarkIndexNewSession(b *testing.B) {
	x := NewSessionIndex(IndexConfig{})
	ids := make([]hostloop.SessionID, DefaultIndexSessions+b.N)
	for i := range ids {
		ids[i] = hostloop.SessionID(fmt.Sprintf("s-%d", i))
	}
	for _, id := range ids[:DefaultIndexSessions] {
		x.SessionChanged(hostloop.SessionStatus{ID: id})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		x.SessionChanged(hostloop.SessionStatus{ID: ids[DefaultIndexSessions+i]})
	}
}
