package host

import (
	"strings"
	"sync"

	"github.com/dop251/goja"
)

// Compiled programs are shared by every Runtime of the process. A host
// runs one fresh Runtime per session and evaluates a handful of distinct
// sources many times, so a cache per runtime would compile each source
// once per session. goja documents a *goja.Program as bound to no runtime
// and safe to run in several at the same time, so one compiled program
// serves every session that submits the same text.
const (
	// maxCachedPrograms bounds the number of cached programs, so many
	// tiny scripts cannot grow the cache's own bookkeeping without limit.
	maxCachedPrograms = 256
	// maxCachedSourceBytes bounds the cached sources' total length: a
	// program's memory grows with its source, so this bounds the cache's.
	maxCachedSourceBytes = 4 << 20
	// maxCachedProgramShare is the largest fraction of the byte bound one
	// source may take (1/4), so a single large script cannot flush the
	// cache; larger ones are compiled on every Eval.
	maxCachedProgramShare = 4
)

// sharedPrograms is the process's compiled-program cache.
var sharedPrograms = newProgramCache(maxCachedPrograms, maxCachedSourceBytes)

// programCache maps source text to its compiled program, evicting the
// least recently used entry when either bound is exceeded; lookups,
// insertions and evictions are O(1).
//
// It is safe for concurrent use: Loop.Submit evaluates a script's first
// step on the caller's goroutine, so runtimes owned by different
// goroutines Eval at the same time. The lock covers only the map and list
// updates; compiling happens outside it, so a slow compile never stalls
// the hits of other goroutines. Two goroutines that miss the same source
// at once both compile it and the first insertion is kept; the other
// program is just as valid and is used once.
type programCache struct {
	maxEntries, maxBytes int

	mu      sync.Mutex // guards the fields below
	entries map[string]*cachedProgram
	lru     cachedProgram // sentinel of the recency list: next is the newest, prev the oldest
	bytes   int           // total length of the cached sources
}

// cachedProgram is one entry, linked into the recency list.
type cachedProgram struct {
	source     string
	prg        *goja.Program
	prev, next *cachedProgram
}

func newProgramCache(maxEntries, maxBytes int) *programCache {
	c := &programCache{maxEntries: maxEntries, maxBytes: maxBytes, entries: make(map[string]*cachedProgram)}
	c.lru.prev, c.lru.next = &c.lru, &c.lru
	return c
}

// get returns the compiled program of source, compiling it on a miss. A
// source that does not compile is not cached: a stream of broken scripts
// must not evict the working ones, and its error is rebuilt each time as
// before.
func (c *programCache) get(source string) (*goja.Program, error) {
	if prg := c.lookup(source); prg != nil {
		return prg, nil
	}
	prg, err := compile(source)
	if err != nil {
		return nil, err
	}
	return c.add(source, prg), nil
}

func (c *programCache) lookup(source string) *goja.Program {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[source]
	if e == nil {
		return nil
	}
	if c.lru.next != e {
		c.unlink(e)
		c.pushFront(e)
	}
	return e.prg
}

// add caches prg for source unless another goroutine cached it first, and
// returns the program to run.
func (c *programCache) add(source string, prg *goja.Program) *goja.Program {
	if len(source) > c.maxBytes/maxCachedProgramShare {
		return prg
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[source]; e != nil {
		return e.prg
	}
	// The key outlives the Eval; a copy keeps it from pinning whatever
	// larger buffer the caller's string may share memory with.
	e := &cachedProgram{source: strings.Clone(source), prg: prg}
	c.entries[e.source] = e
	c.pushFront(e)
	c.bytes += len(e.source)
	for len(c.entries) > c.maxEntries || c.bytes > c.maxBytes {
		c.evict(c.lru.prev)
	}
	return prg
}

func (c *programCache) evict(e *cachedProgram) {
	c.unlink(e)
	delete(c.entries, e.source)
	c.bytes -= len(e.source)
}

func (c *programCache) pushFront(e *cachedProgram) {
	e.prev, e.next = &c.lru, c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}

func (c *programCache) unlink(e *cachedProgram) {
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = nil, nil
}
