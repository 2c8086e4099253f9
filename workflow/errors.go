package workflow

import (
	"errors"
	"fmt"
)

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
	// ErrLedgerRejected: a stored ledger that does not verify (a record
	// whose seal fails, one sealed under a key no longer held, records
	// that do not follow on, a head gone): it is not replayed, and fails
	// its session alone.
	ErrLedgerRejected = errors.New("workflow: ledger rejected")
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
	// ErrToolsChanged: a session's pinned tool definitions differ from
	// the host's now, so a replay could answer differently; it wraps
	// ErrReplay.
	ErrToolsChanged = fmt.Errorf("%w: tool definitions changed", ErrReplay)
	// ErrSessionCancelled: an operator ended the session; it is the
	// session's outcome, whatever its script did with the cancellations.
	ErrSessionCancelled = errors.New("workflow: session cancelled")
	// ErrMaxLifetime: the session outlived the lifetime its submitter
	// gave it, and was ended.
	ErrMaxLifetime = errors.New("workflow: session outlived its max lifetime")
	// ErrSessionEnded: an input for a session that has ended.
	ErrSessionEnded = errors.New("workflow: session ended")
	// ErrUnknownOperation: an input names an operation the session does
	// not hold live.
	ErrUnknownOperation = errors.New("workflow: unknown operation")
	// ErrInvalidReconcileState: a reconciliation state DecideReconcile
	// does not know; no action is taken on it.
	ErrInvalidReconcileState = errors.New("workflow: invalid reconciliation state")
)
