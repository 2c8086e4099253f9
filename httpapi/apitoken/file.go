package apitoken

import (
	"bytes"
	"crypto/sha256"

	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"sigs.k8s.io/yaml"
)

// MaxFileBytes bounds a token file: thousands of tokens fit.
const MaxFileBytes = 1 << 20

// DefaultPoll is how often a File looks at its file for changes.
const DefaultPoll = 2 * time.Second

// fileDoc is the token file's format. It is read strictly: a misspelt
// field is an error, not a token with less than was meant.
type fileDoc struct {
	Tokens []fileEntry `json:"tokens"`
}

type fileEntry struct {
	Name   string   `json:"name"`
	Owner  string   `json:"owner"`
	SHA256 string   `json:"sha256"`
	Scopes []string `json:"scopes"`
	// Tools is a pointer so that a missing list (an error for a token
	// that submits) differs from an empty one (no tools).
	Tools *[]string `json:"tools"`
}

// Parse reads a token file (YAML, or JSON, which is YAML too).
func Parse(data []byte) (*Set, error) {
	var doc fileDoc
	if err := yaml.UnmarshalStrict(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidFile, err)
	}
	entries := make([]Entry, 0, len(doc.Tokens))
	for i, fe := range doc.Tokens {
		e, err := fe.entry()
		if err != nil {
			return nil, fmt.Errorf("%w: tokens[%d]: %w", ErrInvalidFile, i, err)
		}
		entries = append(entries, e)
	}
	s, err := NewSet(entries)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidFile, err)
	}
	return s, nil
}

func (fe fileEntry) entry() (Entry, error) {
	d, err := ParseDigest(fe.SHA256)
	if err != nil {
		return Entry{}, fmt.Errorf("token %q: %w", fe.Name, err)
	}
	scopes := make([]Scope, len(fe.Scopes))
	for i, s := range fe.Scopes {
		scopes[i] = Scope(s)
	}
	// A token file never grants every tool by omission: no list, or an
	// empty one, is no tool.
	tools := []string{}
	if fe.Tools != nil && *fe.Tools != nil {
		tools = *fe.Tools
	}
	t, err := New(Spec{Name: fe.Name, Owner: fe.Owner, Scopes: scopes, Tools: tools})
	if err != nil {
		return Entry{}, err
	}
	if fe.Tools == nil && t.Has(ScopeSubmit) {
		// Every tool is not a default worth having by accident.
		return Entry{}, fmt.Errorf("%w: token %q may submit but names no tools: give its patterns, or [\">\"] for every tool", ErrInvalidToken, fe.Name)
	}
	return Entry{Digest: d, Token: t}, nil
}

// FileConfig configures a File.
type FileConfig struct {
	// Poll is how often the file is read again; zero picks DefaultPoll,
	// negative never (Reload alone rereads it).
	Poll time.Duration
	// OnReload, if set, is called after every reread that found the file
	// changed: with the new set, or with the error that kept the old one
	// (once for as long as the file stays broken the same way). It runs
	// on the File's goroutine (or Reload's caller).
	OnReload func(*Set, error)
}

// File is a Verifier over a token file that it rereads as it changes:
// every Poll it reads the file and, when its bytes differ from those last
// loaded, parses it and serves the new tokens from the next lookup on. A
// file that cannot be read or parsed leaves the tokens as they were (and
// is reported to OnReload), so a half-written edit never locks every
// client out. Lookups never wait for a reload.
//
// Reading the file whole, not only its modification time, catches every
// change whatever the filesystem's time resolution, and an atomic
// replacement (a rename over it, as editors and Kubernetes do) as well as
// an edit in place; a token file is small enough for that to cost
// nothing.
type File struct {
	path     string
	onReload func(*Set, error)
	cur      atomic.Pointer[Set]

	// mu serialises rereads (the poller's and Reload's); it guards last
	// and failed.
	mu   sync.Mutex
	last [sha256.Size]byte
	// failed is the last reread's error, "" after a good one: a file left
	// broken is reported once, not at every poll.
	failed string

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

var _ Verifier = (*File)(nil)

// OpenFile reads the token file at path and, unless cfg.Poll is negative,
// starts watching it; Close stops that. A file that cannot be read or
// parsed at open is an error.
func OpenFile(path string, cfg FileConfig) (*File, error) {
	f := &File{path: path, onReload: cfg.OnReload, stop: make(chan struct{}), done: make(chan struct{})}
	data, err := f.read()
	if err != nil {
		return nil, err
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.cur.Store(s)
	f.last = sha256.Sum256(data)
	poll := cfg.Poll
	if poll == 0 {
		poll = DefaultPoll
	}
	if poll < 0 {
		close(f.done)
		return f, nil
	}
	go f.watch(poll)
	return f, nil
}

func (f *File) watch(every time.Duration) {
	defer close(f.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
			_, _ = f.Reload()
		}
	}
}

// Reload reads the file now. It reports whether the tokens changed, and
// the error that kept the old ones, if any; an unchanged file is neither.
func (f *File) Reload() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, err := f.read()
	if err == nil && sha256.Sum256(data) == f.last {
		f.failed = ""
		return false, nil
	}
	var s *Set
	if err == nil {
		if s, err = Parse(data); err != nil {
			err = fmt.Errorf("%s: %w", f.path, err)
		}
	}
	if err != nil {
		if f.onReload != nil && err.Error() != f.failed {
			f.onReload(nil, err)
		}
		f.failed = err.Error()
		return false, err
	}
	f.cur.Store(s)
	f.last, f.failed = sha256.Sum256(data), ""
	if f.onReload != nil {
		f.onReload(s, nil)
	}
	return true, nil
}

// read reads the whole file, refusing one over MaxFileBytes.
func (f *File) read() ([]byte, error) {
	fh, err := os.Open(f.path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidFile, err)
	}
	defer fh.Close()
	var b bytes.Buffer
	n, err := io.Copy(&b, io.LimitReader(fh, MaxFileBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidFile, f.path, err)
	case n > MaxFileBytes:
		return nil, fmt.Errorf("%w: %s: over %d bytes", ErrInvalidFile, f.path, MaxFileBytes)
	}
	return b.Bytes(), nil
}

// Lookup implements Verifier with the tokens last loaded.
func (f *File) Lookup(bearer string) (*Token, bool) { return f.cur.Load().Lookup(bearer) }

// Current returns the tokens last loaded.
func (f *File) Current() *Set { return f.cur.Load() }

// Close stops watching the file and waits for a reread in progress. It
// may be called more than once.
func (f *File) Close() {
	f.stopOnce.Do(func() { close(f.stop) })
	<-f.done
}
