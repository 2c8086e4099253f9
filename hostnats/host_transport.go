package hostnats

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// HostTransport is the hostloop.Transport over NATS JetStream.
//
// Goroutines: a fabric.Puller per events consumer (its inbox callback and
// its watch, stopped in Close) and one ack watcher started here. The
// callbacks and the watcher write Events; Close waits for them before it
// closes the channel.
//
// Chunks and terminal events are read through one durable consumer named
// "host_<host id>" rather than an ordered one: the server keeps its
// position, so events published while the host is disconnected or
// restarting are delivered when a transport with the same host id comes
// back, and an event is acked only after it was handed to Events. Two live
// hosts must therefore never share a host id. Workers publish a call's
// chunks and its result to the same stream subject, so the consumer hands
// them over in publish order and a chunk never trails its result.
type HostTransport struct {
	hostID string
	// pools seals and opens each tool's frames under its pool's ring.
	pools *fabric.PoolCodecs
	nc    *nats.Conn
	js    jetstream.JetStream
	opts  options

	// events is written by the callbacks and the watcher, read by the loop,
	// and closed by Close after every writer stopped.
	events chan hostloop.Event
	// pending carries publishes awaiting their ack from Publish and Cancel
	// to the watcher, in publish order.
	pending chan pendingAck
	// done is closed by Close; every blocking send selects on it.
	done        chan struct{}
	watcherDone chan struct{}

	// mu guards closed and the Add side of active, so no writer starts
	// after Close began waiting.
	mu     sync.Mutex
	closed bool
	active sync.WaitGroup

	pull *fabric.Puller

	window  *replayWindow
	rejects rejectCounter
	// seqs tells Waiting where each live attempt sits in SPLASH_INVOKE.
	seqs *publishedSeqs

	// adopted holds the consumers of other hosts' events this host reads
	// (AdoptEvents); cfg shapes them as it does the host's own.
	adoptMu sync.Mutex
	adopted map[string]*fabric.Puller
	cfg     fabric.Config

	closeOnce sync.Once
}

// pendingAck is one publish awaiting its PubAck. For an invocation, inv is
// reported back if it fails; for a cancel record, broadcast is sent once
// the record is stored (or failed to be).
type pendingAck struct {
	fut       jetstream.PubAckFuture
	inv       protocol.Invoke
	broadcast *nats.Msg
}

var _ hostloop.Transport = (*HostTransport)(nil)

// NewHostTransport starts a transport for hostID on nc. fabric.Provision must have
// run with cfg. key is the key ring (or single key) frames are sealed and
// opened under. ctx bounds only the setup calls. The caller keeps ownership
// of nc and must Close the transport before closing nc.
func NewHostTransport(ctx context.Context, nc *nats.Conn, cfg fabric.Config, hostID string, key protocol.Keys, opts ...Option) (*HostTransport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := fabric.ValidateHostID(hostID); err != nil {
		return nil, err
	}
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	pools, err := fabric.NewPoolCodecs(key, o.poolKeys, o.poolOf)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(o.maxPending),
		jetstream.WithPublishAsyncTimeout(o.publishTimeout))
	if err != nil {
		return nil, fmt.Errorf("hostnats: jetstream: %w", err)
	}
	t := &HostTransport{
		hostID:      hostID,
		pools:       pools,
		nc:          nc,
		js:          js,
		opts:        o,
		events:      make(chan hostloop.Event, o.eventBuffer),
		pending:     make(chan pendingAck, o.maxPending),
		done:        make(chan struct{}),
		watcherDone: make(chan struct{}),
		window:      newReplayWindow(o.replayMemory),
		seqs:        newPublishedSeqs(),
		adopted:     make(map[string]*fabric.Puller),
		cfg:         cfg,
	}
	sctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	cons, err := js.CreateOrUpdateConsumer(sctx, fabric.StreamEvents, t.eventsConsumer(hostConsumerName(hostID), "Splash host "+hostID, hostID))
	if err != nil {
		return nil, fmt.Errorf("hostnats: events consumer of %q: %w", hostID, err)
	}
	t.pull, err = t.pullEvents(cons, hostID)
	if err != nil {
		return nil, fmt.Errorf("hostnats: consume events of %q: %w", hostID, err)
	}
	go t.watch()
	return t, nil
}

// eventsConsumer is the config of a durable that reads events sent to
// eventsHost (fabric.HostEventsSubjects): the host's own, or one it
// adopted sessions from.
func (t *HostTransport) eventsConsumer(durable, description, eventsHost string) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:     durable,
		Description: description,
		// The events subject and the answer subjects of Idempotent calls
		// below it, through one consumer: stream order keeps a call's
		// chunks before its answer. A durable created with the single
		// filter of earlier versions is updated in place.
		FilterSubjects: fabric.HostEventsSubjects(eventsHost),
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        t.cfg.AckWait,
		// Unlimited: a terminal event must reach its host however often
		// the host went away before acking it.
		MaxDeliver:    -1,
		MaxAckPending: t.cfg.MaxAckPending,
	}
}

// eventsWindow is how many events a host asks for ahead of its loop.
const eventsWindow = 500

// pullEvents feeds cons's messages, the events sent to eventsHost, to
// onEvent through a fabric.Puller, which keeps asking however the
// connection is loaded (see fabric.PullHeartbeat).
func (t *HostTransport) pullEvents(cons jetstream.Consumer, eventsHost string) (*fabric.Puller, error) {
	return fabric.StartPuller(t.nc, cons, fabric.PullConfig{
		Window: eventsWindow,
		Handle: t.onEvent,
		Restarted: func() {
			t.reportError(fmt.Errorf("hostnats: the events pull of %q was silent for two heartbeats; asked again", eventsHost))
		},
		Refused: t.reportError,
	})
}

// HostID returns the id the transport was started with.
func (t *HostTransport) HostID() string { return t.hostID }

// Events delivers verified worker frames and publish failures; it is closed
// by Close.
func (t *HostTransport) Events() <-chan hostloop.Event { return t.events }

// Rejected returns how many frames were dropped, by reason (the Reject…
// constants).
func (t *HostTransport) Rejected() map[string]uint64 { return t.rejects.snapshot() }

// Forget drops the replay window of requestID, for an operation the host
// gave up on (a deadline) whose terminal frame may never come.
func (t *HostTransport) Forget(requestID string) {
	t.window.forget(requestID)
	t.seqs.forget(requestID)
}

// Publish seals inv and publishes it to its tool's subject with
// Nats-Msg-Id = fabric.MsgID(inv.IdempotencyKey, inv.Attempt), so a republish of
// the same attempt is stored once, and with ctx's trace context in the W3C
// trace headers (fabric.InjectTrace), for tracing only. It returns once the publish is queued;
// a failure after that arrives on Events as hostloop.EventPublishFailed.
func (t *HostTransport) Publish(ctx context.Context, inv protocol.Invoke) error {
	return t.publish(ctx, t.hostID, inv)
}

func (t *HostTransport) publish(ctx context.Context, host string, inv protocol.Invoke) error {
	if !t.enter() {
		return ErrClosed
	}
	defer t.active.Done()
	subject, err := fabric.InvokeSubject(inv.Tool)
	if err != nil {
		return err
	}
	m, err := t.pools.ForTool(inv.Tool).SealInvoke(inv)
	if err != nil {
		return err
	}
	m.Subject = subject
	addPublishHeader(m.Header, inv.IdempotencyKey, inv.Attempt, host)
	// The attempt's span, when the loop's observer traces (see
	// hostloop.PublishObserver): the worker's spans join its trace.
	fabric.InjectTrace(ctx, m.Header)
	t.seqs.published(inv.RequestID, inv.Tool, inv.Attempt, inv.AttemptLimit)
	fut, err := t.js.PublishMsgAsync(m, jetstream.WithExpectStream(fabric.StreamInvoke))
	if err != nil {
		return fmt.Errorf("hostnats: publish %q: %w", clip.String(inv.RequestID, clip.Echo), tooLarge(err))
	}
	return t.track(ctx, pendingAck{fut: fut, inv: inv})
}

// Cancel stores c as the request's cancel record and, once stored,
// broadcasts it on the tool's cancel subject: a worker that has not pulled
// the invocation yet finds the record at pickup, one that runs it hears the
// broadcast. It returns once the record's write is queued.
func (t *HostTransport) Cancel(ctx context.Context, c protocol.Cancel) error {
	if !t.enter() {
		return ErrClosed
	}
	defer t.active.Done()
	if err := protocol.ValidateToolName(c.Tool); err != nil {
		return err
	}
	codec := t.pools.ForTool(c.Tool)
	data, err := codec.SealCancelRecord(c)
	if err != nil {
		return err
	}
	broadcast, err := codec.SealCancel(c)
	if err != nil {
		return err
	}
	broadcast.Subject = fabric.CancelSubject(c.Tool)
	broadcast.Header.Set(fabric.HeaderHost, t.hostID)
	record := &nats.Msg{Subject: cancelKVPrefix + fabric.CancelKey(t.pools.Pool(c.Tool), c.RequestID), Data: data}
	fut, err := t.js.PublishMsgAsync(record, jetstream.WithExpectStream(streamCancel))
	if err != nil {
		return fmt.Errorf("hostnats: cancel record of %q: %w", clip.String(c.RequestID, clip.Echo), err)
	}
	return t.track(ctx, pendingAck{fut: fut, broadcast: broadcast})
}

// DenyStream tells whichever worker runs d's attempt that the host refused
// one of its chunks, on the tool's control subject (core NATS, where the
// cancel broadcast goes): backpressure, so it streams no more. It is
// advice, not state: a worker that misses it learns at its next refused
// chunk, and the runtime refuses every chunk past the bounds regardless.
func (t *HostTransport) DenyStream(_ context.Context, d protocol.StreamDenied) error {
	if !t.enter() {
		return ErrClosed
	}
	defer t.active.Done()
	if err := protocol.ValidateToolName(d.Tool); err != nil {
		return err
	}
	m, err := t.pools.ForTool(d.Tool).SealStreamDenied(d)
	if err != nil {
		return err
	}
	m.Subject = fabric.CancelSubject(d.Tool)
	m.Header.Set(fabric.HeaderHost, t.hostID)
	return t.nc.PublishMsg(m)
}

func (t *HostTransport) track(ctx context.Context, p pendingAck) error {
	select {
	case t.pending <- p:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.done:
		return ErrClosed
	}
}

// watch resolves pending acks in publish order. JetStream acks in the
// order it stores, so waiting on the oldest first costs no latency in the
// common case, and one goroutine serves any number of publishes.
func (t *HostTransport) watch() {
	defer close(t.watcherDone)
	for {
		var p pendingAck
		select {
		case p = <-t.pending:
		case <-t.done:
			return
		}
		var err error
		select {
		case ack := <-p.fut.Ok():
			if p.broadcast == nil {
				t.seqs.stored(p.inv.RequestID, p.inv.Attempt, ack.Sequence)
			}
		case err = <-p.fut.Err():
		case <-t.done:
			return
		}
		if p.broadcast != nil {
			if err != nil {
				t.reportError(fmt.Errorf("hostnats: cancel record not stored: %w", err))
			}
			// Broadcast even without the record: a running worker can
			// still stop.
			if perr := t.nc.PublishMsg(p.broadcast); perr != nil {
				t.reportError(fmt.Errorf("hostnats: cancel broadcast: %w", perr))
			}
			continue
		}
		if err != nil {
			t.emit(hostloop.Event{Kind: hostloop.EventPublishFailed, Invoke: p.inv, Err: tooLarge(err)})
		}
	}
}

// onEvent handles one message of the events consumer. A frame that fails
// is acked away (it can never verify); a frame accepted but not handed to
// Events because the transport is closing stays unacked, so the next
// transport of this host gets it.
func (t *HostTransport) onEvent(m jetstream.Msg) {
	if !t.enter() {
		return
	}
	defer t.active.Done()
	msg, ok := t.open(m.Headers(), m.Data(), m.Subject())
	if !ok {
		if md, err := m.Metadata(); err == nil && md.NumDelivered > 1 {
			// A redelivery: a frame that failed would have been
			// terminated at its first delivery, so this one passed and
			// waits for its ack (its session's ledger write is
			// pending). The first delivery's ack settles it.
			return
		}
		_ = m.Term()
		return
	}
	worker := m.Headers().Get(fabric.HeaderWorker)
	// Acked when the loop has taken it for good (see hostloop.Event.Ack);
	// until then a redelivery is refused by the replay window, and after
	// a restart it reaches the next process.
	t.emit(hostloop.Event{Kind: hostloop.EventMessage, Message: msg, Worker: worker, Tool: m.Headers().Get(fabric.HeaderTool), Ack: func() { _ = m.Ack() }})
}

// open authenticates a worker frame (a chunk, result or cancel
// disposition; OpenWorker refuses other kinds) under the ring of the pool
// that serves the tool it names, and applies the replay window. The tool
// must be the one whose token the subject carries, which only that
// tool's pool may publish on.
func (t *HostTransport) open(h nats.Header, data []byte, subject string) (protocol.WorkerMessage, bool) {
	tool := h.Get(fabric.HeaderTool)
	_, token, ok := fabric.ParseEventSubject(subject)
	if !ok || protocol.ValidateToolName(tool) != nil || fabric.ToolToken(tool) != token {
		t.reject(RejectWrongSubject, subject, fmt.Errorf("%w: %w: an answer for tool %q on %s", fabric.ErrForged, protocol.ErrInvalidMessage, clip.String(tool, clip.Echo), subject))
		return protocol.WorkerMessage{}, false
	}
	msg, seq, err := t.pools.ForTool(tool).OpenWorker(h, data)
	if err != nil {
		t.reject(classify(err), subject, err)
		return protocol.WorkerMessage{}, false
	}
	reqID, attempt, _ := msg.WorkerBinding()
	terminal := msg.IsTerminal()
	if !t.window.accept(reqID, tool, seq, terminal) {
		t.reject(RejectReplayed, subject, fmt.Errorf("%w: %w: request %q seq %d already seen", fabric.ErrForged, protocol.ErrSequence, clip.String(reqID, clip.Echo), seq))
		return protocol.WorkerMessage{}, false
	}
	t.seqs.heard(reqID, tool, attempt, terminal, retryable(msg))
	return msg, true
}

func (t *HostTransport) reject(reason, subject string, err error) {
	t.rejects.add(reason)
	if t.opts.onReject != nil {
		t.opts.onReject(reason, subject, err)
	}
}

func (t *HostTransport) reportError(err error) {
	if t.opts.onError != nil {
		t.opts.onError(err)
	}
}

// emit hands ev to the loop, blocking while Events is full, and reports
// false if the transport closed first.
func (t *HostTransport) emit(ev hostloop.Event) bool {
	select {
	case t.events <- ev:
		return true
	case <-t.done:
		return false
	}
}

// enter registers a writer unless the transport is closing.
func (t *HostTransport) enter() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.active.Add(1)
	return true
}

// stopTimeout bounds how long stopping an events pull waits for its inbox
// to close, so Close returns even on a broken connection.
const stopTimeout = 5 * time.Second

// Close stops the consumer and the watcher, waits for
// every callback in flight, and closes Events. Publishes still awaiting
// their ack are not reported; their message ids make a republish by the
// next transport safe. Close is idempotent.
func (t *HostTransport) Close() error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		close(t.done)
		t.pull.Stop(stopTimeout)
		t.adoptMu.Lock()
		for _, p := range t.adopted {
			p.Stop(stopTimeout)
		}
		t.adoptMu.Unlock()
		t.active.Wait()
		<-t.watcherDone
		t.js.CleanupPublisher()
		close(t.events)
	})
	return nil
}

// retryable reports a result that asks the host for another attempt.
func retryable(msg protocol.WorkerMessage) bool {
	if msg.Kind != protocol.KindResult || msg.Result == nil {
		return false
	}
	switch msg.Result.Status {
	case protocol.ResultRetryTransient, protocol.ResultRetryRateLimited:
		return true
	}
	return false
}

// tooLarge marks a refusal of a message as larger than the connection or
// the stream takes (hostloop.ErrInvocationTooLarge): publishing it again
// cannot succeed.
func tooLarge(err error) error {
	var api *jetstream.APIError
	if errors.Is(err, nats.ErrMaxPayload) || (errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum) {
		return fmt.Errorf("%w: %w", hostloop.ErrInvocationTooLarge, err)
	}
	return err
}
