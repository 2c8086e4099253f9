package hostnats_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/workflow"
)

// cutProxy stands between a client and the server and can lose what the
// server says on the connections open at the time, then cut them: a write
// the server stored whose acknowledgement never reaches its writer, as
// when the node the writer is connected to stops.
type cutProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	links []*proxyLink
}

type proxyLink struct {
	client, server net.Conn
	muted          atomic.Bool
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) accept() {
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
		p.wg.Go(func() {
			io.Copy(s, c)
			s.Close()
		})
		p.wg.Go(func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 && !l.muted.Load() {
					if _, werr := c.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			c.Close()
		})
	}
}

// mute drops from now on what the server sends on the open connections.
func (p *cutProxy) mute() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.links {
		l.muted.Store(true)
	}
}

// cut closes the open connections; the ones made after are whole.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.links {
		l.client.Close()
		l.server.Close()
	}
	p.links = nil
}

// A ledger write stored while its acknowledgement was lost is not waited
// for until the write's deadline: its try gives up after a bounded wait,
// the next try finds the ledger already holds it, and the write succeeds
// long before the caller's context ends.
func TestLedgerWriteOutlivesALostAcknowledgement(t *testing.T) {
	const session = "s-h1-lost"
	entries := ledgerEntries(2)
	tests := []struct {
		name   string
		before []workflow.Entry
		write  func(context.Context, *hostnats.LedgerLog) error
		// stored reports the write in the stream.
		stored func(*jetstream.RawStreamMsg) bool
		// want is the entries left, 0 for none: no ledger.
		want int
	}{
		{
			name:   "append",
			write:  func(ctx context.Context, l *hostnats.LedgerLog) error { return l.Append(ctx, session, 0, entries) },
			stored: func(*jetstream.RawStreamMsg) bool { return true },
			want:   len(entries),
		},
		{
			name:   "remove",
			before: entries,
			write:  func(ctx context.Context, l *hostnats.LedgerLog) error { return l.Remove(ctx, session) },
			stored: func(m *jetstream.RawStreamMsg) bool { return m.Header.Get("Splash-Ledger-Removed") != "" },
			want:   0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			p := startCutProxy(t, strings.TrimPrefix(env.srv.ClientURL(), "nats://"))
			nc, err := nats.Connect("nats://"+p.ln.Addr().String(), nats.MaxReconnects(-1), nats.ReconnectWait(10*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc.Close)
			ctx := testCtx(t)
			log, err := hostnats.NewLedgerLog(ctx, nc, env.cfg, testKey)
			if err != nil {
				t.Fatal(err)
			}
			if tt.before != nil {
				if err := log.Append(ctx, session, 0, tt.before); err != nil {
					t.Fatal(err)
				}
			}
			stream, err := env.js.Stream(ctx, fabric.StreamLedger)
			if err != nil {
				t.Fatal(err)
			}

			p.mute()
			done := make(chan error, 1)
			go func() { done <- tt.write(ctx, log) }()
			testwait.Until(t, 0, "the write stored", func() bool {
				m, err := stream.GetLastMsgForSubject(ctx, fabric.LedgerSubject(session))
				return err == nil && tt.stored(m)
			})
			p.cut()

			if err := <-done; err != nil {
				deadline, _ := ctx.Deadline()
				t.Fatalf("write = %v (%v before the caller's deadline), want it to take the write that landed", err, time.Until(deadline).Round(time.Second))
			}
			reader := newLedgerLog(t, env)
			if tt.want == 0 {
				if has, err := reader.Has(ctx, session); err != nil || has {
					t.Fatalf("Has = %v, %v; want the ledger removed", has, err)
				}
				return
			}
			got, err := reader.Load(ctx, session)
			if err != nil || len(got) != tt.want {
				t.Fatalf("Load = %d entries, %v; want %d", len(got), err, tt.want)
			}
		})
	}
}
