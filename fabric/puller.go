package fabric

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pullExpiry is how long the server keeps one pull request waiting; a
// request that expires unfilled says what it still owed (a 408), and the
// agent asks again.
const pullExpiry = 30 * time.Second

// PullConfig is what a Puller needs besides its consumer.
type PullConfig struct {
	// Window is how many messages may be asked for and not yet handled:
	// a worker tool's concurrency, a host's events window. At least 1.
	Window int
	// Handle is called for each message, in order, on the subscription's
	// goroutine. It may block (waiting for a slot, or for a loop to take
	// the message); the pull then waits, and silence is not taken for a
	// lost request meanwhile. It must acknowledge the message or leave it
	// to redeliver.
	Handle func(jetstream.Msg)
	// Restarted, if set, is called each time a silent pull is asked
	// again (two heartbeats without a word while nothing was handled).
	Restarted func()
	// Refused, if set, is told of each refusal the server sent in place
	// of messages (the consumer deleted, no responders, a bad request):
	// the puller asks again only after two silent heartbeats.
	Refused func(error)
	// Log receives the puller's debug and warning lines; nil discards
	// them. Its attributes should name the consumer.
	Log *slog.Logger
}

// A Puller owns the pull requests of one pull consumer, in place of
// nats.go's Consume, whose pull decision could be skipped while its
// previous request was being sent and then not be taken again until two
// heartbeats were missed (see PullHeartbeat). Here the decision and its
// accounting happen together under one lock, before the send, so no
// decision is ever skipped; the send may then wait on the connection as
// long as it likes.
//
// It keeps the window of messages asked for and not yet handled: messages
// on their way or waiting in the inbox, and the one Handle holds. It asks
// again once half the window is free, like Consume, so a message does not
// sit in this client's buffer (its ack wait running) while another client
// of the consumer is idle, and the next message is at hand when Handle
// returns.
//
// Goroutines: the inbox's callback (the client's goroutine for the
// subscription) handles messages and statuses; watch, started by
// StartPuller and ended by Stop, restarts the pull after a reconnect or a
// silence of two heartbeats. Both ask and send; mu orders their
// accounting.
type Puller struct {
	// Immutable after StartPuller.
	nc        *nats.Conn
	cfg       PullConfig // its Log is never nil
	subject   string     // $JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>
	threshold int
	sub       *nats.Subscription
	status    chan nats.Status // the connection's reconnects; read by watch
	closed    chan struct{}    // closed by the client after sub's last callback
	quit      chan struct{}    // closed by Stop; ends watch
	watchDone chan struct{}    // closed when watch returns
	quitOnce  sync.Once
	drainOnce sync.Once

	mu sync.Mutex
	// asked counts messages asked for and not yet handled.
	asked int
	// handling is set while Handle runs; it may block, and meanwhile the
	// heartbeats wait in the inbox, so silence means nothing.
	handling bool
	// heard is when the inbox last gave anything, or handling ended.
	heard time.Time
	// stopped is set by Drain: no more requests.
	stopped bool
}

// StartPuller subscribes to a fresh inbox of nc for cons's messages, asks
// for the first window and starts watching the pull; Stop ends it.
func StartPuller(nc *nats.Conn, cons jetstream.Consumer, cfg PullConfig) (*Puller, error) {
	if cfg.Window < 1 || cfg.Handle == nil {
		return nil, fmt.Errorf("%w: a puller needs a window of at least 1 and a handler (window %d)", ErrInvalidConfig, cfg.Window)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	info := cons.CachedInfo()
	p := &Puller{
		nc:        nc,
		cfg:       cfg,
		subject:   fmt.Sprintf("$JS.API.CONSUMER.MSG.NEXT.%s.%s", info.Stream, info.Name),
		threshold: (cfg.Window + 1) / 2,
		closed:    make(chan struct{}),
		quit:      make(chan struct{}),
		watchDone: make(chan struct{}),
		heard:     time.Now(),
	}
	sub, err := nc.Subscribe(nc.NewInbox(), p.receive)
	if err != nil {
		return nil, err
	}
	sub.SetClosedHandler(func(string) { close(p.closed) })
	p.sub = sub
	p.status = nc.StatusChanged(nats.CONNECTED, nats.RECONNECTING)
	p.mu.Lock()
	n := p.askLocked()
	p.mu.Unlock()
	p.pull(n)
	go p.watch()
	return p, nil
}

// Inbox is the subject the server delivers this puller's messages and
// statuses to.
func (p *Puller) Inbox() string { return p.sub.Subject }

// askLocked takes the pull decision: when at least the threshold of the
// window is free it counts the free part as asked for and returns it, to
// be sent by pull; otherwise 0.
func (p *Puller) askLocked() int {
	if p.stopped {
		return 0
	}
	free := p.cfg.Window - p.asked
	if free < p.threshold {
		return 0
	}
	p.asked += free
	return free
}

// pull sends a request for n messages (none when n is 0). A request that
// cannot be sent is taken back from the count; the watch asks again.
func (p *Puller) pull(n int) {
	if n == 0 {
		return
	}
	req := fmt.Appendf(nil, `{"batch":%d,"expires":%d,"idle_heartbeat":%d}`,
		n, pullExpiry.Nanoseconds(), PullHeartbeat.Nanoseconds())
	if err := p.nc.PublishRequest(p.subject, p.sub.Subject, req); err != nil {
		p.mu.Lock()
		p.asked = max(p.asked-n, 0)
		p.mu.Unlock()
		p.cfg.Log.Debug("pull request not sent", "err", err)
	}
}

// receive is the inbox's callback.
func (p *Puller) receive(m *nats.Msg) {
	if len(m.Data) == 0 && m.Header.Get(statusHeader) != "" {
		p.onStatus(m)
		return
	}
	p.mu.Lock()
	p.handling = true
	p.mu.Unlock()
	p.cfg.Handle(&pulledMsg{nc: p.nc, msg: m})
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
func (p *Puller) onStatus(m *nats.Msg) {
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
		p.cfg.Log.Warn("pull refused", "status", code, "description", desc)
		if p.cfg.Refused != nil {
			p.cfg.Refused(fmt.Errorf("fabric: pull of %s refused: status %s %s", p.subject, code, desc))
		}
		return
	}
	p.mu.Unlock()
	p.pull(n)
}

// watch asks again for the whole window after a reconnect (the server
// forgot the requests of the old connection) and after two heartbeats
// without a word on the inbox while nothing waited for a slot: every
// request is lost, or the server refused one without saying so.
func (p *Puller) watch() {
	defer close(p.watchDone)
	tick := time.NewTicker(PullHeartbeat)
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
func (p *Puller) checkSilence(now time.Time) {
	if p.nc.IsClosed() {
		return
	}
	if queued, _, err := p.sub.Pending(); err == nil && queued > 0 {
		p.mu.Lock()
		p.heard = now
		p.mu.Unlock()
		return
	}
	p.mu.Lock()
	if p.stopped || p.handling || now.Sub(p.heard) < 2*PullHeartbeat {
		p.mu.Unlock()
		return
	}
	n := p.restartLocked()
	p.mu.Unlock()
	if p.cfg.Restarted != nil {
		p.cfg.Restarted()
	}
	p.cfg.Log.Debug("pull silent for two heartbeats; asking again")
	p.pull(n)
}

// restart forgets every request and asks for the free window.
func (p *Puller) restart() {
	p.mu.Lock()
	n := p.restartLocked()
	p.mu.Unlock()
	p.pull(n)
}

func (p *Puller) restartLocked() int {
	p.asked = 0
	p.heard = time.Now()
	return p.askLocked()
}

// Drain stops asking and unsubscribes; messages already in the inbox
// still reach Handle (which may Nak them when its owner is stopping, so
// they redeliver at once instead of after the ack wait).
func (p *Puller) Drain() {
	p.drainOnce.Do(func() {
		p.mu.Lock()
		p.stopped = true
		p.mu.Unlock()
		_ = p.sub.Drain()
	})
}

// Stop drains, ends watch, and waits for the inbox to close (drained or
// its connection gone), at most timeout; it reports whether it closed.
// Handle is not called after Stop returns true.
func (p *Puller) Stop(timeout time.Duration) bool {
	p.Drain()
	p.quitOnce.Do(func() { close(p.quit) })
	p.nc.RemoveStatusListener(p.status)
	<-p.watchDone
	select {
	case <-p.closed:
		return true
	case <-time.After(timeout):
		return false
	}
}
