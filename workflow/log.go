package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// Log keeps ledgers by session. Append is fenced: it writes entries at
// index from only if the stored ledger has exactly from entries, so two
// hosts that both think they own a session cannot interleave its history
// (the second gets ErrLedgerConflict).
//
// An Append whose answer was lost may have landed, and its writer makes it
// again. So a ledger that already holds, from index from, the start of
// entries (the writer's own earlier try) takes the Append: only the rest
// is written. Entries carry their time to the nanosecond and request ids
// naming their host's incarnation, so another owner never writes the same
// entries; anything else past from is a conflict. Package logtest checks
// an implementation against this contract.
type Log interface {
	Append(ctx context.Context, session string, from int, entries []Entry) error
	// Load returns the session's entries; ErrUnknownLedger if none.
	Load(ctx context.Context, session string) ([]Entry, error)
	// Remove deletes a finished session's ledger; removing an unknown one
	// is not an error.
	Remove(ctx context.Context, session string) error
	// Sessions lists the sessions that have a ledger.
	Sessions(ctx context.Context) ([]string, error)
}

// Rewriter is implemented by Logs that can replace a stored ledger with
// one holding the same entries and more, in one write: a ledger appended
// to many times is then read back in few messages, whatever the session's
// age. Package logtest checks it with the rest of the contract.
type Rewriter interface {
	// Rewrite stores entries, the session's whole ledger, in place of
	// the stored one, which must hold exactly stored entries, the first
	// of these (fenced as Append is: ErrLedgerConflict otherwise). A
	// ledger too large to rewrite at once takes the entries past stored
	// as an Append.
	Rewrite(ctx context.Context, session string, stored int, entries []Entry) error
}

// SessionAppend is one session's Append, in a batch of several.
type SessionAppend struct {
	Session string
	From    int
	Entries []Entry
}

// UpTo is the entry count the write leaves stored.
func (a SessionAppend) UpTo() int { return a.From + len(a.Entries) }

// BatchAppender is implemented by Logs that can store the appends of
// several sessions in one write to their store: a host loop hands them
// what its sessions made ready in one step. Each append is fenced and
// retried as Append's contract says; the answer is one error per append,
// in order (ErrLedgerConflict for one another writer fenced out).
type BatchAppender interface {
	AppendBatch(ctx context.Context, writes []SessionAppend) []error
}

// Prober is implemented by Logs that can tell whether a session has a
// ledger without reading it.
type Prober interface {
	Has(ctx context.Context, session string) (bool, error)
}

// MemoryLog is a Log in memory, for tests and single-process embedding.
type MemoryLog struct {
	mu      sync.Mutex
	ledgers map[string][]Entry
}

// NewMemoryLog returns an empty MemoryLog.
func NewMemoryLog() *MemoryLog { return &MemoryLog{ledgers: make(map[string][]Entry)} }

// Append implements Log.
func (m *MemoryLog) Append(_ context.Context, session string, from int, entries []Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	have := m.ledgers[session]
	if len(have) != from {
		k, ok := Landed(have, from, entries)
		if !ok {
			return fmt.Errorf("%w: %s holds %d entries, the writer expected %d", ErrLedgerConflict, session, len(have), from)
		}
		entries = entries[k:]
	}
	m.ledgers[session] = append(have, entries...)
	return nil
}

// Landed reports how many of entries, meant for index from, the stored
// ledger holds there already, compared as the entries are encoded; ok is
// false when what it holds past from is anything else (another writer's
// entries, or more than entries).
func Landed(stored []Entry, from int, entries []Entry) (k int, ok bool) {
	if len(stored) <= from {
		return 0, false
	}
	for _, e := range entries {
		if from+k == len(stored) {
			return k, true
		}
		got, err1 := json.Marshal(stored[from+k])
		want, err2 := json.Marshal(e)
		if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
			return 0, false
		}
		k++
	}
	return k, from+k == len(stored)
}

// Load implements Log.
func (m *MemoryLog) Load(_ context.Context, session string) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.ledgers[session]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownLedger, session)
	}
	return slices.Clone(e), nil
}

// Rewrite implements Rewriter.
func (m *MemoryLog) Rewrite(ctx context.Context, session string, stored int, entries []Entry) error {
	if stored > len(entries) {
		return fmt.Errorf("%w: rewrite of %d entries over %d stored", ErrInvalidEntry, len(entries), stored)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	have := m.ledgers[session]
	if len(have) != stored {
		if k, ok := Landed(have, 0, entries); ok && k == len(entries) {
			return nil // an earlier try that landed
		}
		return fmt.Errorf("%w: %s holds %d entries, the writer expected %d", ErrLedgerConflict, session, len(have), stored)
	}
	m.ledgers[session] = slices.Clone(entries)
	return nil
}

// Has implements Prober.
func (m *MemoryLog) Has(_ context.Context, session string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.ledgers[session]
	return ok, nil
}

// Remove implements Log.
func (m *MemoryLog) Remove(_ context.Context, session string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.ledgers, session)
	return nil
}

// Sessions implements Log, in name order.
func (m *MemoryLog) Sessions(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.ledgers))
	for s := range m.ledgers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out, nil
}
