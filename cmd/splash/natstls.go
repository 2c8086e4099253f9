package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"

	"github.com/nats-io/nats.go"
)

// natsTLSFlags are a NATS client's TLS settings: the authority its servers'
// certificates must chain to, and a certificate of its own for servers
// that verify clients.
type natsTLSFlags struct {
	ca   string
	cert string
	key  string
}

func (t *natsTLSFlags) register(fs *flagSet) {
	fs.stringVar(&t.ca, "nats-ca", envNatsCA, "", "PEM `file` of the authority NATS servers' certificates must chain to; set, the connection must be TLS")
	fs.stringVar(&t.cert, "nats-cert", envNatsCert, "", "PEM `file` of this client's certificate, for servers that verify clients (with --nats-key)")
	fs.stringVar(&t.key, "nats-key", envNatsKey, "", "PEM `file` of the private key of --nats-cert")
}

// Environment variables of the TLS flags, shared by every NATS client
// command.
const (
	envNatsCA   = "SPLASH_NATS_CA"
	envNatsCert = "SPLASH_NATS_CERT"
	envNatsKey  = "SPLASH_NATS_KEY"
)

// maxPEMBytes bounds what is read of a PEM file: a CA bundle is a few KiB,
// so a larger file is the wrong one.
const maxPEMBytes = 1 << 20

// options returns the nats.Options that make a connection use TLS, none
// when no flag is set. The files are read here, once, so a missing or
// wrong file fails the command at once with errTLS instead of every
// connection attempt failing alike, which a client retrying an unreachable
// server could not tell from a server that is down.
func (t natsTLSFlags) options() ([]nats.Option, error) {
	if t.ca == "" && t.cert == "" && t.key == "" {
		return nil, nil
	}
	if (t.cert == "") != (t.key == "") {
		return nil, fmt.Errorf("%w: --nats-cert and --nats-key go together", errUsage)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.ca != "" {
		pem, err := readPEM(t.ca)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: --nats-ca %q holds no PEM certificate", errTLS, t.ca)
		}
		cfg.RootCAs = pool
	}
	if t.cert != "" {
		certPEM, err := readPEM(t.cert)
		if err != nil {
			return nil, err
		}
		keyPEM, err := readPEM(t.key)
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			// The error names no key material, only what is wrong.
			return nil, fmt.Errorf("%w: --nats-cert %q, --nats-key %q: %v", errTLS, t.cert, t.key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	// Secure makes TLS a requirement: a server that does not offer it is
	// refused rather than spoken to in clear.
	return []nats.Option{nats.Secure(cfg)}, nil
}

func readPEM(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errTLS, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPEMBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", errTLS, path, err)
	}
	if len(b) > maxPEMBytes {
		return nil, fmt.Errorf("%w: %q is larger than %d bytes", errTLS, path, maxPEMBytes)
	}
	return b, nil
}
