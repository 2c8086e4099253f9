package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	natsconf "github.com/splashfabric/splashfabric/deploy/nats"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

// startDevNATS runs the NATS part of `splash dev` in-process, on a data
// directory of its own, and returns it with the passwords dev generated.
func startDevNATS(t *testing.T) (*server.Server, map[string]string, string) {
	t.Helper()
	dir := t.TempDir()
	passwords, err := devPasswords(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := &devConfig{dataDir: dir, natsPort: -1}
	srv, err := c.startNATS(slog.New(slog.DiscardHandler), passwords)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	return srv, passwords, dir
}

func connectDev(t *testing.T, srv *server.Server, user, password string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	opts = append([]nats.Option{nats.UserInfo(user, password), nats.NoReconnect()}, opts...)
	nc, err := nats.Connect(srv.ClientURL(), opts...)
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestDevNATSRefusesAnonymousClients: the dev node listens on loopback,
// which every local process shares; none gets in without a user's
// password.
func TestDevNATSRefusesAnonymousClients(t *testing.T) {
	srv, pw, _ := startDevNATS(t)
	cases := []struct {
		name string
		opts []nats.Option
	}{
		{"anonymous", nil},
		{"unknown user", []nats.Option{nats.UserInfo("intruder", "x")}},
		{"host with the worker's password", []nats.Option{nats.UserInfo(natsconf.UserHost, pw[natsconf.UserWorker])}},
		{"worker with a wrong password", []nats.Option{nats.UserInfo(natsconf.UserWorker, "wrong")}},
		{"a password as a token", []nats.Option{nats.Token(pw[natsconf.UserOps])}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := nats.Connect(srv.ClientURL(), append([]nats.Option{nats.NoReconnect()}, tc.opts...)...)
			if err == nil {
				nc.Close()
				t.Fatal("connected")
			}
			if !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
				t.Fatalf("err = %v, want an authorization violation", err)
			}
		})
	}
}

// TestDevNATSConfinesTheWorker: the worker user of dev is the cluster's:
// it may not read or write the host's session archive, publish or hear
// invocations, or cancel.
func TestDevNATSConfinesTheWorker(t *testing.T) {
	srv, pw, _ := startDevNATS(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	host := connectDev(t, srv, natsconf.UserHost, pw[natsconf.UserHost])
	hjs, err := jetstream.New(host)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := fabricConfig(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := fabric.Provision(ctx, hjs, cfg); err != nil {
		t.Fatalf("the host user provisions: %v", err)
	}

	v := &natstest.Violations{}
	worker := connectDev(t, srv, natsconf.UserWorker, pw[natsconf.UserWorker], nats.ErrorHandler(v.Handler))
	type op struct {
		what, subject string
		sub           bool
	}
	for _, tc := range []op{
		{"read a session record", "$JS.API.DIRECT.GET.KV_splash_sessions.$KV.splash_sessions.s.s-dev-0123456789ab-1", false},
		{"read the session bucket by sequence", "$JS.API.STREAM.MSG.GET.KV_splash_sessions", false},
		{"write a session record", "$KV.splash_sessions.s.s-dev-0123456789ab-1", false},
		{"watch the session bucket", "$JS.API.CONSUMER.CREATE.KV_splash_sessions.spy", false},
		{"publish an invocation", "splash.invoke.demo.echo", false},
		{"broadcast a cancellation", "splash.cancel.demo.sleep", false},
		{"subscribe to invocations", "splash.invoke.>", true},
		{"subscribe to a host's events", "splash.events.>", true},
	} {
		t.Run("worker may not "+tc.what, func(t *testing.T) {
			if tc.sub {
				if _, err := worker.SubscribeSync(tc.subject); err != nil {
					t.Fatal(err)
				}
			} else if err := worker.Publish(tc.subject, []byte("{}")); err != nil {
				t.Fatal(err)
			}
			if err := worker.Flush(); err != nil {
				t.Fatal(err)
			}
			testwait.Until(t, 10*time.Second, "permission violation for "+tc.subject, func() bool { return v.Has(tc.subject) })
		})
	}
	wjs, err := jetstream.New(worker)
	if err != nil {
		t.Fatal(err)
	}
	// A denied request goes unanswered, so this waits out its own timeout.
	denied, cancelDenied := context.WithTimeout(ctx, 2*time.Second)
	defer cancelDenied()
	if _, err := wjs.KeyValue(denied, fabric.BucketSessions); err == nil {
		t.Error("the worker user bound the session archive")
	}

	// The ops user, unrestricted in the account, reads it.
	ojs, err := jetstream.New(connectDev(t, srv, natsconf.UserOps, pw[natsconf.UserOps]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ojs.KeyValue(ctx, fabric.BucketSessions); err != nil {
		t.Errorf("ops: %v", err)
	}
}

// TestDevPasswordsAreKept: generated once, mode 0600, the same on the next
// run; a file others may read is refused.
func TestDevPasswordsAreKept(t *testing.T) {
	dir := t.TempDir()
	first, err := devPasswords(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range devUsers {
		st, err := os.Stat(devPasswordFile(dir, user))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", user, st.Mode().Perm())
		}
		if len(first[user]) != 32 {
			t.Errorf("%s: password of %d characters", user, len(first[user]))
		}
	}
	if first[natsconf.UserHost] == first[natsconf.UserWorker] {
		t.Error("host and worker share a password")
	}
	again, err := devPasswords(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range devUsers {
		if again[user] != first[user] {
			t.Errorf("%s: password changed across runs", user)
		}
	}
	if err := os.Chmod(devPasswordFile(dir, natsconf.UserOps), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := devPasswords(dir); !errors.Is(err, errStart) || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("world-readable password file: %v", err)
	}
}

// TestDevRefusesAForgedSessionRecord is the reproduction: a local process
// that knows the ops password (or any client of a node without
// permissions) writes a session record into splash_sessions. dev refuses
// to serve it, answers record_rejected and counts it. The generated API
// token is read from its file, as the banner says.
func TestDevRefusesAForgedSessionRecord(t *testing.T) {
	dir := t.TempDir()
	dev := startSplash(t, "dev", "--log-format", "json", "--data-dir", dir,
		"--api-addr", "127.0.0.1:0", "--nats-port", "-1", "--workers", "1")
	rec := dev.waitRecord(t, "dev ready")
	apiURL, _ := rec["api_url"].(string)
	natsURL, _ := rec["nats_url"].(string)

	raw, err := os.ReadFile(filepath.Join(dir, devTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, devTokenFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", st, err)
	}
	token := strings.TrimSpace(string(raw))
	if strings.Contains(dev.stderr.String(), token) {
		t.Error("the token is in the log")
	}

	if nc, err := nats.Connect(natsURL, nats.NoReconnect()); err == nil {
		nc.Close()
		t.Fatal("an anonymous client connected to dev's NATS")
	}
	ops, err := os.ReadFile(devPasswordFile(dir, natsconf.UserOps))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(natsURL, nats.UserInfo(natsconf.UserOps, strings.TrimSpace(string(ops))), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(t.Context(), fabric.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	const id = "s-dev-0123456789ab-1"
	forged := `{"id":"` + id + `","state":"completed","value":"FORGED","created":"2030-01-02T03:04:05Z"}`
	if _, err := kv.Put(t.Context(), "s."+id, []byte(forged)); err != nil {
		t.Fatal(err)
	}

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, apiURL+"/v1/sessions/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusInternalServerError || body.Error.Code != "record_rejected" {
		t.Fatalf("GET forged session: %d %+v, %v; want 500 record_rejected", resp.StatusCode, body, err)
	}
	if strings.Contains(body.Error.Message, "FORGED") {
		t.Errorf("the error serves the forged value: %s", body.Error.Message)
	}
	families := scrape(t, apiURL+"/metrics")
	if got := value(families, "splash_records_rejected_total", "reason=unsigned,store=session_archive"); got != 1 {
		t.Errorf("splash_records_rejected_total{session_archive,unsigned} = %v, want 1", got)
	}
	if got := value(families, "splash_records_rejected_total", "reason=bad_tag,store=journal"); got != 0 {
		t.Errorf("splash_records_rejected_total{journal,bad_tag} = %v, want 0", got)
	}
	if err := dev.stop(t); err != nil {
		t.Fatalf("splash dev after SIGTERM: %v", err)
	}
}

// TestDevBannerKeepsTheTokenOffCommandLines: the banner names the token's
// file and suggests commands that take it from the environment, never the
// token itself or --api-token.
func TestDevBannerKeepsTheTokenOffCommandLines(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	tests := []struct {
		name      string
		tokenPath string
		want      []string
	}{
		{"generated", "/data dir/api.token", []string{"token:   in /data dir/api.token", `export SPLASH_API_TOKEN="$(cat '/data dir/api.token')"`}},
		{"given", "", []string{"token:   (from --api-token or SPLASH_API_TOKEN)", "export SPLASH_API_TOKEN="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			printDevBanner(&out, devBanner{
				natsURL: "nats://127.0.0.1:4222", dataDir: "/data dir", keyPath: "/data dir/frame.key",
				apiURL: "http://127.0.0.1:8080", metricsURL: "http://127.0.0.1:8080/metrics",
				tokenPath: tt.tokenPath, workers: 1, tools: []string{"demo.upper", "demo.stream"},
			})
			banner := out.String()
			for _, w := range append(tt.want, "nats-<user>.password", " run --api-url http://127.0.0.1:8080 -e ") {
				if !strings.Contains(banner, w) {
					t.Errorf("banner lacks %q:\n%s", w, banner)
				}
			}
			if strings.Contains(banner, token) {
				t.Errorf("banner holds the token:\n%s", banner)
			}
			for line := range strings.Lines(banner) {
				if strings.Contains(line, " run ") && strings.Contains(line, "--api-token") {
					t.Errorf("suggested command passes the token as a flag: %s", line)
				}
			}
		})
	}
}
