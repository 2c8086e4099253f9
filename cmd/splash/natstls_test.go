package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/internal/certs"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

// tlsDir writes an authority and a server certificate for loopback into a
// fresh directory, as `splash certs` does.
func tlsDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tls")
	if _, err := certs.WriteDir(dir, certs.DirConfig{Hosts: []string{"localhost", "127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startTLSServer runs a JetStream server whose client port requires TLS
// with dir's server certificate; verify also requires a client
// certificate from dir's authority.
func startTLSServer(t *testing.T, dir string, verify bool) *natstest.Server {
	t.Helper()
	cfg, err := server.GenTLSConfig(&server.TLSConfigOpts{
		CertFile: filepath.Join(dir, certs.ServerFile), KeyFile: filepath.Join(dir, certs.ServerKeyFile),
		CaFile: filepath.Join(dir, certs.CAFile), Verify: verify,
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := natstest.Options(t.TempDir())
	opts.TLSConfig = cfg
	opts.TLSTimeout = tlsHandshakeTimeout
	opts.TLSVerify = verify
	return natstest.StartWith(t, opts)
}

func TestCertsCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secrets", "tls")
	code, stdout, stderr := invoke(t, nil, "certs", "--dir", dir, "--hosts", "n1,n2,n3,localhost,127.0.0.1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, name := range []string{certs.CAFile, certs.CAKeyFile, certs.ServerFile, certs.ServerKeyFile} {
		if !strings.Contains(stdout, "wrote "+filepath.Join(dir, name)) {
			t.Errorf("stdout does not name %s:\n%s", name, stdout)
		}
	}
	ca := readTestFile(t, dir, certs.CAFile)

	// Again, from the environment: everything is kept.
	code, stdout, stderr = invoke(t, map[string]string{"SPLASH_CERTS_DIR": dir}, "certs")
	if code != 0 || strings.Contains(stdout, "wrote") || !strings.Contains(stdout, "kept") {
		t.Fatalf("second run: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if string(readTestFile(t, dir, certs.CAFile)) != string(ca) {
		t.Fatal("second run replaced the authority")
	}

	if err := os.Remove(filepath.Join(dir, certs.ServerKeyFile)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"no directory", []string{"certs"}, 2, "no --dir"},
		{"no hosts", []string{"certs", "--dir", t.TempDir(), "--hosts", ""}, 2, "--hosts"},
		{"incomplete directory", []string{"certs", "--dir", dir}, 1, "incomplete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := invoke(t, nil, tt.args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.wantCode, tt.wantStderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, certs.ServerKeyFile)); err == nil {
		t.Error("a refused run wrote a key")
	}
}

func readTestFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNatsClientTLS connects through the TLS flags to servers that
// require TLS, verify clients, or offer no TLS at all.
func TestNatsClientTLS(t *testing.T) {
	dir := tlsDir(t)
	other := tlsDir(t)
	tlsSrv := startTLSServer(t, dir, false)
	verifySrv := startTLSServer(t, dir, true)
	plainSrv := natstest.Start(t)
	client, err := func() (certs.Leaf, error) {
		ca, err := certs.ParseAuthority(readTestFile(t, dir, certs.CAFile), readTestFile(t, dir, certs.CAKeyFile))
		if err != nil {
			return certs.Leaf{}, err
		}
		return ca.Issue("client", nil, certs.ClientUsage, time.Now())
	}()
	if err != nil {
		t.Fatal(err)
	}
	clientCert, clientKey := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	if err := os.WriteFile(clientCert, client.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(clientKey, client.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, certs.CAFile)

	tests := []struct {
		name       string
		srv        *natstest.Server
		flags      natsTLSFlags
		wantOptErr error  // from the flags, before any connection
		wantRefuse string // in the connection's error; empty: it connects
	}{
		{name: "CA", srv: tlsSrv, flags: natsTLSFlags{ca: ca}},
		{name: "no CA", srv: tlsSrv, wantRefuse: "certificate"},
		{name: "another authority", srv: tlsSrv, flags: natsTLSFlags{ca: filepath.Join(other, certs.CAFile)}, wantRefuse: "certificate"},
		{name: "plaintext server", srv: plainSrv, flags: natsTLSFlags{ca: ca}, wantRefuse: "secure connection not available"},
		{name: "client certificate", srv: verifySrv, flags: natsTLSFlags{ca: ca, cert: clientCert, key: clientKey}},
		// TLS 1.3 reports the missing certificate after the handshake:
		// as the server's alert or as the connection it closed.
		{name: "no client certificate where one is verified", srv: verifySrv, flags: natsTLSFlags{ca: ca}, wantRefuse: "tls"},
		{name: "certificate without key", flags: natsTLSFlags{ca: ca, cert: clientCert}, wantOptErr: errUsage},
		{name: "missing CA file", flags: natsTLSFlags{ca: ca + ".absent"}, wantOptErr: errTLS},
		{name: "CA file without a certificate", flags: natsTLSFlags{ca: garbage}, wantOptErr: errTLS},
		{name: "key of another certificate", flags: natsTLSFlags{ca: ca, cert: clientCert, key: filepath.Join(dir, certs.ServerKeyFile)}, wantOptErr: errTLS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := tt.flags.options()
			if !errors.Is(err, tt.wantOptErr) {
				t.Fatalf("options: %v, want %v", err, tt.wantOptErr)
			}
			if err != nil {
				return
			}
			nc, err := nats.Connect(tt.srv.ClientURL(), append(opts, nats.NoReconnect(), nats.Timeout(5*time.Second))...)
			if tt.wantRefuse != "" {
				if err == nil {
					nc.Close()
					t.Fatal("connected")
				}
				if !strings.Contains(err.Error(), tt.wantRefuse) {
					t.Fatalf("err %v, want it to mention %q", err, tt.wantRefuse)
				}
				return
			}
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer nc.Close()
			if _, err := nc.TLSConnectionState(); err != nil {
				t.Errorf("connection is not TLS: %v", err)
			}
		})
	}
}

// TestConnectNATSUsesTLSFlags goes through connectNATS, as host, worker
// and tools do, and through the flags' environment variables.
func TestConnectNATSUsesTLSFlags(t *testing.T) {
	dir := tlsDir(t)
	srv := startTLSServer(t, dir, false)
	var f natsClientFlags
	fs := newFlagSet("t")
	f.register(fs)
	if _, err := fs.parse(nil, mapEnv(map[string]string{envNatsURL: srv.ClientURL(), envNatsCA: filepath.Join(dir, certs.CAFile)})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), testwait.Scale(20*time.Second))
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	nc, err := connectNATS(ctx, f, "tls-test", log)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.TLSConnectionState(); err != nil {
		t.Fatalf("connection is not TLS: %v", err)
	}

	f.tls.ca = filepath.Join(dir, "absent.pem")
	if _, err := connectNATS(ctx, f, "tls-test", log); !errors.Is(err, errTLS) {
		t.Fatalf("missing CA: %v, want errTLS at once", err)
	}

	// Another deployment's authority: the server's certificate is
	// refused, at once rather than retried until ctx ends.
	f.tls.ca = filepath.Join(tlsDir(t), certs.CAFile)
	if _, err := connectNATS(ctx, f, "tls-test", log); !errors.Is(err, errTLS) || ctx.Err() != nil {
		t.Fatalf("untrusted server: %v (ctx %v), want errTLS at once", err, ctx.Err())
	}

	// A plaintext server while the client requires TLS.
	plain := natstest.Start(t)
	f.url, f.tls.ca = plain.ClientURL(), filepath.Join(dir, certs.CAFile)
	if _, err := connectNATS(ctx, f, "tls-test", log); !errors.Is(err, errTLS) || ctx.Err() != nil {
		t.Fatalf("plaintext server: %v (ctx %v), want errTLS at once", err, ctx.Err())
	}
}

func TestNatsServerTLSOptions(t *testing.T) {
	dir := tlsDir(t)
	cert, key, ca := filepath.Join(dir, certs.ServerFile), filepath.Join(dir, certs.ServerKeyFile), filepath.Join(dir, certs.CAFile)
	tests := []struct {
		name        string
		args        []string
		wantClient  bool
		wantCluster bool
		wantErr     error
	}{
		{name: "no TLS", args: []string{"--name", "n"}},
		{name: "clients", args: []string{"--name", "n", "--tls-cert", cert, "--tls-key", key}, wantClient: true},
		{name: "clients and routes", args: []string{"--name", "n", "--cluster-name", "c", "--cluster-port", "-1", "--tls-cert", cert, "--tls-key", key, "--tls-ca", ca}, wantClient: true, wantCluster: true},
		{name: "cluster without CA", args: []string{"--name", "n", "--cluster-name", "c", "--cluster-port", "-1", "--tls-cert", cert, "--tls-key", key}, wantErr: errUsage},
		{name: "certificate without key", args: []string{"--name", "n", "--tls-cert", cert}, wantErr: errUsage},
		{name: "CA alone", args: []string{"--name", "n", "--tls-ca", ca}, wantErr: errUsage},
		{name: "missing certificate", args: []string{"--name", "n", "--tls-cert", cert + ".absent", "--tls-key", key}, wantErr: errTLS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c natsConfig
			fs := newFlagSet("nats")
			c.flags(fs)
			if _, err := fs.parse(tt.args, mapEnv(nil)); err != nil {
				t.Fatalf("parse: %v", err)
			}
			opts, err := c.options(nil)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if (opts.TLSConfig != nil) != tt.wantClient || (opts.Cluster.TLSConfig != nil) != tt.wantCluster {
				t.Fatalf("client TLS %v, route TLS %v; want %v, %v", opts.TLSConfig != nil, opts.Cluster.TLSConfig != nil, tt.wantClient, tt.wantCluster)
			}
		})
	}
}

// TestNatsTLSCluster joins two nodes configured by the TLS flags: routes
// form over TLS (the nodes verify each other's certificate), a stream
// created through one node is served through the other, and a client
// without the authority is refused.
func TestNatsTLSCluster(t *testing.T) {
	dir := tlsDir(t)
	portA, portB := freePort(t), freePort(t)
	routes := "nats-route://127.0.0.1:" + itoa(portA) + ",nats-route://127.0.0.1:" + itoa(portB)
	node := func(name string, clusterPort int) *natstest.Server {
		var c natsConfig
		fs := newFlagSet("nats")
		c.flags(fs)
		args := []string{"--name", name, "--port", "-1", "--store-dir", t.TempDir(), "--cluster-name", "tls",
			"--cluster-port", itoa(clusterPort), "--routes", routes,
			"--tls-cert", filepath.Join(dir, certs.ServerFile), "--tls-key", filepath.Join(dir, certs.ServerKeyFile), "--tls-ca", filepath.Join(dir, certs.CAFile)}
		if _, err := fs.parse(args, mapEnv(nil)); err != nil {
			t.Fatal(err)
		}
		opts, err := c.options(nil)
		if err != nil {
			t.Fatal(err)
		}
		opts.NoLog = true
		return natstest.StartWith(t, opts)
	}
	a, b := node("a", portA), node("b", portB)
	testwait.Until(t, 0, "route up over TLS", func() bool { return a.NumRoutes() > 0 && b.NumRoutes() > 0 })

	tlsOpts, err := natsTLSFlags{ca: filepath.Join(dir, certs.CAFile)}.options()
	if err != nil {
		t.Fatal(err)
	}
	jsA, jsB := jetStream(t, a.Connect(tlsOpts...)), jetStream(t, b.Connect(tlsOpts...))
	testwait.Until(t, 0, "stream created through node a", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		_, err := jsA.CreateStream(ctx, jetstream.StreamConfig{Name: "SHARED", Subjects: []string{"shared.>"}, Replicas: 2})
		return err == nil
	})
	ctx, cancel := context.WithTimeout(t.Context(), testwait.Scale(10*time.Second))
	defer cancel()
	if _, err := jsB.Publish(ctx, "shared.x", []byte("through b")); err != nil {
		t.Fatalf("publish through b: %v", err)
	}
	if nc, err := nats.Connect(a.ClientURL(), nats.NoReconnect()); err == nil {
		nc.Close()
		t.Fatal("a client without the authority connected")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
