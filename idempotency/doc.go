// Package idempotency is the replay-safe journal that worker agents consult
// before running an operation, keyed by the operation's idempotency key.
//
// The journal records, per key, who holds the operation (an owner and a
// lease) and, once it ends, its terminal result. It makes no policy
// decisions: the worker agent decides what each outcome means for its
// tool (DESIGN §1).
//
// # Usage
//
// A worker that pulls an invocation calls Begin with the call's
// idempotency key, its own owner id and a lease:
//
//	c, err := j.Begin(ctx, inv.IdempotencyKey, ownerID, lease)
//	switch c.Outcome {
//	case idempotency.Fresh:
//		// run the tool; Renew every lease/3 while it runs
//	case idempotency.TakenOver:
//		// an earlier owner vanished mid-call: run again if the tool is
//		// idempotent, else Finish with StatusIndeterminate
//	case idempotency.RunningElsewhere:
//		// a live owner has it: do not run; let the message be redelivered
//	case idempotency.Done:
//		// replay c.Record.Result instead of running the tool
//	}
//
// A held claim (Fresh, TakenOver, or Resumed: see below) ends in exactly
// one of Finish (a terminal result, replayed to every later Begin) or
// Release (no result: a draining worker gives the operation back, and the
// next Begin is Fresh rather than TakenOver because nothing ran, or what
// ran stopped cleanly).
// Renew, Finish and Release return ErrLeaseLost when the record moved on
// without the caller; the caller must then stop producing effects and
// must not report its result as the operation's.
//
// # A Begin whose answer was lost
//
// A Begin that fails with a transport error (the connection to the node
// that took the write went away, a timeout) may have written the claim
// all the same. Asked again with Begin, the journal would answer
// RunningElsewhere, and once the lease ran out TakenOver: the caller's own
// claim, met as a stranger's, would make it give the operation up as
// indeterminate although nothing ran. The caller asks with Resume
// instead, under the same owner id:
//
//	c, err := j.Begin(ctx, key, ownerID, lease)
//	for err != nil && transient(err) {
//		c, err = j.Resume(ctx, key, ownerID, lease)
//	}
//	// c.Outcome is Resumed if the first Begin's write landed; then
//	// c.EffectUnknown() says whether that claim had taken over.
//
// Resume gives the caller back a running record whose owner is its own,
// expired or not, and is Begin for anything else. It is safe because the
// caller never ran under that claim: it did not know it held it. Owner
// ids must therefore be unique per claimant (the worker agent draws one
// per execution), and an owner that did run under a claim never resumes
// it.
//
// # Operations that may run twice: Store without a claim
//
// A claim protects an operation whose effect must not happen twice. For
// one that may (a worker tool declared idempotent), running twice is
// what its declaration allows, so a claim's round trip before the run
// buys nothing. Such an operation runs at once and ends with one Store:
// create-if-absent of the done record.
//
//	rec, stored, err := j.Store(ctx, inv.IdempotencyKey, ownerID, result)
//	// stored: this run's result is the key's result; answer with it.
//	// !stored: a result was stored earlier (a duplicate or a concurrent
//	// run got there first); answer with rec.Result instead, so every
//	// answer under one key is the same.
//
// What this gives up: nothing stops a concurrent duplicate from running
// too (both answers still carry the first stored result), a crash
// mid-call leaves no record (the redelivery simply runs again), and a
// duplicate that arrives after completion runs before it learns of the
// stored result unless the caller reads it first (the worker agent does
// so for redeliveries and later attempts, which are where duplicates come
// from). Store over a running or released record overwrites it, so a
// claim holder racing an unclaimed run loses its lease and replays the
// stored result; claims and Store may therefore meet on one key, as
// during a rolling change of a tool's declaration.
//
// Only terminal results are stored. A retryable failure is not: the
// worker Releases the claim (or lets the lease lapse) and the host's next
// attempt, which carries the same key, finds the operation Fresh.
//
// # Consistency
//
// Every write is a compare-and-set on the record's revision, so of any
// number of owners racing on one key exactly one wins each transition
// and each loser learns it; at most one Finish per key ever succeeds. A
// claim is not re-entrant: a second Begin by the same owner while its
// lease is live is RunningElsewhere, because a duplicate delivery to the
// same process is still a duplicate; only Resume gives an owner its own
// running record back (see above).
//
// Leases only decide when a silent owner is presumed dead. A lease that
// ran out but that nobody took over still belongs to its owner: Renew
// and Finish succeed, since the unchanged revision proves no one else
// wrote.
//
// # Time and clock skew
//
// Lease expiry is written into the record (LeaseExpiresAt) by the
// owner's clock and compared by a later Begin against the caller's
// clock, both injected (KVConfig.Clock, NewMemory). Workers' clocks are
// assumed synchronised (NTP) to within a bound far smaller than the
// lease. Skew never breaks the compare-and-set guarantees above; it only
// moves the takeover instant: a reader whose clock runs ahead by d takes
// over d early, and the old owner then sees ErrLeaseLost (for an
// idempotent tool the effect may run twice, for others the result is
// indeterminate — the same as a real crash). Choose lease > renew
// interval + worst expected pause + skew; renewing every lease/3
// tolerates one lost renewal.
//
// # JetStream KV layout
//
// NewKV creates or updates the bucket splash_idempotency (BucketName, or
// KVConfig.Bucket: a pool keeps its own, fabric.JournalBucket):
// History 1, file storage, Replicas from KVConfig, TTL the dedupe
// horizon. The record of key K is stored under StorageKey(K), the hex
// SHA-256 of K, because KV keys admit only a restricted alphabet; the
// value is the JSON encoding of Record, which repeats K so a foreign
// value is detected (ErrCorruptRecord). With KVConfig.Key (the pool's key
// ring) the value is sealed: an HMAC-SHA256 tag, under a key derived from
// the ring's current key for the journal alone, over StorageKey(K) and the
// JSON, and the id of the key that sealed it. A
// value that does not verify (written by a NATS client without the key,
// or unsealed, as before sealing) is refused with ErrRecordRejected and
// reported to KVConfig.OnReject. With History 1 a record lives
// TTL after its last write, so a stored result is replayed for TTL after
// Finish and a running record stays as long as it is renewed.
//
// JetStream writes per operation (each a kv.Create or kv.Update with the
// expected revision):
//
//	Begin, new key        1 create
//	Begin, duplicate      0 (a refused create, then reads)
//	Begin, takeover/after release  1 update (after a read)
//	Resume, own running record     1 update (after a refused create and a read)
//	Resume, otherwise     as Begin
//	Renew                 1 update per renewal
//	Finish, Release       1 update
//	Store, new key        1 create
//	Store, result stored  0 (a refused create, then a read)
//	Store, over a claim   1 update (after a refused create and a read)
//
// A claimed operation therefore costs two writes (Begin, Finish) plus one
// per renewal; an unclaimed one costs one (Store), whatever its length.
//
// Conflicts are recognised by jetstream.ErrKeyRevisionMismatch (Update)
// and jetstream.ErrKeyExists (Create), and by the raw wrong-last-sequence
// codes 10071 and 10164: on replicated buckets the server reports CAS
// conflicts as 10164, which ErrKeyExists alone does not match.
//
// # Result bound
//
// Finish refuses a result whose Size (payload text or JSON plus error
// text) exceeds the journal's MaxResultBytes, or whose JSON encoding
// would not fit in one NATS message, with ErrResultTooLarge before any
// write: the claim is still held, and the caller can store a failure
// instead. The agent enforces each call's own output limit; this bound
// protects the bucket.
//
// # Memory journal
//
// NewMemory keeps the same contract in process memory, for unit tests and
// single-process development. Both implementations pass the one
// conformance suite in package journaltest.
package idempotency
