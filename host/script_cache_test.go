package host

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/splashfabric/splashfabric/internal/tooltest"
)

// cached lists the cache's sources, newest first, without touching them.
func (c *programCache) cached() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for e := c.lru.next; e != &c.lru; e = e.next {
		out = append(out, e.source)
	}
	return out
}

func TestProgramCacheBounds(t *testing.T) {
	// With 100 bytes, one source may take 25: item(i) takes 22, so four
	// fit and a fifth evicts the oldest.
	item := func(i int) string { return fmt.Sprintf("'%s'+%d", strings.Repeat("x", 18), i) }
	tests := []struct {
		name                 string
		maxEntries, maxBytes int
		gets                 []string
		want                 []string // newest first
	}{
		{"hit reuses the entry", 4, 1000, []string{"1", "2", "1"}, []string{"1", "2"}},
		{"count evicts the least recently used", 2, 1000, []string{"1", "2", "1", "3"}, []string{"3", "1"}},
		{"bytes evict the least recently used", 10, 100,
			[]string{item(1), item(2), item(3), item(1), item(4), item(5)}, []string{item(5), item(4), item(1), item(3)}},
		{"a source over its share is not kept", 10, 100, []string{"1", item(1) + "+1234"}, []string{"1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newProgramCache(tt.maxEntries, tt.maxBytes)
			for _, src := range tt.gets {
				if _, err := c.get(src); err != nil {
					t.Fatalf("get(%q): %v", src, err)
				}
			}
			if got := c.cached(); !slices.Equal(got, tt.want) {
				t.Fatalf("cached %q, want %q", got, tt.want)
			}
			n := 0
			for _, src := range tt.want {
				n += len(src)
			}
			if c.bytes != n || len(c.entries) != len(tt.want) {
				t.Fatalf("accounting: %d bytes in %d entries, want %d in %d", c.bytes, len(c.entries), n, len(tt.want))
			}
		})
	}
}

func TestProgramCacheSharesOneProgram(t *testing.T) {
	c := newProgramCache(4, 1000)
	p1, err := c.get("1 + 2")
	must(t, err)
	p2, err := c.get("1 + 2")
	must(t, err)
	if p1 != p2 {
		t.Fatal("the same source compiled twice")
	}
}

func TestProgramCacheKeepsNoSyntaxErrors(t *testing.T) {
	c := newProgramCache(4, 1000)
	if _, err := c.get("let = ;"); err == nil {
		t.Fatal("a broken script compiled")
	}
	if got := c.cached(); len(got) != 0 {
		t.Fatalf("cached %q after a syntax error", got)
	}
}

// TestConcurrentEvalsShareThePrograms runs sessions on many goroutines at
// once, as Loop.Submit does, over a few sources: with -race it checks the
// shared cache and the programs it hands to several vms.
func TestConcurrentEvalsShareThePrograms(t *testing.T) {
	const goroutines, sessions, sources = 8, 25, 3
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range sessions {
				n := (g + i) % sources
				r := NewRuntime(Config{})
				if err := r.RegisterTool(tooltest.Text(t, "text.remote")); err != nil {
					errs <- err
					return
				}
				res, err := r.Eval(fmt.Sprintf(`const out = await tool.start("text.remote", "in"); out + %d`, n))
				if err != nil || !res.Suspended {
					errs <- fmt.Errorf("Eval: %+v, %v", res, err)
					return
				}
				inv, _ := r.ClaimNextExternalTool()
				res, err = r.CompleteExternalTool(inv.ID, Ok("done"))
				if want := fmt.Sprint("done", n); err != nil || !res.Completed() || res.Value != want {
					errs <- fmt.Errorf("complete: %+v, %v, want %q", res, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
