// Package fabric is the wire contract of Splash Fabric over NATS
// JetStream, what the host and its workers share: it provisions the
// streams, consumers and buckets, maps tool names, host ids and sessions
// to subjects, and seals and opens every frame through package protocol.
// It knows nothing of scripts: a worker binary links it without the host.
// The host's side of the contract (its transport, ledger, session archive
// and leases) is package hostnats.
//
// # Provisioning
//
// A host calls Provision with its Config before anything else; it creates
// or updates SPLASH_INVOKE (work queue, one subject per tool),
// SPLASH_EVENTS (chunks and terminal events, one EventsSubject per host
// and tool, and below it one AnswerSubject per operation of an Idempotent
// tool, read back by direct get with LookupAnswer), the splash_cancel
// bucket and the splash_sessions bucket. It then creates the pool consumer
// of every tool of its catalog (EnsureToolConsumers): a pool's workers may
// bind to their consumers, never create or change one.
//
//	js, _ := jetstream.New(nc)
//	cfg := fabric.DefaultConfig()
//	if err := fabric.Provision(ctx, js, cfg); err != nil { ... }
//	err := fabric.EnsureToolConsumers(ctx, js, cfg, []string{"text.remote"})
//
// # Pools
//
// A pool is the set of workers serving a group of tools under one NATS
// identity and one key ring. Subjects, cancel record keys, journal buckets
// and inbox prefixes name a pool's tools or the pool itself by a token
// (ToolToken, PoolToken, JournalBucket, InboxPrefix), so a pool's
// permissions can name exactly its own; PoolCodecs gives a host the codec
// of each tool's pool. A NATS server refuses what a pool's permissions
// leave out in a message of its own: PermissionWatch reads it as a
// PermissionError naming user and subject, and ends the requests it
// guards at once.
//
// # Frames
//
// A Codec seals and opens frames under a key ring (protocol.Keys): it seals
// with the ring's current key, names it in HeaderKey, and opens a frame
// with the key it names. It binds each frame to the message inside it:
// the frame's session is the request id and its sequence is derived from
// the attempt (InvokeSeq, CancelSeq, WorkerSeq), so a frame cannot be
// replayed as another request's or another attempt's. A sealed frame is a
// *nats.Msg: the frame's session, role, sequence and tag in headers
// (HeaderSession, HeaderRole, HeaderSeq, HeaderTag), its message as the
// body; the caller sets the subject and adds its own headers. A Codec is
// safe for concurrent use.
//
//	codec, _ := fabric.NewCodec(key)
//	m, _ := codec.SealInvoke(inv)              // host
//	m.Subject = subject
//	inv, err := codec.OpenInvoke(m.Header, m.Data) // worker
//	out, _ := codec.SealWorker(inv.RequestID, inv.Attempt, 1, protocol.ResultMessage(res))
//
// The cancel record the host stores in BucketCancel is the one frame kept
// as a JSON line, since a KV value has no headers: SealCancelRecord and
// OpenCancelRecord.
//
// # Reconciliation
//
// A host asks a tool's pool what became of an operation it holds no
// answer for by request/reply on ReconcileSubject; one worker (queue
// group ReconcileQueue) answers from its journal. Both frames belong to a
// session of their own, the request's fresh id (NewReconcileRequest), at
// ReconcileSeq: Codec.SealReconcile and OpenReconcile on one side,
// SealReconciled and OpenReconciled on the other.
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
