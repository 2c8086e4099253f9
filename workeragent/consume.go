package workeragent

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
)

// startTool attaches to the tool's pool consumer, cancel subject and
// reconcile subject. With BindOnly the consumer must exist: hosts and
// operators create and update consumers, never a pool's workers, whose
// NATS identity may only look theirs up and pull from it.
func (a *Agent) startTool(ctx context.Context, t *tool) error {
	cons, err := a.toolConsumer(ctx, t.name)
	if err != nil {
		return err
	}
	sub, err := a.nc.Subscribe(fabric.CancelSubject(t.name), func(m *nats.Msg) { a.onCancel(t, m) })
	if err != nil {
		return fmt.Errorf("workeragent: cancel subscription for %q: %w", t.name, err)
	}
	t.sub = sub
	if err := a.startReconcile(t); err != nil {
		return err
	}
	p, err := fabric.StartPuller(a.nc, cons, fabric.PullConfig{
		Window:    t.spec.concurrency,
		Handle:    func(m jetstream.Msg) { a.onMessage(t, m) },
		Restarted: func() { a.stats.pullRestarts.Add(1) },
		Log:       a.log.With("tool", t.name),
	})
	if err != nil {
		return fmt.Errorf("workeragent: pull inbox for %q: %w", t.name, err)
	}
	t.pull = p
	return nil
}

// onMessage runs on the tool's pull inbox callback (see fabric.Puller). It
// authenticates the message first: a forged or malformed one is
// terminated at once, without waiting for a handler slot, so garbage on
// the subject costs a counter and never queues ahead of real calls. An
// authentic message waits for a slot (so at most the tool's concurrency
// is admitted) and goes to an execution goroutine; once stopping it Naks
// instead, so the message goes straight to another agent.
func (a *Agent) onMessage(t *tool, m jetstream.Msg) {
	a.stats.received.Add(1)
	inv, host, err := a.openInvoke(m)
	if err == nil && inv.Tool != t.name {
		err = fmt.Errorf("%w: invoke for tool %q on the subject of %q", errWrongSubject, inv.Tool, t.name)
	}
	if errors.Is(err, fabric.ErrUnknownKey) {
		// Sealed with a key this worker's ring lacks: a host promoted a
		// key before this worker got the staged ring. Another worker, or
		// this one restarted with the ring, can run it; it is handed
		// back rather than lost.
		a.forged(err, "invocation sealed with a key not in this worker's ring; give the pool the staged ring before promoting it", "tool", t.name)
		_ = m.NakWithDelay(a.cfg.HeartbeatInterval)
		return
	}
	if err != nil {
		// Never run and never redelivered: no retry can make its tag
		// valid.
		a.forged(err, "rejected invocation", "tool", t.name)
		_ = m.Term()
		return
	}
	e := &execution{a: a, t: t, msg: m, inv: inv, host: host}
	e.startSpan(m)
	select {
	case <-a.stopCh:
		e.handBack()
		return
	default:
	}
	select {
	case t.slots <- struct{}{}:
	case <-a.stopCh:
		e.handBack()
		return
	}
	if !a.admit() {
		<-t.slots
		e.handBack()
		return
	}
	a.execute(func() {
		defer a.release()
		defer e.endSpan()
		e.process()
	})
}

// toolConsumer binds to the tool's pool consumer, creating or updating it
// first unless the agent only binds.
func (a *Agent) toolConsumer(ctx context.Context, tool string) (jetstream.Consumer, error) {
	if !a.cfg.BindOnly {
		cons, err := fabric.EnsureToolConsumer(ctx, a.js, a.cfg.Fabric, tool)
		if err != nil {
			return nil, fmt.Errorf("workeragent: consumer for %q: %w", tool, err)
		}
		return cons, nil
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	cons, err := a.js.Consumer(cctx, fabric.StreamInvoke, fabric.ConsumerName(tool))
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("%w: the consumer %q of %q (a host creates it for every tool of its catalog)", ErrNotProvisioned, fabric.ConsumerName(tool), tool)
	}
	if err != nil {
		return nil, fmt.Errorf("workeragent: consumer for %q: %w", tool, err)
	}
	return cons, nil
}
