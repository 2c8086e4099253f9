package benchharness

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/internal/certs"
	"github.com/splashfabric/splashfabric/internal/natstest"
)

// Security is what a runner's server protects, so the cost of each
// protection the compose cluster turns on is measured against the same
// path without it.
type Security struct {
	// TLS carries every client connection over TLS (ECDSA P-256
	// certificates issued for the run, verified by the clients).
	TLS bool
	// EncryptStore encrypts the JetStream store at rest with
	// ChaCha20-Poly1305, the cipher deploy/nats/splash.conf names.
	EncryptStore bool
}

// Secured is the protection of the compose cluster: TLS and an encrypted
// store.
var Secured = Security{TLS: true, EncryptStore: true}

// benchServer is a runner's in-process server and the options its clients
// connect with.
type benchServer struct {
	*natstest.Server
	clientOpts []nats.Option
}

// startServer runs a JetStream server with sec's protections; it stops
// when the benchmark ends.
func startServer(tb testing.TB, sec Security) *benchServer {
	tb.Helper()
	opts := natstest.Options(tb.TempDir())
	var clientOpts []nats.Option
	if sec.TLS {
		pair, pool, err := benchCertificates()
		if err != nil {
			tb.Fatal(err)
		}
		opts.TLSConfig = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
		opts.TLSTimeout = 2
		clientOpts = append(clientOpts, nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	}
	if sec.EncryptStore {
		opts.JetStreamCipher = server.ChaCha
		opts.JetStreamKey = "bench-store-key"
	}
	return &benchServer{Server: natstest.StartWith(tb, opts), clientOpts: clientOpts}
}

// benchCertificates issues a loopback server certificate from a new
// authority, and the pool that trusts it.
func benchCertificates() (tls.Certificate, *x509.CertPool, error) {
	ca, err := certs.NewAuthority("bench", time.Now())
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := ca.Issue("bench", []string{"127.0.0.1", "localhost"}, certs.ServerUsage, time.Now())
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pair, err := leaf.TLSCertificate()
	return pair, ca.Pool(), err
}

// connect opens a client connection, closed when the benchmark ends.
func (s *benchServer) connect() *nats.Conn { return s.Connect(s.clientOpts...) }
