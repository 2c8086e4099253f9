package hostloop

import (
	"errors"

	"github.com/splashfabric/splashfabric/workflow"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Errors of the loop. Each is declared once here and wrapped with the
// offending value, so callers match them with errors.Is; the runtime's
// own refusals (host.ErrWrongState, host.ErrUnknownOperation, ...) pass
// through as they are.
var (
	// ErrLoopStopped is returned by loop commands sent after Stop.
	ErrLoopStopped = errors.New("hostloop: loop stopped")
	// ErrUnknownSession is returned for a session id the loop does not
	// hold.
	ErrUnknownSession = errors.New("hostloop: unknown session")
	// ErrHostBusy: the host holds as many suspended sessions as its
	// Limits allow; a submission may succeed later.
	ErrHostBusy = errors.New("hostloop: too many suspended sessions")
	// ErrOwnerBusy: the submission's owner holds as many suspended
	// sessions as one owner may (Limits.MaxSessionsPerOwner); nothing was
	// submitted.
	ErrOwnerBusy = errors.New("hostloop: too many suspended sessions for this owner")
	// ErrLimitTooHigh: a submission asked for a budget or pending limit
	// above the host's Limits.
	ErrLimitTooHigh = errors.New("hostloop: limit above the host's maximum")
	// ErrInvalidConfig is returned by StartLoop for a configuration it
	// cannot run with.
	ErrInvalidConfig = errors.New("hostloop: invalid loop configuration")
	// ErrSessionEnded: the session asked to be cancelled has ended
	// already; nothing was changed.
	ErrSessionEnded = errors.New("hostloop: session ended")
	// ErrSessionResuming: the session is being brought back from its
	// ledger by this process and is not live yet; ask again shortly.
	ErrSessionResuming = errors.New("hostloop: session resuming")
	// ErrLedgerRejected is the reason of a session whose ledger does not
	// verify or replay (a forged or damaged record, one sealed under a
	// key no longer held): it fails alone, and its ledger is kept for
	// inspection. It is workflow.ErrLedgerRejected.
	ErrLedgerRejected = workflow.ErrLedgerRejected
)

var (
	// ErrHostRestarted is the reason of a session whose host process ended
	// while the session was suspended and did not record its outcome (it
	// was killed or crashed): a later process of the same host answers for
	// it from the archive.
	ErrHostRestarted = errors.New("hostloop: host restarted while the session was suspended")
	// ErrHostStopped is the reason of a session that was suspended when its
	// host process stopped gracefully (Loop.Stop).
	ErrHostStopped = errors.New("hostloop: host stopped while the session was suspended")
	// ErrSubmissionWithdrawn is the reason of a durable session whose
	// submitter gave up (its context ended) before the session's ledger
	// was first stored: Submit answered it with the context's error, so
	// the session ends without dispatching anything.
	ErrSubmissionWithdrawn = errors.New("hostloop: submission withdrawn before the session was stored")
	// ErrArchiveUnavailable reports a session archive that could not be
	// written or read: StartLoop fails with it when the incarnation cannot
	// be registered, Status when a lookup fails.
	ErrArchiveUnavailable = errors.New("hostloop: session archive unavailable")
	// ErrUnknownIncarnation is returned by SessionArchive.Incarnation for
	// an incarnation that was never registered (or has expired).
	ErrUnknownIncarnation = errors.New("hostloop: unknown incarnation")
	// ErrRecordRejected is returned by SessionArchive.Lookup and
	// Incarnation for a stored record that fails authentication (forged,
	// altered, or written before records were sealed): it is refused,
	// never answered from. Status wraps it in ErrArchiveUnavailable.
	ErrRecordRejected = errors.New("hostloop: archived record fails authentication")
	// ErrInvalidSubmission: a submission field the loop cannot take (a
	// restart policy it does not know).
	ErrInvalidSubmission = errors.New("hostloop: invalid submission")
	// ErrLedgerUnavailable: StartLoop could not list or read the ledgers
	// of the sessions an earlier process left, so it cannot resume them.
	ErrLedgerUnavailable = errors.New("hostloop: session ledgers unavailable")
	// ErrMemoryPressure: the host's heap is near its memory budget
	// (LoopConfig.MemoryBudget), so it takes no new session until its
	// sessions let some go; nothing was submitted.
	ErrMemoryPressure = errors.New("hostloop: host short of memory")
	// ErrInvocationTooLarge: the transport refused an invocation as
	// larger than it carries. It never will carry it, so the operation
	// fails at once rather than being published again. A host whose
	// runtimes bound tool inputs (host.Config.MaxInputBytes) never meets
	// it.
	ErrInvocationTooLarge = errors.New("hostloop: invocation larger than the transport carries")
	// ErrLeaseHeld is returned by Leases.Take for an incarnation another
	// live host holds.
	ErrLeaseHeld = errors.New("hostloop: lease held by another host")
	// ErrSessionElsewhere: the session is driven by another host's
	// process; SessionElsewhereError names it.
	ErrSessionElsewhere = errors.New("hostloop: session held by another host")
)

// SessionElsewhereError says which host's process a session belongs to,
// for a Status asked of a host that does not hold it.
type SessionElsewhereError struct {
	Session SessionID
	Host    string
}

func (e *SessionElsewhereError) Error() string {
	return "hostloop: session " + clip.Quote(e.Session, clip.Echo) + " belongs to host " + clip.Quote(e.Host, clip.Echo) + ", which answers for it"
}

// Unwrap makes it match ErrSessionElsewhere.
func (e *SessionElsewhereError) Unwrap() error { return ErrSessionElsewhere }

// ErrValueTooLarge is the reason of a session whose script completed with
// a value over LoopConfig.MaxValueBytes: the value is refused rather than
// cut, since a cut JSON value no longer parses.
var ErrValueTooLarge = errors.New("hostloop: session value too large")
