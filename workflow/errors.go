package workflow

import "errors"

// Errors of the ledger. Every error the package returns wraps one of them.
var (
	// ErrInvalidEntry: an entry that cannot follow the ledger (a ledger
	// not opened by its submission, an answer to an operation never
	// prepared, an entry of no known kind).
	ErrInvalidEntry = errors.New("workflow: invalid ledger entry")
	// ErrStalePrepared: a prepared record that would replace or reorder
	// one already in the ledger (a call index at or below the last one,
	// an operation id prepared before).
	ErrStalePrepared = errors.New("workflow: stale prepared operation")
	// ErrUnknownLedger: the log holds no ledger for the session.
	ErrUnknownLedger = errors.New("workflow: unknown ledger")
	// ErrLedgerConflict: another writer appended to the session's ledger
	// since this one last read it; this writer no longer owns it.
	ErrLedgerConflict = errors.New("workflow: ledger written by another owner")
	// ErrReplay: the recorded inputs do not apply to the replayed
	// runtime (a prepared operation the script did not start, an answer
	// the runtime refuses). A script that diverged is reported with
	// host.ErrNondeterministic as well.
	ErrReplay = errors.New("workflow: ledger does not replay")
)
