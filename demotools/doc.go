// Package demotools holds the demo tools of Splash Fabric: small,
// deterministic tools that exercise each part of the protocol, shared by
// `splash dev`, `splash worker --tools` and the tests.
//
// # The tools
//
//	demo.echo         answers its input
//	demo.upper        answers its input upper-cased
//	demo.sleep        waits for a duration ("200ms"); cancellable; 30s deadline
//	demo.flaky        fails transiently on attempts 1..N ("2"), then "ok after N"
//	demo.ratelimited  rate-limits attempt 1 for a duration ("300ms"), then succeeds
//	demo.stream       streams N chunks ("5"), one carrying Secret, which the
//	                  host's redactor (Redact) replaces before release
//	demo.json.sum     {"numbers": [...]} -> {"sum": n}, both checked against
//	                  JSON Schemas on the host
//	demo.ledger       counts its runs per idempotency key in JetStream KV
//
// Every tool but demo.ledger is pure, so each is declared idempotent; a
// retry or a takeover of a crashed attempt gives the same answer. The
// decisions of demo.flaky and demo.ratelimited rest on Call.Attempt, which
// the host numbers, so the outcome does not depend on which worker runs
// which attempt.
//
// # Both sides
//
// One table describes each tool to both sides, so their registrations
// agree. The host registers the policies with Catalog, which is what
// hostloop.LoopConfig.Catalog takes:
//
//	cfg := hostloop.LoopConfig{Catalog: demotools.Catalog}
//
// A worker registers the handlers, all of them or a chosen few:
//
//	agent, _ := workeragent.New(nc, workerCfg)
//	if err := demotools.Register(agent, demotools.Echo, demotools.Sleep); err != nil {
//		// errors.Is(err, demotools.ErrUnknownTool) for a name not in Names()
//	}
//
// # The effect ledger
//
// demo.ledger is not idempotent on purpose: each run adds one to a counter
// keyed by the call's idempotency key in the KV bucket LedgerBucket, so a
// test that delivers a call twice, crashes a worker mid-call or restarts
// the server can read LedgerCounts and see whether the journal kept the
// effect to once per key. It needs JetStream and is registered apart:
//
//	if err := demotools.RegisterLedger(agent, js, 1); err != nil { ... }
//	counts, err := demotools.LedgerCounts(ctx, js) // idempotency key -> runs
package demotools
