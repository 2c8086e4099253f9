package natstest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/internal/testwait"
)

// CutProxy stands between clients and a server and can lose what the
// server says on the connections open at the time, then cut them: a write
// the server stored whose acknowledgement never reaches its writer, as
// when the node the writer is connected to stops. Connections made after
// a cut are whole again, so a client that reconnects goes on.
type CutProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	links []*proxyLink
}

type proxyLink struct {
	client, server net.Conn
	muted          atomic.Bool // what the server sends is dropped
	deaf           atomic.Bool // what the client sends is dropped
}

// StartCutProxy listens on loopback in front of s; its goroutines and
// connections end with the test.
func (s *Server) StartCutProxy(t testing.TB) *CutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &CutProxy{ln: ln, target: s.Addr().String()}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// URL is the client URL of the server through the proxy.
func (p *CutProxy) URL() string { return "nats://" + p.ln.Addr().String() }

// Connect connects through the proxy, reconnecting at once after a cut;
// the connection closes with the test. opts come after the proxy's own.
func (p *CutProxy) Connect(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	opts = append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(10 * time.Millisecond)}, opts...)
	nc, err := nats.Connect(p.URL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func (p *CutProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		l := &proxyLink{client: c, server: s}
		p.mu.Lock()
		p.links = append(p.links, l)
		p.mu.Unlock()
		p.wg.Go(func() { relay(s, c, &l.deaf) })
		p.wg.Go(func() { relay(c, s, &l.muted) })
	}
}

// relay copies what from says to to, dropping it while drop is set, and
// closes to once from ends.
func relay(to, from net.Conn, drop *atomic.Bool) {
	defer to.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 && !drop.Load() {
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Partition drops from now on what either side sends on the open
// connections, which stay open: a network that stopped carrying
// anything, which neither side is told of.
func (p *CutProxy) Partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.links {
		l.muted.Store(true)
		l.deaf.Store(true)
	}
}

// Mute drops from now on what the server sends on the open connections.
func (p *CutProxy) Mute() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.links {
		l.muted.Store(true)
	}
}

// LoseNextWrite loses the answer of the next write that moves revision on
// (a renewal, say): it mutes the open connections, waits until revision
// passes what it reads now, and cuts them. It returns the revision that
// write stored.
func (p *CutProxy) LoseNextWrite(t testing.TB, revision func() uint64) uint64 {
	t.Helper()
	before := revision()
	p.Mute()
	testwait.Until(t, 0, "a write stored unacknowledged", func() bool { return revision() > before })
	p.Cut()
	return revision()
}

// Cut closes the open connections.
func (p *CutProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.links {
		l.client.Close()
		l.server.Close()
	}
	p.links = nil
}
