// Package natstest starts real, in-process NATS servers with JetStream for
// tests. Every test in the project that needs NATS goes through it, so the
// server options live in one place.
package natstest

import (
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Options returns the options of a loopback server on a random port with
// JetStream on and its store in storeDir.
func Options(storeDir string) *server.Options {
	return &server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		NoLog:     true,
		NoSigs:    true,
		JetStream: true,
		StoreDir:  storeDir,
		// Tests create many consumers and KV buckets; the server's default
		// limits are generous already, so nothing else is tuned here.
	}
}

// Server is a running test server together with where its data lives, so a
// test can restart it on the same store.
type Server struct {
	*server.Server
	t    testing.TB
	opts *server.Options
}

// Start runs a JetStream server whose store is a fresh t.TempDir and stops
// it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options(t.TempDir()))
}

// StartWith runs a server with the given options and stops it when the test
// ends.
func StartWith(t testing.TB, opts *server.Options) *Server {
	t.Helper()
	s := &Server{t: t, opts: opts}
	s.Server = run(t, opts)
	// A closure, so the server running at the end (after any Restart) is
	// the one shut down.
	t.Cleanup(func() { s.Shutdown() })
	return s
}

func run(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("natstest: new server: %v", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		t.Fatalf("natstest: server not ready")
	}
	return srv
}

// Restart shuts the server down and starts it again on the same port and
// store directory, as a crashed node that comes back would.
func (s *Server) Restart() {
	s.t.Helper()
	opts := *s.opts
	// Reuse the port so clients that reconnect find the node again.
	opts.Port = s.Server.Addr().(*net.TCPAddr).Port
	s.Server.Shutdown()
	s.Server.WaitForShutdown()
	s.Server = run(s.t, &opts)
}

// Connect opens a client connection that is closed when the test ends.
func (s *Server) Connect(opts ...nats.Option) *nats.Conn {
	s.t.Helper()
	nc, err := nats.Connect(s.ClientURL(), opts...)
	if err != nil {
		s.t.Fatalf("natstest: connect: %v", err)
	}
	s.t.Cleanup(nc.Close)
	return nc
}
