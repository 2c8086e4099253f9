package demotools

import "errors"

// Errors returned by this package. Each is declared once here and wrapped
// with the offending value, so callers match them with errors.Is.
var (
	// ErrUnknownTool reports a name that is not one of the demo tools.
	ErrUnknownTool = errors.New("demotools: unknown tool")
	// ErrNeedsJetStream reports demo.ledger asked of Register or Handler,
	// which cannot build it: it writes to JetStream KV, so it is
	// registered with RegisterLedger.
	ErrNeedsJetStream = errors.New("demotools: tool needs a JetStream context")
	// ErrInvalidInput reports a tool input the tool cannot read. Handlers
	// return it wrapped in workeragent.Permanent: no retry can fix it.
	ErrInvalidInput = errors.New("demotools: invalid input")
	// ErrLedgerCorrupt reports a value in the effect ledger bucket that
	// this package did not write.
	ErrLedgerCorrupt = errors.New("demotools: corrupt ledger entry")
)
