package workeragent

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
)

// pullExpiry is how long the server keeps one pull request waiting; a
// request that expires unfilled says what it still owed (a 408), and the
// agent asks again.
const pullExpiry = 30 * time.Second

// A puller owns the pull requests of one tool's pool consumer, in place of
// nats.go's Consume, whose pull decision could be skipped while its
// previous request was being sent and then not be taken again until two
// heartbeats were missed (see fabric.PullHeartbeat). Here the decision and
// its accounting happen together under one lock, before the send, so no
// decision is ever skipped; the send may then wait on the connection as
// long as it likes.
//
// It keeps the tool's window (its concurrency) of messages asked for and
// not yet handled: messages on their way or waiting in the inbox, and the
// one onMessage holds, possibly waiting for a slot. It asks again once
// half the window is free, like Consume, so a message does not sit in
// this agent's buffer (its ack wait running) while another agent of the
// pool is idle, and the next message is at hand when a slot frees.
//
// Goroutines: the inbox's callback (the client's goroutine for the
// subscription) handles messages and statuses; watch, started through
// goTracked, restarts the pull after a reconnect or a silence of two
// heartbeats. Both ask and send; mu orders their accounting.
type puller struct {
	// Immutable after newPuller.
	a         *Agent
	t         *tool
	subject   string // $JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>
	window    int
	threshold int
	heartbeat time.Duration
	sub       *nats.Subscription
	status    chan nats.Status // the connection's reconnects; read by watch
	closed    chan struct{}    // closed by the client after sub's last callback
	quit      chan struct{}    // closed by stop; ends watch
	quitOnce  sync.Once
	drainOnce sync.Once

	mu sync.Mutex
	// asked counts messages asked for and not yet handled.
	asked int
	// handling is set while onMessage runs; it may wait for a slot, and
	// meanwhile the heartbeats wait in the inbox, so silence means nothing.
	handling bool
	// heard is when the inbox last gave anything, or handling ended.
	heard time.Time
	// stopped is set by drain: no more requests.
	stopped bool
}

// newPuller subscribes to a fresh inbox for cons's messages and asks for
// the first window; watch must then be started.
func newPuller(a *Agent, t *tool, cons jetstream.Consumer) (*puller, error) {
	info := cons.CachedInfo()
	p := &puller{
		a:         a,
		t:         t,
		subject:   fmt.Sprintf("$JS.API.CONSUMER.MSG.NEXT.%s.%s", info.Stream, info.Name),
		window:    t.spec.concurrency,
		threshold: (t.spec.concurrency + 1) / 2,
		heartbeat: fabric.PullHeartbeat,
		closed:    make(chan struct{}),
		quit:      make(chan struct{}),
		heard:     time.Now(),
	}
	sub, err := a.nc.Subscribe(a.nc.NewInbox(), p.receive)
	if err != nil {
		return nil, err
	}
	sub.SetClosedHandler(func(string) { close(p.closed) })
	p.sub = sub
	p.status = a.nc.StatusChanged(nats.CONNECTED, nats.RECONNECTING)
	p.mu.Lock()
	n := p.askLocked()
	p.mu.Unlock()
	p.pull(n)
	return p, nil
}

// askLocked takes the pull decision: when at least the threshold of the
// window is free it counts the free part as asked for and returns it, to
// be sent by pull; otherwise 0.
func (p *puller) askLocked() int {
	if p.stopped {
		return 0
	}
	free := p.window - p.asked
	if free < p.threshold {
		return 0
	}
	p.asked += free
	return free
}

// pull sends a request for n messages (none when n is 0). A request that
// cannot be sent is taken back from the count; the watch asks again.
func (p *puller) pull(n int) {
	if n == 0 {
		return
	}
	req := fmt.Appendf(nil, `{"batch":%d,"expires":%d,"idle_heartbeat":%d}`,
		n, pullExpiry.Nanoseconds(), p.heartbeat.Nanoseconds())
	if err := p.a.nc.PublishRequest(p.subject, p.sub.Subject, req); err != nil {
		p.mu.Lock()
		p.asked = max(p.asked-n, 0)
		p.mu.Unlock()
		p.a.log.Debug("pull request not sent", "tool", p.t.name, "err", err)
	}
}

// receive is the inbox's callback.
func (p *puller) receive(m *nats.Msg) {
	if len(m.Data) == 0 && m.Header.Get(statusHeader) != "" {
		p.onStatus(m)
		return
	}
	p.mu.Lock()
	p.handling = true
	p.mu.Unlock()
	p.a.onMessage(p.t, &pulledMsg{nc: p.a.nc, msg: m})
	p.mu.Lock()
	p.handling = false
	p.heard = time.Now()
	p.asked = max(p.asked-1, 0)
	n := p.askLocked()
	p.mu.Unlock()
	p.pull(n)
}

// The status headers of the JetStream API's pull responses.
const (
	statusHeader      = "Status"
	descriptionHeader = "Description"
	pendingHeader     = "Nats-Pending-Messages"
)

// onStatus reads a status the server sent on the inbox in place of a
// message: an idle heartbeat, or the end of one or every request.
func (p *puller) onStatus(m *nats.Msg) {
	code, desc := m.Header.Get(statusHeader), m.Header.Get(descriptionHeader)
	p.mu.Lock()
	p.heard = time.Now()
	n := 0
	pending := m.Header.Get(pendingHeader)
	switch {
	case code == "100":
		// An idle heartbeat: a request of ours is waiting.
	case pending != "":
		// One request ended (408 expired, 409 batch completed or a
		// message too large) owing this many messages, which will not
		// come.
		left, err := strconv.Atoi(pending)
		if err != nil {
			left = p.asked
		}
		p.asked = max(p.asked-left, 0)
		n = p.askLocked()
	case code == "409" && strings.Contains(strings.ToLower(desc), "leadership change"):
		// The consumer's new leader does not know our requests.
		p.asked = 0
		n = p.askLocked()
	default:
		// A request refused, or every request released, for a reason no
		// immediate retry changes (the consumer deleted, no responders, a
		// server shutting down): count nothing as asked for, and let the
		// next message or the watch ask again rather than loop with the
		// refusal.
		p.asked = 0
		p.mu.Unlock()
		p.a.log.Warn("pull refused", "tool", p.t.name, "status", code, "description", desc)
		return
	}
	p.mu.Unlock()
	p.pull(n)
}

// watch asks again for the whole window after a reconnect (the server
// forgot the requests of the old connection) and after two heartbeats
// without a word on the inbox while nothing waited for a slot: every
// request is lost, or the server refused one without saying so.
func (p *puller) watch() {
	tick := time.NewTicker(p.heartbeat)
	defer tick.Stop()
	connected := true
	for {
		select {
		case <-p.quit:
			return
		case s, ok := <-p.status:
			if !ok {
				return
			}
			switch s {
			case nats.RECONNECTING:
				connected = false
			case nats.CONNECTED:
				if !connected {
					connected = true
					p.restart()
				}
			}
		case now := <-tick.C:
			if connected {
				p.checkSilence(now)
			}
		}
	}
}

// checkSilence restarts the pull after two heartbeats of silence. A
// callback that is merely behind (messages wait in the inbox) is not
// silence: on a loaded process the client's goroutine may not have run.
func (p *puller) checkSilence(now time.Time) {
	if p.a.nc.IsClosed() {
		return
	}
	if queued, _, err := p.sub.Pending(); err == nil && queued > 0 {
		p.mu.Lock()
		p.heard = now
		p.mu.Unlock()
		return
	}
	p.mu.Lock()
	if p.stopped || p.handling || now.Sub(p.heard) < 2*p.heartbeat {
		p.mu.Unlock()
		return
	}
	n := p.restartLocked()
	p.mu.Unlock()
	p.a.stats.pullRestarts.Add(1)
	p.a.log.Debug("pull silent for two heartbeats; asking again", "tool", p.t.name)
	p.pull(n)
}

// restart forgets every request and asks for the free window.
func (p *puller) restart() {
	p.mu.Lock()
	n := p.restartLocked()
	p.mu.Unlock()
	p.pull(n)
}

func (p *puller) restartLocked() int {
	p.asked = 0
	p.heard = time.Now()
	return p.askLocked()
}

// drain stops asking and unsubscribes; messages already in the inbox
// still reach onMessage, which Naks them once the agent is stopping, so
// they redeliver at once instead of after the ack wait.
func (p *puller) drain() {
	p.drainOnce.Do(func() {
		p.mu.Lock()
		p.stopped = true
		p.mu.Unlock()
		_ = p.sub.Drain()
	})
}

// stop ends watch and waits for the inbox to close (drained or its
// connection gone), at most opTimeout; it reports whether it closed.
func (p *puller) stop() bool {
	p.drain()
	p.quitOnce.Do(func() { close(p.quit) })
	p.a.nc.RemoveStatusListener(p.status)
	select {
	case <-p.closed:
		return true
	case <-time.After(opTimeout):
		return false
	}
}
