package hostnats

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/protocol"
)

// adoptConsumerName is the durable through which adopter reads hostID's
// events while it drives sessions hostID's processes accepted.
func adoptConsumerName(hostID, adopter string) string { return "adopt_" + hostID + "_by_" + adopter }

// AdoptEvents starts reading the events sent to hostID, another host
// whose sessions this host now drives, into Events. Its own durable
// starts where hostID's consumer had acked up to, so an answer its last
// process took but never stored is read again; one it had stored is
// recognised by the loop as settled. A second call for the same host is
// a no-op.
func (t *HostTransport) AdoptEvents(ctx context.Context, hostID string) error {
	if err := fabric.ValidateHostID(hostID); err != nil {
		return err
	}
	if !t.enter() {
		return ErrClosed
	}
	defer t.active.Done()
	t.adoptMu.Lock()
	defer t.adoptMu.Unlock()
	if _, ok := t.adopted[hostID]; ok {
		return nil
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	cfg := t.eventsConsumer(adoptConsumerName(hostID, t.hostID), "Splash host "+t.hostID+" adopting the sessions of "+hostID, hostID)
	if own, err := t.js.Consumer(ctx, fabric.StreamEvents, hostConsumerName(hostID)); err == nil {
		if info, err := own.Info(ctx); err == nil && info.AckFloor.Stream > 0 {
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, info.AckFloor.Stream+1
		}
	}
	cons, err := t.js.CreateOrUpdateConsumer(ctx, fabric.StreamEvents, cfg)
	if err != nil && cfg.DeliverPolicy == jetstream.DeliverByStartSequencePolicy {
		// An existing durable of ours keeps its own position, and gets
		// the filters of today's fabric in place.
		cons, err = t.refilter(ctx, cfg)
	}
	if err != nil {
		return fmt.Errorf("hostnats: adopting the events of %q: %w", hostID, err)
	}
	p, err := t.pullEvents(cons, hostID)
	if err != nil {
		return fmt.Errorf("hostnats: consume the events of %q: %w", hostID, err)
	}
	t.adopted[hostID] = p
	return nil
}

// ReleaseEvents stops reading hostID's events and deletes this host's
// durable for them: the sessions it adopted from hostID have ended.
func (t *HostTransport) ReleaseEvents(ctx context.Context, hostID string) error {
	t.adoptMu.Lock()
	p, ok := t.adopted[hostID]
	delete(t.adopted, hostID)
	t.adoptMu.Unlock()
	if !ok {
		return nil
	}
	p.Stop(stopTimeout)
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := t.js.DeleteConsumer(ctx, fabric.StreamEvents, adoptConsumerName(hostID, t.hostID)); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("hostnats: releasing the events of %q: %w", hostID, err)
	}
	return nil
}

// PublishFor publishes inv, an operation of a session hostID's process
// accepted, so that its worker answers to hostID's events, which this
// host reads since it adopted them (and which any later driver of the
// session reads too).
func (t *HostTransport) PublishFor(ctx context.Context, hostID string, inv protocol.Invoke) error {
	if err := fabric.ValidateHostID(hostID); err != nil {
		return err
	}
	return t.publish(ctx, hostID, inv)
}

// addPublishHeader adds an invocation's headers to its frame's: its
// message id, and the host whose events take its answers.
func addPublishHeader(h nats.Header, key string, attempt uint32, host string) {
	h.Set(fabric.HeaderMsgID, fabric.MsgID(key, attempt))
	h.Set(fabric.HeaderHost, host)
}

// refilter opens the existing durable named in cfg and, if it was created
// with other filters (the single events subject of earlier versions),
// updates them to cfg's, keeping the rest of its config (its start
// position cannot change).
func (t *HostTransport) refilter(ctx context.Context, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	cons, err := t.js.Consumer(ctx, fabric.StreamEvents, cfg.Durable)
	if err != nil {
		return nil, err
	}
	have := cons.CachedInfo().Config
	if slices.Equal(have.FilterSubjects, cfg.FilterSubjects) {
		return cons, nil
	}
	have.FilterSubject, have.FilterSubjects = "", cfg.FilterSubjects
	return t.js.UpdateConsumer(ctx, fabric.StreamEvents, have)
}
