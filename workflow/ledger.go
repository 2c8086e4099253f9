package workflow

import (
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/host"
)

// Ledger is one session's ledger in memory, as its owner builds it: the
// checks here are what keeps a ledger replayable. It is not safe for
// concurrent use; the host loop owns it.
type Ledger struct {
	entries  []Entry
	prepared map[host.ExternalToolID]bool
	lastCall uint64
}

// NewLedger opens a ledger with its submission.
func NewLedger(at time.Time, sub Submitted) *Ledger {
	return &Ledger{
		entries:  []Entry{{At: at, Submitted: &sub}},
		prepared: make(map[host.ExternalToolID]bool),
	}
}

// Resume checks entries read back from a Log and continues the ledger
// they hold. Nothing of a ledger that does not check is kept.
func Resume(entries []Entry) (*Ledger, error) {
	if len(entries) == 0 || entries[0].kind() != "submitted" {
		return nil, fmt.Errorf("%w: a ledger opens with its submission", ErrInvalidEntry)
	}
	l := NewLedger(entries[0].At, *entries[0].Submitted)
	for i, e := range entries[1:] {
		var err error
		switch e.kind() {
		case "prepared":
			_, err = l.Prepare(e.At, *e.Prepared)
		case "applied":
			_, err = l.Apply(e.At, *e.Applied)
		default:
			err = fmt.Errorf("%w: entry %d is neither a prepared operation nor an applied input", ErrInvalidEntry, i+1)
		}
		if err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Prepare appends an operation's prepared record and returns its index.
// Call indexes only grow, and an operation is prepared once: a record
// that would stand in for an earlier one is refused with
// ErrStalePrepared, so a durable key can never be rebound.
func (l *Ledger) Prepare(at time.Time, p Prepared) (int, error) {
	switch {
	case p.Tool == "" || p.Key == "" || p.Request == "" || p.Op == 0:
		return 0, fmt.Errorf("%w: prepared %s lacks its tool, key, request or id", ErrInvalidEntry, p.Op)
	case l.prepared[p.Op]:
		return 0, fmt.Errorf("%w: %s is already prepared", ErrStalePrepared, p.Op)
	case p.CallIndex <= l.lastCall:
		return 0, fmt.Errorf("%w: call %d after call %d", ErrStalePrepared, p.CallIndex, l.lastCall)
	}
	l.prepared[p.Op] = true
	l.lastCall = p.CallIndex
	l.entries = append(l.entries, Entry{At: at, Prepared: &p})
	return len(l.entries) - 1, nil
}

// Apply appends an answer or host decision and returns its index.
func (l *Ledger) Apply(at time.Time, a Applied) (int, error) {
	switch {
	case !a.Kind.valid():
		return 0, fmt.Errorf("%w: input kind %q", ErrInvalidEntry, a.Kind)
	case a.Kind == InputStreamed && a.Stream == nil:
		return 0, fmt.Errorf("%w: streamed %s without its counts", ErrInvalidEntry, a.Op)
	case a.Kind == InputSessionCancel:
		if !a.Reason.valid() {
			return 0, fmt.Errorf("%w: session ended for reason %q", ErrInvalidEntry, a.Reason)
		}
	case a.Kind == InputExpire:
	case !l.prepared[a.Op]:
		return 0, fmt.Errorf("%w: %s answers %s, never prepared", ErrInvalidEntry, a.Kind, a.Op)
	}
	l.entries = append(l.entries, Entry{At: at, Applied: &a})
	return len(l.entries) - 1, nil
}

// Len is the number of entries.
func (l *Ledger) Len() int { return len(l.entries) }

// Entries returns the entries from index from on; the caller must not
// change them.
func (l *Ledger) Entries(from int) []Entry {
	if from >= len(l.entries) {
		return nil
	}
	return l.entries[from:]
}

// Submitted is the ledger's submission.
func (l *Ledger) Submitted() Submitted { return *l.entries[0].Submitted }
