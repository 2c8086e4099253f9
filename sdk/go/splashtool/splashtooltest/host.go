package splashtooltest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// ErrClosed is what Next returns once the tool's output has ended and every
// frame it wrote has been read.
var ErrClosed = errors.New("splashtooltest: tool output ended")

// Host is the worker's end of one tool session. Send may be called from
// several goroutines; Next is for one reader at a time.
type Host struct {
	w    io.WriteCloser
	done chan struct{} // closed when the read goroutine has returned
	// ready holds a token when the queue grew or reading stopped.
	ready chan struct{}

	sendMu sync.Mutex
	sealer *protocol.SessionAuthenticator // guarded by sendMu

	mu      sync.Mutex
	queue   []protocol.WorkerMessage // guarded by mu
	readErr error                    // guarded by mu: why reading stopped
}

// NewHost starts reading the tool's frames from fromTool on a goroutine,
// which returns when fromTool ends; toTool is where Send writes. A frame
// that does not open stops the session: Next returns the error (wrapping the
// protocol sentinel) after the frames before it, and the rest of fromTool is
// drained unread so the tool never blocks on a write.
func NewHost(sessionID string, key protocol.SessionKey, toTool io.WriteCloser, fromTool io.Reader) (*Host, error) {
	sealer, err := protocol.NewSessionAuthenticator(sessionID, key, protocol.RoleHost)
	if err != nil {
		return nil, err
	}
	opener, err := protocol.NewSessionAuthenticator(sessionID, key, protocol.RoleHost)
	if err != nil {
		return nil, err
	}
	h := &Host{w: toTool, sealer: sealer, done: make(chan struct{}), ready: make(chan struct{}, 1)}
	go h.read(opener, fromTool)
	return h, nil
}

func (h *Host) read(opener *protocol.SessionAuthenticator, r io.Reader) {
	defer close(h.done)
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for err == nil {
		line, rerr := br.ReadBytes('\n')
		if len(line) > 0 {
			var msg protocol.WorkerMessage
			f, perr := protocol.ParseJSONLine(line)
			if perr == nil {
				msg, perr = opener.Open(f)
			}
			if perr != nil {
				err = fmt.Errorf("splashtooltest: tool frame: %w", perr)
				_, _ = io.Copy(io.Discard, br)
				break
			}
			h.mu.Lock()
			h.queue = append(h.queue, msg)
			h.mu.Unlock()
			h.poke()
		}
		switch {
		case rerr == io.EOF:
			err = ErrClosed
		case rerr != nil:
			err = fmt.Errorf("%w: reading: %w", ErrClosed, rerr)
		}
	}
	h.mu.Lock()
	h.readErr = err
	h.mu.Unlock()
	h.poke()
}

func (h *Host) poke() {
	select {
	case h.ready <- struct{}{}:
	default:
	}
}

// Seal seals msg as the host's next frame and returns its line without
// sending it, for tests that tamper with a frame and send it with
// SendLine.
func (h *Host) Seal(msg protocol.WorkerMessage) ([]byte, error) {
	h.sendMu.Lock()
	defer h.sendMu.Unlock()
	f, err := h.sealer.Seal(msg)
	if err != nil {
		return nil, err
	}
	return f.ToJSONLine()
}

// Send seals msg as the host's next frame and writes it.
func (h *Host) Send(msg protocol.WorkerMessage) error {
	line, err := h.Seal(msg)
	if err != nil {
		return err
	}
	return h.SendLine(line)
}

// SendLine writes line as it is.
func (h *Host) SendLine(line []byte) error {
	h.sendMu.Lock()
	defer h.sendMu.Unlock()
	_, err := h.w.Write(line)
	return err
}

// CloseInput closes the tool's input; the tool sees end of file.
func (h *Host) CloseInput() error { return h.w.Close() }

// Next returns the tool's next message. After the last one it returns
// ErrClosed, or the error of a frame that did not open; it gives up with
// the context's cause.
func (h *Host) Next(ctx context.Context) (protocol.WorkerMessage, error) {
	for {
		h.mu.Lock()
		if len(h.queue) > 0 {
			m := h.queue[0]
			h.queue = h.queue[1:]
			h.mu.Unlock()
			return m, nil
		}
		err := h.readErr
		h.mu.Unlock()
		if err != nil {
			return protocol.WorkerMessage{}, err
		}
		select {
		case <-h.ready:
		case <-ctx.Done():
			return protocol.WorkerMessage{}, context.Cause(ctx)
		}
	}
}

// Done is closed once the tool's output has ended and its read goroutine
// has returned.
func (h *Host) Done() <-chan struct{} { return h.done }

// MustSend is Send that fails tb on an error.
func (h *Host) MustSend(tb testing.TB, msg protocol.WorkerMessage) {
	tb.Helper()
	if err := h.Send(msg); err != nil {
		tb.Fatalf("send %s: %v", msg.Kind, err)
	}
}

// MustNext is Next bounded by timeout, failing tb on an error.
func (h *Host) MustNext(tb testing.TB, timeout time.Duration) protocol.WorkerMessage {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	m, err := h.Next(ctx)
	if err != nil {
		tb.Fatalf("next: %v", err)
	}
	return m
}
