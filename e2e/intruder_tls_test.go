package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

// TestScenarioIntruderTLS (scenario 8): intruders against the TLS cluster.
// A client speaking NATS in clear, with valid host credentials, never
// gets an answer, and one that does not trust the deployment's authority
// is refused at the handshake; an anonymous TLS client is refused at
// CONNECT; a pool's credentials may neither read the session archive nor
// publish an invocation; a session record forged into the archive with
// the ops user is not served by the host; and a value the host archived
// is not readable in the nodes' store files.
func TestScenarioIntruderTLS(t *testing.T) {
	s, api := cluster(t, 1)
	ctx := t.Context()
	hostPW := s.secrets["SPLASH_NATS_HOST_PASSWORD"]

	// 1. In clear, with the host's password: the server asks for TLS and
	// drops the connection at the handshake, before any credential is
	// read.
	addr := s.port("n1", 4222)
	pong, said, err := plaintextHello(addr, "host", hostPW)
	if err != nil || pong {
		t.Fatalf("plaintext client: pong %v, err %v; server said %q", pong, err, said)
	}
	if !strings.Contains(said, `"tls_required":true`) {
		t.Errorf("INFO does not require TLS: %q", said)
	}
	s.logf("plaintext client refused")

	// 2. TLS without trusting the authority: refused at the handshake.
	urls := s.natsURLs()
	if nc, err := nats.Connect(urls, nats.NoReconnect(), nats.UserInfo("host", hostPW)); err == nil {
		nc.Close()
		t.Fatal("a client that does not trust the deployment's authority connected")
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusting client: %v, want a certificate error", err)
	}

	// 3. TLS, no credentials.
	if nc, err := nats.Connect(urls, nats.NoReconnect(), s.tls()); err == nil {
		nc.Close()
		t.Fatal("anonymous TLS client connected")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		t.Fatalf("anonymous TLS client: %v, want an authorization violation", err)
	}

	// 4. A pool's credentials, the wrong role for the archive and for
	// invocations.
	v := &natstest.Violations{}
	wnc, err := s.connectPool("demo", nats.ErrorHandler(v.Handler))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wnc.Subscribe("$KV."+fabric.BucketSessions+".>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := wnc.Publish("splash.invoke.demo.echo", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	_ = wnc.Flush()
	wjs, err := jetstream.New(wnc)
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, testwait.Scale(5*time.Second))
	_, err = wjs.KeyValue(rctx, fabric.BucketSessions)
	rcancel()
	if err == nil {
		t.Error("the pool opened the session archive")
	}
	testwait.Until(t, 10*time.Second, "the pool refused the archive and invocations", func() bool {
		return v.Has("$KV."+fabric.BucketSessions+".>") && v.Has("splash.invoke.demo.echo") &&
			v.Has("$JS.API.STREAM.INFO.KV_"+fabric.BucketSessions)
	})
	s.logf("pool credentials refused: %q", v.Snapshot())

	// 5. A record forged into the archive, with the ops user (who may
	// write any bucket), is not served as the session's answer.
	// An id of the host's own form, so that only the archive can answer
	// for it: the loop sends an id of another form away as unknown.
	id := "s-host1-" + randomHex(t)[:12] + "-1"
	forged := "forged-" + randomHex(t)
	ojs := s.opsJS()
	kv, err := ojs.KeyValue(ctx, fabric.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(map[string]any{"id": id, "state": "completed", "value": forged, "created": time.Now().UTC()})
	if _, err := kv.Put(ctx, "s."+id, rec); err != nil {
		t.Fatalf("forge the archive: %v", err)
	}
	got, err := api.session(ctx, id)
	var ae *apiError
	switch {
	case err == nil:
		t.Fatalf("GET /v1/sessions/%s served a record it cannot authenticate: %+v", id, got)
	case !errors.As(err, &ae):
		t.Fatalf("GET /v1/sessions/%s: %v", id, err)
	case ae.Status != http.StatusInternalServerError || !strings.Contains(ae.Body, `"record_rejected"`) || strings.Contains(ae.Body, forged):
		t.Fatalf("forged record: HTTP %d %s, want 500 record_rejected without the value", ae.Status, ae.Body)
	}
	fams, err := api.metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := metricSum(fams, "splash_records_rejected_total", map[string]string{"store": "session_archive"}); n < 1 {
		t.Fatalf("splash_records_rejected_total{store=\"session_archive\"} = %v, want the forged record counted", n)
	}
	s.logf("forged archive record refused: HTTP %d, counted", ae.Status)

	// 6. A value the host archives reaches the store encrypted: it is
	// absent from every node's files once the archive serves it back.
	marker := "at-rest-" + randomHex(t)
	sub, err := api.submit(ctx, `"`+marker+`"`)
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, time.Minute, "marker session archived", func() bool {
		_, err := kv.Get(ctx, "s."+sub.ID)
		return err == nil
	})
	for _, id := range s.containers("n1") {
		store := dockerCopy(t, id, "/data/nats")
		if !bytes.Contains(store, []byte("KV_"+fabric.BucketSessions)) {
			t.Fatalf("copy of %s's store lacks the archive's stream", id)
		}
		if bytes.Contains(store, []byte(marker)) {
			t.Errorf("an archived value is readable in %s's store files", id)
		}
	}
}

// dockerCopy returns a container directory as the tar stream `docker cp`
// writes.
func dockerCopy(t *testing.T, container, path string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", "cp", container+":"+path, "-")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("docker cp %s:%s: %v %s", container, path, err, errOut.String())
	}
	return out.Bytes()
}
