package idempotency

import (
	"errors"
	"fmt"
)

// Errors returned by every Journal. Bad input is reported before anything is
// read or written, so a rejected call changes nothing.
var (
	// ErrInvalidKey reports an empty idempotency key.
	ErrInvalidKey = errors.New("idempotency: invalid key")
	// ErrInvalidOwner reports an empty owner.
	ErrInvalidOwner = errors.New("idempotency: invalid owner")
	// ErrInvalidLease reports a lease that is not positive.
	ErrInvalidLease = errors.New("idempotency: invalid lease")
	// ErrInvalidResult reports a result with an unknown status or a
	// malformed payload.
	ErrInvalidResult = errors.New("idempotency: invalid result")
	// ErrInvalidConfig reports a journal configuration that cannot work.
	ErrInvalidConfig = errors.New("idempotency: invalid config")
	// ErrResultTooLarge reports a result over the journal's size bound; it
	// is detected before the write, so the lease is still held and the
	// caller can store a smaller (failed) result instead.
	ErrResultTooLarge = errors.New("idempotency: result too large")
	// ErrNotHeld reports a Renew, Finish or Release with a claim that never
	// held the lease (its outcome was RunningElsewhere or Done).
	ErrNotHeld = errors.New("idempotency: claim does not hold the lease")
	// ErrLeaseLost reports that the record changed since the claim was
	// taken: another owner took the lease over, or the entry finished,
	// was released or expired. The caller no longer owns the operation.
	ErrLeaseLost = errors.New("idempotency: lease lost")
	// ErrNotFound reports that the journal holds no record for a key
	// (never begun, or older than the dedupe horizon).
	ErrNotFound = errors.New("idempotency: not found")
	// ErrContended reports that Begin lost the compare-and-set race too many
	// times in a row; the caller should treat it as a transient failure.
	ErrContended = errors.New("idempotency: contended")
	// ErrCorruptRecord reports a stored value that does not decode as a
	// record; it is never overwritten automatically.
	ErrCorruptRecord = errors.New("idempotency: corrupt record")
	// ErrRecordRejected reports a stored value that fails authentication
	// (KVConfig.Key): forged, altered, moved from another key, or written
	// unsealed, as before records were sealed. It is an ErrCorruptRecord
	// too: refused on every read and never overwritten automatically.
	ErrRecordRejected = fmt.Errorf("%w: fails authentication", ErrCorruptRecord)
)
