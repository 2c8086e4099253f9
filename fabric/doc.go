// Package fabric is the NATS JetStream side of Splash Fabric: it provisions
// the streams, consumers and buckets, maps tool names and host ids to
// subjects, seals and opens every frame through package protocol, and
// implements hostloop.Transport.
//
// # Provisioning
//
// Every process that joins the fabric calls Provision with the same Config
// before anything else; it creates or updates SPLASH_INVOKE (work queue,
// one subject per tool), SPLASH_EVENTS (terminal events, one subject per
// host), the splash_cancel bucket and the splash_sessions bucket. A worker then calls EnsureToolConsumer
// for each tool it serves:
//
//	js, _ := jetstream.New(nc)
//	cfg := fabric.DefaultConfig()
//	if err := fabric.Provision(ctx, js, cfg); err != nil { ... }
//	cons, err := fabric.EnsureToolConsumer(ctx, js, cfg, "text.remote")
//
// # Frames
//
// A Codec seals and opens frames and binds each to the message inside it:
// the frame's session is the request id and its sequence is derived from
// the attempt (InvokeSeq, CancelSeq, WorkerSeq), so a frame cannot be
// replayed as another request's or another attempt's. A Codec is safe for
// concurrent use.
//
//	codec, _ := fabric.NewCodec(key)
//	data, _ := codec.SealInvoke(inv)           // host
//	inv, err := codec.OpenInvoke(data)         // worker
//	out, _ := codec.SealWorker(inv.RequestID, inv.Attempt, 1, protocol.ResultMessage(res))
//
// # The host transport
//
// NewHostTransport returns the hostloop.Transport that hostloop.Loop drives. Publish
// and Cancel never wait for the server: publish acknowledgements are
// watched by one goroutine and a failure comes back on Events as
// hostloop.EventPublishFailed. Worker frames (chunks and terminal events alike)
// arrive in publish order on one durable consumer of the host's events
// subject; each is authenticated, checked against a per-request replay
// window, and only then handed to Events. Rejected frames are dropped and
// counted (Rejected, WithRejectHandler). Close stops every goroutine the
// transport started and then closes Events.
//
// # Reconciliation
//
// Reconcile asks a tool's pool what became of an operation the host holds
// no answer for, by request/reply on ReconcileSubject: one worker (queue
// group ReconcileQueue) answers from its journal. Both frames belong to a
// session of their own, the fresh request id, at ReconcileSeq; the answer
// is returned only if it is a worker's and repeats the request's id,
// session, tool and operation key (ErrReconcileReplayed,
// ErrReconcileMismatch, ErrForged otherwise, inside ErrNoReconcileAnswer).
//
//	res, err := tr.Reconcile(ctx, sessionID, "text.remote", operationKey)
//	action, err := hostloop.DecideReconcile(res.Status.State, idempotent, horizonPassed)
//
// # The session archive
//
// NewSessionArchive returns the hostloop.SessionArchive over splash_sessions
// that a host passes as hostloop.LoopConfig.Archive: terminal session records
// written asynchronously (Record never waits for the server) and the
// host's incarnations, so a restarted host answers for the sessions an
// earlier process held. Every record is sealed with a key derived from the
// frame key and verified on read: one that fails (written by a NATS client
// without the key) is refused with hostloop.ErrRecordRejected and reported
// to WithRecordRejectHandler, never answered from. Close it after the
// loop's Stop, which flushes it.
//
// # The published catalog
//
// OpenCatalogStore binds to splash_catalog, where operators publish tool
// definitions (splash tools apply): Apply validates a whole catalog before
// it writes anything, List and Remove read and delete, and Watch hands its
// caller a fresh toolspec.Set on every change. A host keeps a LiveCatalog,
// its own catalog overlaid by the published one, and registers
// LiveCatalog.Current on each new session, so a change reaches the
// sessions that start after it.
//
// docs/topology.md describes every subject, stream, header and sequence.
package fabric
