package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/internal/testwait"
)

func TestNatsOptions(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte("port: 5555\nserver_name: from-file\nhttp_port: 8333\nping_interval: \"20s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantPort int
		wantHTTP int
		wantName string
		wantJS   bool
		// wantPing is the node's PING interval (the command's unless
		// the file sets one); the pings allowed out are 2 throughout.
		wantPing time.Duration
		wantErr  error
	}{
		{name: "defaults", args: []string{"--name", "n"}, wantPort: 4222, wantName: "n", wantJS: true, wantPing: silentClientPing},
		{name: "flags", args: []string{"--name", "n", "--port", "-1", "--http-port", "8222", "--jetstream=false"}, wantPort: -1, wantHTTP: 8222, wantName: "n", wantPing: silentClientPing},
		{name: "config file alone", args: []string{"--config", conf}, wantPort: 5555, wantHTTP: 8333, wantName: "from-file", wantPing: 20 * time.Second},
		{name: "flag overrides config", args: []string{"--config", conf, "--port", "6000"}, wantPort: 6000, wantHTTP: 8333, wantName: "from-file", wantPing: 20 * time.Second},
		{name: "env overrides config", args: []string{"--config", conf}, env: map[string]string{"SPLASH_NATS_NAME": "from-env"}, wantPort: 5555, wantHTTP: 8333, wantName: "from-env", wantPing: 20 * time.Second},
		{name: "missing config", args: []string{"--config", conf + ".absent"}, wantErr: errUsage},
		{name: "routes without cluster", args: []string{"--routes", "nats-route://a:6222"}, wantErr: errUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c natsConfig
			fs := newFlagSet("nats")
			c.flags(fs)
			if _, err := fs.parse(tt.args, mapEnv(tt.env)); err != nil {
				t.Fatalf("parse: %v", err)
			}
			opts, err := c.options(nil)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if opts.Port != tt.wantPort || opts.HTTPPort != tt.wantHTTP || opts.ServerName != tt.wantName || opts.JetStream != tt.wantJS {
				t.Errorf("port %d http %d name %q jetstream %v, want %d %d %q %v",
					opts.Port, opts.HTTPPort, opts.ServerName, opts.JetStream, tt.wantPort, tt.wantHTTP, tt.wantName, tt.wantJS)
			}
			if opts.PingInterval != tt.wantPing || opts.MaxPingsOut != silentClientPings {
				t.Errorf("ping every %v, %d out, want %v, %d", opts.PingInterval, opts.MaxPingsOut, tt.wantPing, silentClientPings)
			}
			if !opts.NoSigs {
				t.Errorf("the server handles signals; the command must")
			}
		})
	}
}

// TestNatsNode runs `splash nats` as an operator would and checks that it
// serves JetStream and monitoring, passes its own healthcheck, and exits 0
// on SIGTERM.
func TestNatsNode(t *testing.T) {
	store := t.TempDir()
	p := startSplash(t, "nats", "--log-format", "json", "--name", "solo",
		"--port", "-1", "--http-port", "-1", "--store-dir", store)
	ready := p.waitRecord(t, "nats node ready")
	if ready["jetstream"] != true {
		t.Fatalf("ready record without JetStream: %v", ready)
	}

	nc := connect(t, fmt.Sprint(ready["client_addr"]))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PROBE", Subjects: []string{"probe.>"}}); err != nil {
		t.Fatalf("create stream: %v", err)
	}
	if _, err := js.Publish(ctx, "probe.1", []byte("x")); err != nil {
		t.Fatalf("publish: %v", err)
	}
	if _, err := os.Stat(filepath.Join(store, "jetstream")); err != nil {
		t.Errorf("store not in --store-dir: %v", err)
	}

	healthz := "http://" + fmt.Sprint(ready["monitor_addr"]) + "/healthz"
	resp, err := http.Get(healthz)
	if err != nil {
		t.Fatalf("GET %s: %v", healthz, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %s", healthz, resp.Status)
	}
	if code, _, stderr := invoke(t, nil, "healthcheck", "--url", healthz); code != 0 {
		t.Errorf("healthcheck exit %d: %s", code, stderr)
	}

	nc.Close()
	if err := p.stop(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	p.waitRecord(t, "nats node stopped")
}

// TestNatsCluster runs two nodes joined by routes and checks that a stream
// created through one is served through the other. JetStream refuses to
// cluster a node with no configured routes, so every node lists every node,
// itself included, as the compose file does.
func TestNatsCluster(t *testing.T) {
	portA, portB := freePort(t), freePort(t)
	routes := fmt.Sprintf("nats-route://127.0.0.1:%d,nats-route://127.0.0.1:%d", portA, portB)
	node := func(name string, clusterPort int) *proc {
		return startSplash(t, "nats", "--log-format", "json", "--name", name, "--port", "-1",
			"--store-dir", t.TempDir(), "--cluster-name", "test",
			"--cluster-port", fmt.Sprint(clusterPort), "--routes", routes)
	}
	a, b := node("a", portA), node("b", portB)
	readyA := a.waitRecord(t, "nats node ready")
	readyB := b.waitRecord(t, "nats node ready")

	jsA := jetStream(t, connect(t, fmt.Sprint(readyA["client_addr"])))
	jsB := jetStream(t, connect(t, fmt.Sprint(readyB["client_addr"])))

	// The JetStream meta group elects a leader once the route is up; until
	// then the API answers "temporarily unavailable".
	testwait.Until(t, 0, "stream created through node a", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := jsA.CreateStream(ctx, jetstream.StreamConfig{Name: "SHARED", Subjects: []string{"shared.>"}, Replicas: 1})
		return err == nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
	defer cancel()
	if _, err := jsB.Publish(ctx, "shared.x", []byte("through b")); err != nil {
		t.Fatalf("publish through b: %v", err)
	}
	s, err := jsB.Stream(ctx, "SHARED")
	if err != nil {
		t.Fatalf("stream through b: %v", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 || info.Cluster == nil || info.Cluster.Name != "test" {
		t.Errorf("stream through b: %d messages, cluster %+v; want 1 in cluster test", info.State.Msgs, info.Cluster)
	}

	for name, p := range map[string]*proc{"b": b, "a": a} {
		if err := p.stop(t); err != nil {
			t.Errorf("node %s exit after SIGTERM: %v", name, err)
		}
	}
}

func connect(t *testing.T, addr string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect("nats://"+addr, nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func jetStream(t *testing.T, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// freePort returns a loopback port that was free a moment ago. Cluster
// routes must be known before the nodes start, so -1 cannot be used; the
// window in which another process could take the port is small.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
