// Package hostnats is the host loop's transport, ledger, session archive
// and leases over NATS JetStream: the host's side of the wire contract
// that package fabric defines. Workers never import it, so a worker
// binary links neither the script engine nor the host.
//
// Every constructor takes the fabric.Config the resources were
// provisioned with (fabric.Provision) and the host's key ring (or a single
// key; protocol.Keys); a setting out of range is fabric.ErrInvalidConfig.
// The transport also takes, with WithPoolKeys, the ring of each worker
// pool that has one: it seals and opens each tool's frames under the ring
// of the pool that serves it.
//
//	tr, _ := hostnats.NewHostTransport(ctx, nc, cfg, hostID, key)
//	archive, _ := hostnats.NewSessionArchive(ctx, nc, cfg, key)
//	ledger, _ := hostnats.NewLedgerLog(ctx, nc, cfg, key)
//	leases, _ := hostnats.NewHostLeases(ctx, nc, cfg, key, 0)
//	l, _ := hostloop.StartLoop(hostloop.LoopConfig{Transport: tr, Archive: archive, ...})
//
// # The host transport
//
// NewHostTransport returns the hostloop.Transport that hostloop.Loop
// drives. Publish and Cancel never wait for the server: publish
// acknowledgements are watched by one goroutine and a failure comes back
// on Events as hostloop.EventPublishFailed. Worker frames (chunks and
// terminal events alike) arrive in publish order on one durable consumer
// of the host's events and answer subjects (fabric.HostEventsSubjects);
// each must name the tool whose token its subject carries, is
// authenticated under that tool's pool's ring, checked against a replay
// window per request and pool, and only then handed to Events with the
// tool (hostloop.Event.Tool), which the loop holds to the operation's. Rejected
// frames are dropped and counted (Rejected, WithRejectHandler). Close
// stops every goroutine the transport started and then closes Events.
//
// # Reconciliation
//
// Reconcile asks a tool's pool what became of an operation the host holds
// no answer for, by request/reply on fabric.ReconcileSubject: one worker
// (queue group fabric.ReconcileQueue) answers from its journal. The
// answer is returned only if it is a worker's and repeats the request's
// id, session, tool and operation key (ErrReconcileReplayed,
// ErrReconcileMismatch, fabric.ErrForged otherwise, inside
// ErrNoReconcileAnswer).
//
//	res, err := tr.Reconcile(ctx, sessionID, "text.remote", operationKey)
//	action, err := workflow.DecideReconcile(res.Status.State, idempotent, horizonPassed)
//
// # The session archive
//
// NewSessionArchive returns the hostloop.SessionArchive over
// splash_sessions that a host passes as hostloop.LoopConfig.Archive:
// terminal session records written asynchronously (Record never waits
// for the server) and the host's incarnations, so a restarted host
// answers for the sessions an earlier process held. Every record is
// sealed with a key derived from the host's ring and verified on read: one
// that fails (written by a NATS client without the key) is refused with
// hostloop.ErrRecordRejected and reported to WithRecordRejectHandler,
// never answered from. Close it after the loop's Stop, which flushes it.
//
// # The ledger and the leases
//
// NewLedgerLog returns the workflow.Log of durable sessions on
// SPLASH_LEDGER, each append fenced on the ledger's last message so a
// host that lost a session cannot add to it. NewHostLeases returns the
// hostloop.Leases on splash_sessions by which hosts take over the
// sessions of one that died.
//
// docs/topology.md describes every subject, stream, header and sequence.
package hostnats
