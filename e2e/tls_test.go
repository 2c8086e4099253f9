package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/certs"
	"github.com/splashfabric/splashfabric/internal/natstest"

	"github.com/splashfabric/splashfabric/internal/testwait"
)

// setDeployTLSEnv sets the variables deploy/nats/splash.conf reads for TLS
// and the store key, to certificates issued as gen-secrets.sh issues them,
// and returns their directory.
func setDeployTLSEnv(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tls")
	if _, err := certs.WriteDir(dir, certs.DirConfig{Hosts: []string{"n1", "n2", "n3", "localhost", "127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SPLASH_NATS_TLS_CERT", filepath.Join(dir, certs.ServerFile))
	t.Setenv("SPLASH_NATS_TLS_KEY", filepath.Join(dir, certs.ServerKeyFile))
	t.Setenv("SPLASH_NATS_TLS_CA", filepath.Join(dir, certs.CAFile))
	t.Setenv("SPLASH_NATS_JS_KEY", "store-key-of-the-test")
	return dir
}

// plaintextHello speaks NATS to addr without TLS, as user with password:
// it reads the server's INFO, sends CONNECT and PING, and reports whether
// a PONG came back, with everything the server sent.
func plaintextHello(addr, user, password string) (pong bool, said string, err error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return false, "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return false, "", err
	}
	var got bytes.Buffer
	r := bufio.NewReader(io.TeeReader(conn, &got))
	if _, err := r.ReadString('\n'); err != nil {
		return false, got.String(), fmt.Errorf("read INFO: %w", err)
	}
	hello, _ := json.Marshal(map[string]any{"user": user, "pass": password, "verbose": false, "pedantic": false, "tls_required": false})
	if _, err := fmt.Fprintf(conn, "CONNECT %s\r\nPING\r\n", hello); err != nil {
		// The server may have closed already: that is a refusal too.
		return false, got.String(), nil
	}
	for {
		line, err := r.ReadString('\n')
		if strings.HasPrefix(line, "PONG") {
			return true, got.String(), nil
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return false, got.String(), fmt.Errorf("server neither answered nor closed: %w", err)
			}
			return false, got.String(), nil
		}
	}
}

// TestNATSConfigTLS loads deploy/nats/splash.conf with certificates from
// internal/certs and checks what it promises: client connections are TLS
// only (a plaintext client, or one that does not trust the authority, is
// refused), routes require verified TLS, and JetStream writes its store
// encrypted (a marker written through the server is absent from the
// store's files, and present in those of the same server without the
// cipher).
func TestNATSConfigTLS(t *testing.T) {
	for k, v := range testPasswords {
		t.Setenv(k, v)
	}
	dir := setDeployTLSEnv(t)
	opts, err := server.ProcessConfigFile(filepath.Join(repoRoot(t), "deploy", "nats", "splash.conf"))
	if err != nil {
		t.Fatalf("deploy/nats/splash.conf: %v", err)
	}
	if opts.TLSConfig == nil || opts.Cluster.TLSConfig == nil {
		t.Fatalf("client TLS %v, route TLS %v: want both", opts.TLSConfig != nil, opts.Cluster.TLSConfig != nil)
	}
	if opts.Cluster.TLSConfig.ClientAuth.String() != "RequireAndVerifyClientCert" {
		t.Errorf("routes: client auth %v, want RequireAndVerifyClientCert", opts.Cluster.TLSConfig.ClientAuth)
	}
	if opts.JetStreamCipher != server.ChaCha || opts.JetStreamKey == "" {
		t.Errorf("JetStream cipher %v, key set %v: want chachapoly with a key", opts.JetStreamCipher, opts.JetStreamKey != "")
	}

	marker := "at-rest-marker-" + randomHex(t)
	run := func(t *testing.T, encrypted bool) (storeDir string) {
		t.Helper()
		o := opts.Clone()
		o.ServerName = "tls-test"
		o.Host = "127.0.0.1"
		o.Port = -1
		o.HTTPPort = 0
		o.Cluster = server.ClusterOpts{}
		o.StoreDir = t.TempDir()
		o.NoLog = true
		o.NoSigs = true
		if !encrypted {
			o.JetStreamCipher, o.JetStreamKey = server.NoCipher, ""
		}
		srv := natstest.StartWith(t, o)
		nc := srv.Connect(nats.RootCAs(filepath.Join(dir, certs.CAFile)), nats.UserInfo("ops", testPasswords["SPLASH_NATS_OPS_PASSWORD"]),
			nats.CustomInboxPrefix(fabric.InboxPrefix("ops")))
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), testwait.Scale(10*time.Second))
		defer cancel()
		kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "at_rest", Storage: jetstream.FileStorage})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.PutString(ctx, "k", marker); err != nil {
			t.Fatal(err)
		}
		// Shut down, so whatever the server buffered is on disk.
		nc.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
		return o.StoreDir
	}

	t.Run("clients", func(t *testing.T) {
		o := opts.Clone()
		o.ServerName, o.Host, o.Port, o.HTTPPort = "tls-clients", "127.0.0.1", -1, 0
		o.Cluster = server.ClusterOpts{}
		o.StoreDir, o.NoLog, o.NoSigs = t.TempDir(), true, true
		srv := natstest.StartWith(t, o)
		addr := srv.Addr().String()
		ca := nats.RootCAs(filepath.Join(dir, certs.CAFile))
		worker := nats.UserInfo("host", testPasswords["SPLASH_NATS_HOST_PASSWORD"])

		pong, said, err := plaintextHello(addr, "host", testPasswords["SPLASH_NATS_HOST_PASSWORD"])
		if err != nil || pong {
			t.Errorf("plaintext client: pong %v, err %v; server said %q", pong, err, said)
		}
		if !strings.Contains(said, `"tls_required":true`) {
			t.Errorf("INFO does not require TLS: %q", said)
		}
		if nc, err := nats.Connect(srv.ClientURL(), nats.NoReconnect(), worker); err == nil {
			nc.Close()
			t.Error("a client that does not trust the authority connected")
		}
		if nc, err := nats.Connect(srv.ClientURL(), nats.NoReconnect(), ca); err == nil {
			nc.Close()
			t.Error("an anonymous TLS client connected")
		} else if !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
			t.Errorf("anonymous TLS client: %v, want an authorization violation", err)
		}
		nc, err := nats.Connect(srv.ClientURL(), nats.NoReconnect(), ca, worker)
		if err != nil {
			t.Fatalf("host over TLS: %v", err)
		}
		defer nc.Close()
		if _, err := nc.TLSConnectionState(); err != nil {
			t.Errorf("host connection is not TLS: %v", err)
		}
	})

	t.Run("store", func(t *testing.T) {
		plainDir := run(t, false)
		if !natstest.FilesHold(t, plainDir, marker) {
			t.Fatal("the marker is not found in an unencrypted store: the check would prove nothing")
		}
		encDir := run(t, true)
		if natstest.FilesHold(t, encDir, marker) {
			t.Error("the marker is readable in the encrypted store's files")
		}
	})
}

func randomHex(t testing.TB) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}
