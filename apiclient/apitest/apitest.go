// Package apitest serves the host API over a real host loop whose workers
// live in memory, for tests of API clients: no NATS, no processes.
//
//	srv := apitest.Start(t)
//	c, _ := apiclient.New(srv.URL, srv.Token)
//	s, _ := c.Submit(ctx, apiclient.SubmitRequest{Source: `await tool.start("demo.echo", "hi")`})
//
// The host registers every demo tool (demotools.Catalog). The in-memory
// pool answers them the way the real handlers do, but instantly and
// deterministically: demo.echo and demo.upper answer their input,
// demo.stream sends N chunks "chunk i/N" (the middle one carrying
// demotools.Secret, which the host redacts), demo.flaky fails transiently
// on its first N attempts, and demo.sleep waits for the duration in its
// input ("forever" waits until cancelled) and acknowledges a cancel.
package apitest

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/httpapi/apitoken"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

// Token is the bearer token a Server accepts.
const Token = "apitest-token"

// WorkerID is the worker name the in-memory pool answers as.
const WorkerID = "mem-worker-1"

// Server is a running API over a real loop.
type Server struct {
	// URL is the API's base URL.
	URL string
	// Token is the bearer token it accepts.
	Token string
	// HTTP is the underlying test server.
	HTTP *httptest.Server

	close func()
}

// Option changes the API a Server serves.
type Option func(*httpapi.Config)

// WithTokens serves the API to tokens (with their scopes and tools)
// instead of Token alone.
func WithTokens(tokens apitoken.Verifier) Option {
	return func(c *httpapi.Config) { c.Tokens = tokens }
}

// Start serves the API until the test ends; t.Cleanup closes it.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// New serves the API until Close, for callers without a testing.TB
// (examples).
func New(opts ...Option) (*Server, error) {
	w := startPool()
	events := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{})
	index := httpapi.NewSessionIndex(httpapi.IndexConfig{})
	loop, err := hostloop.StartLoop(hostloop.LoopConfig{
		Transport: w,
		HostID:    "h1",
		Catalog:   demotools.Catalog,
		Observer:  httpapi.Tee(events, index),
		// Retries of demo.flaky come quickly, so tests stay fast.
		RetryInitial: time.Millisecond,
		RetryMax:     5 * time.Millisecond,
	})
	if err != nil {
		w.close()
		return nil, fmt.Errorf("apitest: start loop: %w", err)
	}
	cfg := httpapi.Config{Token: Token, Events: events, Index: index, Tools: memTools{}}
	for _, o := range opts {
		o(&cfg)
	}
	srv := httptest.NewServer(httpapi.New(loop, cfg))
	var once sync.Once
	return &Server{URL: srv.URL, Token: Token, HTTP: srv, close: func() {
		once.Do(func() {
			events.Close() // ends open streams, so srv.Close does not wait on them
			srv.Close()
			loop.Stop()
			w.close()
		})
	}}, nil
}

// Close stops the server, the loop and the pool. It is safe to call more
// than once.
func (s *Server) Close() { s.close() }

// pool answers the invocations of the loop's in-memory transport itself,
// on one goroutine.
type pool struct {
	*hostloop.MemTransport
	cancels chan protocol.Cancel
	wake    chan string // request id of a sleep whose timer fired
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

func startPool() *pool {
	p := &pool{
		MemTransport: hostloop.NewMemTransport(1024),
		cancels:      make(chan protocol.Cancel, 1024),
		wake:         make(chan string),
		stop:         make(chan struct{}),
		done:         make(chan struct{}),
	}
	p.OnCancel = func(c protocol.Cancel) { p.cancels <- c }
	go p.run()
	return p
}

func (p *pool) close() {
	p.once.Do(func() { close(p.stop) })
	<-p.done
}

type sleeper struct {
	inv   protocol.Invoke
	timer *time.Timer // nil: until cancelled
}

func (p *pool) run() {
	defer close(p.done)
	sleeping := make(map[string]sleeper)
	defer func() {
		for _, s := range sleeping {
			if s.timer != nil {
				s.timer.Stop()
			}
		}
	}()
	for {
		select {
		case <-p.stop:
			return
		case inv := <-p.Invocations():
			p.invoke(inv, sleeping)
		case id := <-p.wake:
			if s, ok := sleeping[id]; ok {
				delete(sleeping, id)
				p.result(s.inv, "slept "+s.inv.Input.Text)
			}
		case c := <-p.cancels:
			if s, ok := sleeping[c.RequestID]; ok {
				delete(sleeping, c.RequestID)
				if s.timer != nil {
					s.timer.Stop()
				}
				p.send(protocol.CancelReplyMessage(protocol.CancelReply{RequestID: c.RequestID, Attempt: s.inv.Attempt, Disposition: protocol.CancelAcknowledged}))
			} else {
				p.send(protocol.CancelReplyMessage(protocol.CancelReply{RequestID: c.RequestID, Attempt: c.Attempt, Disposition: protocol.CancelTooLate}))
			}
		}
	}
}

func (p *pool) invoke(inv protocol.Invoke, sleeping map[string]sleeper) {
	in := inv.Input.Text
	switch inv.Tool {
	case demotools.Echo:
		p.result(inv, in)
	case demotools.Upper:
		p.result(inv, strings.ToUpper(in))
	case demotools.Stream:
		n, _ := strconv.Atoi(in)
		for i := 1; i <= n; i++ {
			text := fmt.Sprintf("chunk %d/%d", i, n)
			if i == (n+1)/2 {
				text += " token=" + demotools.Secret
			}
			p.send(protocol.ChunkMessage(protocol.Chunk{RequestID: inv.RequestID, Sequence: uint64(i), Text: text}))
		}
		p.result(inv, fmt.Sprintf("streamed %d chunks", n))
	case demotools.Flaky:
		n, _ := strconv.Atoi(in)
		if int(inv.Attempt) <= n {
			p.send(protocol.ResultMessage(protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultRetryTransient, Error: fmt.Sprintf("flaky: attempt %d of %d fails", inv.Attempt, n)}))
			return
		}
		p.result(inv, fmt.Sprintf("ok after %d", n))
	case demotools.Sleep:
		s := sleeper{inv: inv}
		if d, err := time.ParseDuration(in); err == nil {
			id := inv.RequestID
			s.timer = time.AfterFunc(d, func() {
				select {
				case p.wake <- id:
				case <-p.stop:
				}
			})
		}
		sleeping[inv.RequestID] = s
	default:
		p.send(protocol.ResultMessage(protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultFailed, Error: "apitest: no handler for " + inv.Tool}))
	}
}

func (p *pool) result(inv protocol.Invoke, out string) {
	payload := protocol.TextPayload(out)
	p.send(protocol.ResultMessage(protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultSucceeded, Payload: &payload}))
}

func (p *pool) send(m protocol.WorkerMessage) {
	select {
	case p.MemTransport.EventsIn() <- hostloop.Event{Kind: hostloop.EventMessage, Message: m, Worker: WorkerID}:
	case <-p.stop:
	}
}

// memTools answers GET /v1/tools with the demo catalog; the in-memory pool
// has no JetStream consumer to count.
type memTools struct{}

func (memTools) Catalog() *toolspec.Set { return demotools.Definitions() }

func (memTools) Pool(context.Context, string) (apiwire.Pool, bool, error) {
	return apiwire.Pool{}, false, nil
}
