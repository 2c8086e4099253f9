package hostnats

import (
	"errors"

	"github.com/splashfabric/splashfabric/workflow"
)

// Every rejection in this package wraps one of these sentinels, or
// fabric.ErrInvalidConfig for a setting out of range, or a sentinel of the
// interface it implements (hostloop's, workflow's), so callers match with
// errors.Is. A rejected call changes nothing.
var (
	// ErrClosed reports a call on a HostTransport or SessionArchive after
	// Close.
	ErrClosed = errors.New("hostnats: transport closed")
	// ErrLedgerRejected reports a ledger record that fails its seal or
	// does not follow the record before it: the ledger is not replayed.
	// It is workflow.ErrLedgerRejected, which the host loop matches.
	ErrLedgerRejected = workflow.ErrLedgerRejected
	// ErrNoReconcileAnswer reports a reconciliation request that no
	// worker answered acceptably before the timeout, or that no worker of
	// the tool's pool was there to hear.
	ErrNoReconcileAnswer = errors.New("hostnats: no reconciliation answer")
	// ErrReconcileReplayed reports an authentic reconciliation answer to
	// another request (an earlier one, replayed): it says nothing about
	// the operation asked about now.
	ErrReconcileReplayed = errors.New("hostnats: reconciliation answer replayed")
	// ErrReconcileMismatch reports an authentic answer to this request
	// that names another session, tool or operation key.
	ErrReconcileMismatch = errors.New("hostnats: reconciliation answer mismatched")
)
