package workeragent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
)

// startTool attaches to the tool's pool consumer, cancel subject and
// reconcile subject.
func (a *Agent) startTool(ctx context.Context, t *tool) error {
	cons, err := fabric.EnsureToolConsumer(ctx, a.js, a.cfg.Fabric, t.name)
	if err != nil {
		return fmt.Errorf("workeragent: consumer for %q: %w", t.name, err)
	}
	sub, err := a.nc.Subscribe(fabric.CancelSubject(t.name), func(m *nats.Msg) { a.onCancel(t, m) })
	if err != nil {
		return fmt.Errorf("workeragent: cancel subscription for %q: %w", t.name, err)
	}
	t.sub = sub
	if err := a.startReconcile(t); err != nil {
		return err
	}
	// The buffer holds as many messages as the tool can run, so a
	// message does not sit in this agent's buffer (its ack wait running)
	// while another agent of the pool is idle.
	it, err := cons.Messages(
		jetstream.PullMaxMessages(t.spec.concurrency),
		jetstream.PullHeartbeat(fabric.PullHeartbeat))
	if err != nil {
		return fmt.Errorf("workeragent: consume %q: %w", t.name, err)
	}
	t.it = it
	t.pulled = make(chan struct{})
	a.goTracked(func() {
		defer close(t.pulled)
		a.pull(t)
	})
	return nil
}

// repullWait bounds how long pull waits for a message after the last
// one before it asks the client again whether to pull. nats.go decides
// to pull more only when it hands out a message or is asked for one, and
// skips that decision while its previous pull request is still being
// sent; if the messages of that request are all handed out before the
// send is marked done (a loaded process whose connection lock hands off
// to hundreds of waiting publishers), it holds no pull request at the
// server and nothing would ask again until two heartbeats are missed.
// Asking again within repullWait makes that a gap of milliseconds.
const repullWait = 20 * time.Millisecond

// pull hands the tool's messages to onMessage one at a time, so the
// iterator's buffer (at most the tool's concurrency) is the only place a
// message waits for a slot. It returns once the iterator is stopped or
// drained and its buffer is empty.
func (a *Agent) pull(t *tool) {
	// While messages flow, each wait is short so a missed pull decision
	// is taken again at once; after two heartbeats of quiet, the wait is
	// open-ended and the iterator's own heartbeat check finds a pull
	// request the server lost.
	last := time.Now()
	for {
		var (
			m   jetstream.Msg
			err error
		)
		if time.Since(last) < 2*fabric.PullHeartbeat {
			m, err = t.it.Next(jetstream.NextMaxWait(repullWait))
		} else {
			m, err = t.it.Next()
		}
		switch {
		case err == nil:
			last = time.Now()
			a.onMessage(t, m)
		case errors.Is(err, jetstream.ErrMsgIteratorClosed):
			return
		case errors.Is(err, nats.ErrTimeout):
		default:
			if errors.Is(err, jetstream.ErrNoHeartbeat) {
				a.stats.missedHeartbeats.Add(1)
			}
			a.log.Debug("consume", "tool", t.name, "err", err)
		}
	}
}

// onMessage runs on the tool's pull goroutine. It authenticates the
// message first: a forged or malformed one is terminated at once, without
// waiting for a handler slot, so garbage on the subject costs a counter
// and never queues ahead of real calls. An authentic message waits for a
// slot (so at most the tool's concurrency is admitted) and goes to an
// execution goroutine; once stopping it Naks instead, so the message goes
// straight to another agent.
func (a *Agent) onMessage(t *tool, m jetstream.Msg) {
	a.stats.received.Add(1)
	inv, host, err := a.openInvoke(m)
	if err == nil && inv.Tool != t.name {
		err = fmt.Errorf("%w: invoke for tool %q on the subject of %q", errWrongSubject, inv.Tool, t.name)
	}
	if err != nil {
		// Never run and never redelivered: no retry can make its tag
		// valid.
		a.forged(err, "rejected invocation", "tool", t.name)
		_ = m.Term()
		return
	}
	select {
	case <-a.stopCh:
		_ = m.Nak()
		return
	default:
	}
	select {
	case t.slots <- struct{}{}:
	case <-a.stopCh:
		_ = m.Nak()
		return
	}
	if !a.admit() {
		<-t.slots
		_ = m.Nak()
		return
	}
	a.goTracked(func() {
		defer a.release()
		e := &execution{a: a, t: t, msg: m, inv: inv, host: host}
		e.process()
	})
}
