package fabric

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The acknowledgements of the JetStream API, sent as the body of a
// message on the delivered message's reply subject.
var (
	ackBody      = []byte("+ACK")
	nakBody      = []byte("-NAK")
	progressBody = []byte("+WPI")
	termBody     = []byte("+TERM")
)

// pulledMsg is a message that arrived on a Puller's inbox. The jetstream
// package wraps only the messages of its own consumers, so this gives the
// handlers the same jetstream.Msg, acknowledging as that package does:
// once, except for InProgress, which may be repeated until the message is
// acknowledged. Any goroutine may use it (a worker's execution and its
// heartbeat timer do).
type pulledMsg struct {
	nc  *nats.Conn
	msg *nats.Msg

	mu    sync.Mutex
	acked bool // guarded by mu
}

var _ jetstream.Msg = (*pulledMsg)(nil)

// Metadata parses the reply subject, which carries the stream and
// consumer sequences and the delivery count.
func (m *pulledMsg) Metadata() (*jetstream.MsgMetadata, error) {
	md, err := m.msg.Metadata()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", jetstream.ErrNotJSMessage, err)
	}
	return &jetstream.MsgMetadata{
		Sequence:     jetstream.SequencePair{Consumer: md.Sequence.Consumer, Stream: md.Sequence.Stream},
		NumDelivered: md.NumDelivered,
		NumPending:   md.NumPending,
		Timestamp:    md.Timestamp,
		Stream:       md.Stream,
		Consumer:     md.Consumer,
		Domain:       md.Domain,
	}, nil
}

func (m *pulledMsg) Data() []byte         { return m.msg.Data }
func (m *pulledMsg) Headers() nats.Header { return m.msg.Header }
func (m *pulledMsg) Subject() string      { return m.msg.Subject }
func (m *pulledMsg) Reply() string        { return m.msg.Reply }

func (m *pulledMsg) Ack() error  { return m.ack(nil, ackBody, true) }
func (m *pulledMsg) Nak() error  { return m.ack(nil, nakBody, true) }
func (m *pulledMsg) Term() error { return m.ack(nil, termBody, true) }

// InProgress may be sent any number of times before the final
// acknowledgement.
func (m *pulledMsg) InProgress() error { return m.ack(nil, progressBody, false) }

// doubleAckTimeout bounds DoubleAck when its context has no deadline.
const doubleAckTimeout = 10 * time.Second

// DoubleAck acknowledges and waits for the server to confirm it, for at
// most doubleAckTimeout when ctx has no deadline.
func (m *pulledMsg) DoubleAck(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, doubleAckTimeout)
		defer cancel()
	}
	return m.ack(ctx, ackBody, true)
}

func (m *pulledMsg) NakWithDelay(delay time.Duration) error {
	if delay <= 0 {
		return m.Nak()
	}
	return m.ack(nil, fmt.Appendf(nil, `%s {"delay": %d}`, nakBody, delay.Nanoseconds()), true)
}

func (m *pulledMsg) TermWithReason(reason string) error {
	if reason == "" {
		return m.Term()
	}
	return m.ack(nil, fmt.Appendf(nil, "%s %s", termBody, reason), true)
}

// ack sends body on the reply subject, as a request answered by the
// server when ctx is set. final marks the message acknowledged, after
// which every acknowledgement fails with jetstream.ErrMsgAlreadyAckd.
func (m *pulledMsg) ack(ctx context.Context, body []byte, final bool) error {
	if m.msg.Reply == "" {
		return jetstream.ErrMsgNoReply
	}
	m.mu.Lock()
	acked := m.acked
	m.mu.Unlock()
	if acked {
		return jetstream.ErrMsgAlreadyAckd
	}
	var err error
	if ctx != nil {
		_, err = m.nc.RequestWithContext(ctx, m.msg.Reply, body)
	} else {
		err = m.nc.Publish(m.msg.Reply, body)
	}
	if err != nil {
		return err
	}
	if final {
		m.mu.Lock()
		m.acked = true
		m.mu.Unlock()
	}
	return nil
}
