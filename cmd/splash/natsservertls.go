package main

import (
	"fmt"

	"github.com/nats-io/nats-server/v2/server"
)

// tlsHandshakeTimeout is the seconds a TLS handshake may take, on client
// and route links alike: the server's default (0.5 s) is short for a
// busy two-core machine handshaking a dozen clients at once after a
// restart.
const tlsHandshakeTimeout = 2

// natsServerTLSFlags are a node's TLS settings: its certificate and key,
// presented to clients and to the nodes it routes to, and the authority
// that route peers' certificates must chain to.
type natsServerTLSFlags struct {
	cert string
	key  string
	ca   string
}

func (t *natsServerTLSFlags) register(fs *flagSet) {
	fs.stringVar(&t.cert, "tls-cert", "SPLASH_NATS_TLS_CERT", "", "PEM `file` of the node's certificate; set, clients and routes must use TLS (with --tls-key)")
	fs.stringVar(&t.key, "tls-key", "SPLASH_NATS_TLS_KEY", "", "PEM `file` of the private key of --tls-cert")
	fs.stringVar(&t.ca, "tls-ca", "SPLASH_NATS_TLS_CA", "", "PEM `file` of the authority that route peers' certificates (and any client certificate) must chain to; required with --tls-cert on a cluster")
}

// apply sets opts' client and route TLS from the flags, as the tls blocks
// of deploy/nats/splash.conf do, so a node configured by that file and
// these flags (the compose file sets both from the same variables) is
// configured once: the client port requires TLS but no client
// certificate (users authenticate with passwords; a server that must
// verify clients says so in a file, verify: true), and routes require TLS
// both ways and verify the peer, as nats-server always does for a
// cluster's tls block.
func (t natsServerTLSFlags) apply(opts *server.Options) error {
	if t.cert == "" && t.key == "" && t.ca == "" {
		return nil
	}
	if t.cert == "" || t.key == "" {
		return fmt.Errorf("%w: --tls-cert and --tls-key go together", errUsage)
	}
	client, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: t.cert, KeyFile: t.key, CaFile: t.ca})
	if err != nil {
		return fmt.Errorf("%w: %v", errTLS, err)
	}
	opts.TLSConfig = client
	opts.TLSTimeout = tlsHandshakeTimeout
	if opts.Cluster.Port == 0 {
		return nil
	}
	if t.ca == "" {
		return fmt.Errorf("%w: --tls-cert on a cluster needs --tls-ca, to verify the other nodes", errUsage)
	}
	route, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: t.cert, KeyFile: t.key, CaFile: t.ca, Verify: true})
	if err != nil {
		return fmt.Errorf("%w: %v", errTLS, err)
	}
	// A node both accepts and dials routes: it checks peers it dials
	// against the same authority as peers that dial it.
	route.RootCAs = route.ClientCAs
	opts.Cluster.TLSConfig = route
	opts.Cluster.TLSTimeout = tlsHandshakeTimeout
	return nil
}
