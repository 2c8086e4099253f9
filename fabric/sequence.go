package fabric

import "fmt"

// The sequence scheme gives every frame of a request a number that grows
// in the order its sender produced it, without any state shared between
// senders: the host numbers by attempt, a worker by attempt and a counter
// of its own. A receiver can then refuse a frame that is not newer than the
// last one it accepted, and refuse a frame whose number does not match the
// attempt the message claims.

// InvokeSeq is the sequence of the host's invocation of attempt: 2n-1.
func InvokeSeq(attempt uint32) uint64 { return uint64(attempt)*2 - 1 }

// CancelSeq is the sequence of the host's cancel of attempt: 2n, so it
// follows the invocation it cancels.
func CancelSeq(attempt uint32) uint64 { return uint64(attempt) * 2 }

// StreamDeniedSeq is the sequence of the host's stream denial of attempt:
// a space of its own (bit 62 set) above every invoke and cancel, so it
// never takes their numbers. Workers keep no replay window: a replayed
// denial only repeats that the stream is spent.
func StreamDeniedSeq(attempt uint32) uint64 { return 1<<62 | uint64(attempt) }

// WorkerSeq is the sequence of a worker's k-th frame (k from 1) of attempt:
// attempt<<32 | k, so every frame of a later attempt is newer than every
// frame of an earlier one.
func WorkerSeq(attempt, k uint32) uint64 { return uint64(attempt)<<32 | uint64(k) }

// SplitWorkerSeq is the inverse of WorkerSeq.
func SplitWorkerSeq(seq uint64) (attempt, k uint32) { return uint32(seq >> 32), uint32(seq) }

func checkAttempt(attempt uint32) error {
	if attempt == 0 {
		return fmt.Errorf("%w: attempts count from 1", ErrInvalidAttempt)
	}
	return nil
}

func checkWorkerSeq(attempt, k uint32) error {
	if err := checkAttempt(attempt); err != nil {
		return err
	}
	if k == 0 {
		return fmt.Errorf("%w: worker frames count from 1", ErrInvalidAttempt)
	}
	return nil
}

// ReconcileSeq is the sequence of both frames of a reconciliation, the
// host's request and the worker's answer: bit 63 alone. It is above every
// number a host gives an operation's frames (invokes and cancels stay
// below 2^34, stream denials below 2^63), and its low 32 bits are zero, so
// it is no WorkerSeq either (worker frames count from 1). Each exchange
// has a session of its own, so one number per direction is all it needs.
const ReconcileSeq uint64 = 1 << 63
