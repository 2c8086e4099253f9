package workflow

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Log keeps ledgers by session. Append is fenced: it writes entries at
// index from only if the stored ledger has exactly from entries, so two
// hosts that both think they own a session cannot interleave its history
// (the second gets ErrLedgerConflict).
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
	if have := len(m.ledgers[session]); have != from {
		return fmt.Errorf("%w: %s holds %d entries, the writer expected %d", ErrLedgerConflict, session, have, from)
	}
	m.ledgers[session] = append(m.ledgers[session], entries...)
	return nil
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
