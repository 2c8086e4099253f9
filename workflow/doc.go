// Package workflow keeps a script session's operation ledger and rebuilds
// a session from it.
//
// A ledger is the session's history as the runtime applied it: the
// submission (source, grants, limits, pinned tool definitions, the session
// nonce and the seed of its randomness), each external operation's
// prepared record (its call index, canonical input, durable operation key
// and request id) written before the operation can be dispatched, and each
// answer or host decision (a result, a retry, an expiry, a cancellation)
// in the order the runtime took it, each with the time the runtime saw.
//
// Replay re-runs the script in a fresh runtime and feeds it the recorded
// inputs at the recorded times. The runtime is a deterministic state
// machine (its clock and Math.random come from the ledger), so the replay
// reaches the state the first run had reached, with the same operation
// ids and idempotency keys; the operations left without an answer are
// what a resuming host must finish. A script that no longer makes the
// calls its ledger recorded stops with host.ErrNondeterministic and
// dispatches nothing.
//
// # The session core
//
// Session is a session's durable core: its runtime and, when durable, its
// ledger and what of it is stored. Its driver (the host loop) hands it
// inputs (Claim, Answer, Chunk, RequestCancel, Expire, CancelSession, ...)
// and drains a Ready after each step: the next ledger Append, then the
// publishes, cancels and acknowledgements whose entries are stored,
// settled operations, the submission's acceptance, a ledger's removal. It
// reports what the Log answered with Stored, WriteFailed or Conflict.
// Nothing leaves the host before the entry that explains it is stored;
// each rule is a golden script in testdata (TestSessionRules). Restore
// rebuilds a Session from stored entries through the same function that
// applied each input the first time.
//
// The package owns the shape and order of a ledger, not its storage: a
// Log keeps it (MemoryLog here; hostnats.LedgerLog on JetStream).
package workflow
