package workeragent

import (
	"fmt"
	"sync"

	"github.com/splashfabric/splashfabric/protocol"
)

// ChunkWriter streams progress text of one call to the host. It counts what
// it sent against the invocation's stream limits, so a handler learns at the
// limit (ErrStreamLimitExceeded) instead of sending chunks the host would
// reject. Once a limit is hit every later Write fails too: the host's
// counters span the whole operation, so streaming is over. Safe for
// concurrent use.
type ChunkWriter struct {
	limits *protocol.StreamLimits // immutable
	send   func(c protocol.Chunk, k uint32) error

	mu       sync.Mutex
	frames   uint32 // frames of this attempt sealed so far; guarded by mu
	chunks   int    // chunks of the operation, earlier attempts included; guarded by mu
	bytes    int    // source bytes of the operation; guarded by mu
	released int    // released bytes of earlier attempts plus source bytes of this one; guarded by mu
	exceeded bool   // guarded by mu
	denied   string // why the host said the stream is spent; guarded by mu
	closed   bool   // guarded by mu
}

// newChunkWriter counts from what earlier attempts used: the bounds span
// the whole operation, as the host's do.
func newChunkWriter(limits *protocol.StreamLimits, send func(c protocol.Chunk, k uint32) error) *ChunkWriter {
	w := &ChunkWriter{limits: limits, send: send}
	if limits != nil {
		w.chunks, w.bytes, w.released = limits.UsedChunks, limits.UsedSourceBytes, limits.UsedReleasedBytes
	}
	return w
}

// deny records that the host refused a chunk of this call: every later
// Write fails with ErrStreamLimitExceeded, saying why.
func (w *ChunkWriter) deny(reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.exceeded = true
	w.denied = reason
}

// Write sends text as the next chunk. It returns ErrStreamLimitExceeded when
// the chunk would exceed the number of chunks, the bytes per chunk or the
// total source (or released) bytes of the call's stream policy (a zero bound is not
// checked here; the host still enforces it), ErrStreamNotAllowed when the
// tool has no stream policy, ErrCallFinished after the handler returned, or
// the publish error.
func (w *ChunkWriter) Write(text string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.closed:
		return ErrCallFinished
	case w.limits == nil:
		return ErrStreamNotAllowed
	case w.exceeded && w.denied != "":
		return fmt.Errorf("%w: the host refused a chunk: %s", ErrStreamLimitExceeded, w.denied)
	case w.exceeded:
		return fmt.Errorf("%w: streaming stopped", ErrStreamLimitExceeded)
	}
	l := w.limits
	var why string
	switch {
	case l.MaxChunks > 0 && w.chunks+1 > l.MaxChunks:
		why = fmt.Sprintf("chunk %d of at most %d", w.chunks+1, l.MaxChunks)
	case l.MaxChunkBytes > 0 && len(text) > l.MaxChunkBytes:
		why = fmt.Sprintf("chunk of %d bytes, at most %d", len(text), l.MaxChunkBytes)
	case l.MaxSourceBytes > 0 && w.bytes+len(text) > l.MaxSourceBytes:
		why = fmt.Sprintf("%d source bytes, at most %d", w.bytes+len(text), l.MaxSourceBytes)
	case l.MaxReleasedBytes > 0 && w.released+len(text) > l.MaxReleasedBytes:
		// Redaction happens at the host and this side cannot see its
		// output; counting source bytes against the released bound stops
		// early only if redaction shrinks text, never late.
		why = fmt.Sprintf("%d bytes, at most %d released", w.released+len(text), l.MaxReleasedBytes)
	}
	if why != "" {
		w.exceeded = true
		return fmt.Errorf("%w: %s", ErrStreamLimitExceeded, why)
	}
	w.frames++
	w.chunks++
	w.bytes += len(text)
	w.released += len(text)
	return w.send(protocol.Chunk{Sequence: uint64(w.chunks), Text: text}, w.frames)
}

// Chunks reports how many chunks were sent.
func (w *ChunkWriter) Chunks() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.chunks
}

// reserve takes the next frame number for a frame other than a chunk; ok
// is false once the handler has returned and the terminal frame is due.
func (w *ChunkWriter) reserve() (k uint32, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, false
	}
	w.frames++
	return w.frames, true
}

// close stops further writes and returns the frame counter the terminal
// frame continues from.
func (w *ChunkWriter) close() uint32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return w.frames
}
