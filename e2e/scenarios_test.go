package e2e_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
)

// Load of every scenario: loadClients scripts in flight at once.
const loadClients = 8

// hostID is SPLASH_HOST_ID of the compose host.
const hostID = "host1"

// cluster brings the whole stack up with workers workers and returns it
// with an API client once the ledger's bucket answers reads.
func cluster(t *testing.T, workers int) (*stack, *apiClient) {
	t.Helper()
	s := newStack(t)
	s.up(workers)
	s.ledgerReady()
	return s, newAPIClient(s.apiURL(), s.apiToken())
}

// clusterReplicas is the replicas of every stream and bucket in the compose
// cluster (SPLASH_REPLICAS in docker-compose.yml).
const clusterReplicas = 3

// ledgerReady creates demo.ledger's bucket as the workers would on their
// first call (same configuration, so theirs is a no-op) and waits until a
// read answers: right after creation a clustered bucket may answer "no
// responders", which demo.ledger, run once per key, would report as the
// failure of a script's only attempt.
func (s *stack) ledgerReady() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.t.Context(), time.Minute)
	defer cancel()
	js := s.opsJS()
	kv, err := js.CreateOrUpdateKeyValue(ctx, demotools.LedgerBucketConfig(clusterReplicas))
	if err != nil {
		s.fatalf("ledger bucket: %v", err)
	}
	testwait.Until(s.t, time.Minute, "ledger bucket answers reads", func() bool {
		_, err := kv.Get(ctx, "e2e-ready")
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
	s.logf("ledger bucket ready")
}

// TestScenarioIntruders (scenario 7): a client without NATS credentials and
// clients with credentials but the wrong frame key try to publish
// invocations and results. The first is refused at the connection, the
// others' frames are rejected and counted, and nothing runs.
func TestScenarioIntruders(t *testing.T) {
	s, api := cluster(t, 1)
	ctx := t.Context()
	before, err := api.metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// 1. No credentials: the connection itself is refused.
	if _, err := nats.Connect(s.natsURLs(), nats.NoReconnect(), s.tls()); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		t.Fatalf("anonymous connect: %v, want an authorization violation", err)
	}

	wrong, err := protocol.GenerateSessionKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	codec, err := fabric.NewCodec(wrong)
	if err != nil {
		t.Fatal(err)
	}
	const forged = 5
	// The forgers name the id of the pool's key (ids are no secret), so
	// their frames fail on the tag rather than on an unknown key.
	keyID, _ := s.pools["demo"].Ring.Current()

	// 2. Host credentials, wrong key: invocations reach the stream, and
	// the worker refuses every one.
	hnc, err := s.connect("host")
	if err != nil {
		t.Fatal(err)
	}
	hjs, err := jetstream.New(hnc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range forged {
		inv := protocol.Invoke{
			RequestID: fmt.Sprintf("intruder-%d", i), Tool: demotools.Ledger, Input: protocol.TextPayload(""),
			CallIndex: 1, Attempt: 1, AttemptLimit: 1, IdempotencyKey: fmt.Sprintf("intruder/%d", i), OutputLimit: 1024,
		}
		data, err := codec.SealInvoke(inv)
		if err != nil {
			t.Fatal(err)
		}
		m := data
		m.Header.Set(fabric.HeaderKey, keyID)
		m.Subject = "splash.invoke." + demotools.Ledger
		m.Header.Set(fabric.HeaderMsgID, fabric.MsgID(inv.IdempotencyKey, inv.Attempt))
		m.Header.Set(fabric.HeaderHost, hostID)
		if _, err := hjs.PublishMsg(ctx, m); err != nil {
			t.Fatalf("publish forged invocation: %v", err)
		}
	}
	ojs := s.opsJS()
	testwait.Until(t, time.Minute, "forged invocations consumed", func() bool {
		c, err := ojs.Consumer(ctx, fabric.StreamInvoke, fabric.ConsumerName(demotools.Ledger))
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.Delivered.Consumer >= forged
	})

	// 3. A pool's credentials: publishing an invocation is refused by the
	// server; forged results (wrong key) reach the host, which
	// rejects and counts them.
	v := &natstest.Violations{}
	wnc, err := s.connectPool("demo", nats.ErrorHandler(v.Handler))
	if err != nil {
		t.Fatal(err)
	}
	if err := wnc.Publish("splash.invoke."+demotools.Ledger, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	_ = wnc.Flush()
	testwait.Until(t, 10*time.Second, "worker refused publishing an invocation", func() bool {
		return v.Has("splash.invoke." + demotools.Ledger)
	})
	wjs, err := jetstream.New(wnc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range forged {
		rid := fmt.Sprintf("intruder-%d", i)
		res, err := codec.SealWorker(rid, 1, 2, protocol.ResultMessage(protocol.Result{
			RequestID: rid, Attempt: 1, Status: protocol.ResultSucceeded, Payload: &protocol.WorkerPayload{Format: protocol.FormatText, Text: "1"},
		}))
		if err != nil {
			t.Fatal(err)
		}
		m := res
		m.Subject = fabric.EventsSubject(hostID, demotools.Ledger)
		m.Header.Set(fabric.HeaderTool, demotools.Ledger)
		m.Header.Set(fabric.HeaderKey, keyID)
		m.Header.Set(fabric.HeaderMsgID, codec.EventMsgID(rid, 1, protocol.KindResult))
		if _, err := wjs.PublishMsg(ctx, m); err != nil {
			t.Fatalf("publish forged result: %v", err)
		}
	}
	testwait.Until(t, time.Minute, "host counted the forged frames", func() bool {
		after, err := api.metrics(ctx)
		if err != nil {
			return false
		}
		got := metricSum(after, "splash_auth_failures_total", map[string]string{"reason": "bad_tag"}) -
			metricSum(before, "splash_auth_failures_total", map[string]string{"reason": "bad_tag"})
		return got >= forged
	})

	// 4. The API refuses a missing or wrong token.
	for _, tok := range []string{"", "wrong-token"} {
		err := api.do(ctx, "POST", "/v1/sessions", tok, map[string]any{"source": `await tool.start("demo.ledger", "")`}, nil)
		var ae *apiError
		if !errors.As(err, &ae) || ae.Status != 401 {
			t.Errorf("submit with token %q: %v, want 401", tok, err)
		}
	}

	// Nothing ran: no effect, no operation, no session.
	counts, err := demotools.LedgerCounts(ctx, ojs)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 0 {
		t.Errorf("ledger ran for intruders: %v", counts)
	}
	after, err := api.metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range []string{"splash_operations_started_total", "splash_operations_finished_total", "splash_sessions_total"} {
		if d := metricSum(after, fam, nil) - metricSum(before, fam, nil); d != 0 {
			t.Errorf("%s moved by %v", fam, d)
		}
	}
	tokenFailures := metricSum(after, "splash_auth_failures_total", map[string]string{"reason": "missing_token"}) +
		metricSum(after, "splash_auth_failures_total", map[string]string{"reason": "wrong_token"})
	t.Logf("intruders: 1 anonymous connection, %d forged invocations, %d forged results, 1 worker invocation, 2 API calls refused; host auth failures bad_tag=%v, token=%v",
		forged, forged, metricSum(after, "splash_auth_failures_total", map[string]string{"reason": "bad_tag"}), tokenFailures)
}

// TestScenarioScale (scenario 1): the pool grows from one worker to five
// and shrinks back to one under load. The compose Prometheus follows both
// changes (every host and worker target up, the removed ones gone), and
// what it scraped from the host agrees with the host's /metrics and the
// audit.
func TestScenarioScale(t *testing.T) {
	s, api := cluster(t, 1)
	prom := s.prometheus()
	l := startLoad(t, api, loadClients)
	during(t, 8*time.Second)
	s.up(5)
	if n := len(s.containers("worker")); n != 5 {
		t.Fatalf("%d workers, want 5", n)
	}
	// At least 10s at five workers, and as long as Prometheus takes to
	// discover and scrape them (up to a refresh and a scrape interval).
	atFive := time.Now().Add(10 * time.Second)
	s.waitScrapeTargets(prom)
	during(t, time.Until(atFive))
	s.up(1)
	if n := len(s.containers("worker")); n != 1 {
		t.Fatalf("%d workers, want 1", n)
	}
	during(t, 8*time.Second)
	c := audit(t, s, l, noFailures)

	s.waitScrapeTargets(prom)
	if got := s.waitPromAgrees(prom, api, "splash_operations_finished_total", map[string]string{"tool": demotools.Ledger, "outcome": "succeeded"}); got != c.ledgerOK || int(got) != c.ledgerKeys {
		t.Errorf("prometheus: %v demo.ledger operations succeeded; the audit scraped %v and counted %d ledger keys", got, c.ledgerOK, c.ledgerKeys)
	}
	if got := s.waitPromAgrees(prom, api, "splash_sessions_total", map[string]string{"state": "completed"}); int(got) != c.completed {
		t.Errorf("prometheus: %v sessions completed, the audit found %d", got, c.completed)
	}
}

// TestScenarioKillWorker (scenario 2): a worker is killed (SIGKILL) while
// it holds calls. Its calls are redelivered once the ack wait
// (SPLASH_ACK_WAIT, 10s in docker-compose.yml) passes, well within
// demo.sleep's 30s deadline, and complete elsewhere, once. Only a
// demo.ledger call it held mid-effect (a claim in the journal) may end
// indeterminate instead: whether its effect happened is unknown.
func TestScenarioKillWorker(t *testing.T) {
	s, api := cluster(t, 3)
	l := startLoad(t, api, loadClients)
	during(t, 6*time.Second)
	v := s.pickVictim()
	if out, err := execDocker("kill", v.container); err != nil {
		t.Fatalf("docker kill: %v %s", err, out)
	}
	s.logf("killed worker %s", v.workerID)
	s.lost(v)
	during(t, 20*time.Second)
	auditLostWorker(t, s, l, v)
}

// TestScenarioNATSNodeDown (scenario 3): one NATS node stops mid-load and
// comes back. No worker is lost, so every call completes: a journal claim
// whose answer the node took with it is resumed by the worker that wrote
// it (idempotency.Resumed) instead of meeting it as another holder's and
// ending indeterminate.
func TestScenarioNATSNodeDown(t *testing.T) {
	s, api := cluster(t, 3)
	l := startLoad(t, api, loadClients)
	during(t, 8*time.Second)
	s.mustCompose("stop", "--timeout", "5", "n2")
	during(t, 15*time.Second)
	s.mustCompose("start", "n2")
	s.waitHealthy(2 * time.Minute)
	during(t, 10*time.Second)
	audit(t, s, l, noFailures)
	unanswered, resumed := s.resumedClaims()
	s.logf("journal claims whose answer was lost: %d, found to be the writer's own on asking again: %d", unanswered, resumed)
}

// TestScenarioPartitionWorker (scenario 4): a worker is cut off the network
// while it holds calls, then reconnected. Its calls are redelivered once
// the ack wait passes and complete elsewhere; the cut lasts longer than
// the journal lease (30s), so the demo.ledger calls it held mid-effect are
// taken over meanwhile and end indeterminate, at most as many as it held.
func TestScenarioPartitionWorker(t *testing.T) {
	s, api := cluster(t, 3)
	l := startLoad(t, api, loadClients)
	during(t, 8*time.Second)
	v := s.pickVictim()
	network := s.project + "_fabric"
	if out, err := execDocker("network", "disconnect", network, v.container); err != nil {
		t.Fatalf("network disconnect: %v %s", err, out)
	}
	s.logf("worker %s cut off", v.workerID)
	s.lost(v)
	during(t, 34*time.Second)
	if out, err := execDocker("network", "connect", network, v.container); err != nil {
		t.Fatalf("network connect: %v %s", err, out)
	}
	s.waitHealthy(2 * time.Minute)
	during(t, 8*time.Second)
	auditLostWorker(t, s, l, v)
}

// TestScenarioRollingRestart (scenario 5): every worker restarts, one at a
// time, under load.
func TestScenarioRollingRestart(t *testing.T) {
	s, api := cluster(t, 3)
	l := startLoad(t, api, loadClients)
	during(t, 5*time.Second)
	for _, id := range s.containers("worker") {
		if out, err := execDocker("restart", "--time", "15", id); err != nil {
			t.Fatalf("docker restart: %v %s", err, out)
		}
		s.waitHealthy(2 * time.Minute)
	}
	during(t, 5*time.Second)
	audit(t, s, l, noFailures)
}

// TestScenarioRestartHost (scenario 6): the host restarts under load,
// first gracefully (SIGTERM, as `docker-compose restart` sends) and then by
// a kill. Every script the host accepted completes: the next process
// resumes the sessions the last one left from their ledgers, and takes
// the answers that came meanwhile. No worker effect is repeated.
func TestScenarioRestartHost(t *testing.T) {
	s, api := cluster(t, 3)
	l := startLoad(t, api, loadClients)
	during(t, 8*time.Second)
	s.mustCompose("restart", "--timeout", "15", "host")
	s.waitHealthy(2 * time.Minute)
	api.setBase(s.apiURL())
	s.logf("host restarted, API at %s", api.baseURL())
	during(t, 10*time.Second)

	victim := s.containers("host")[0]
	if out, err := execDocker("kill", victim); err != nil {
		t.Fatalf("docker kill: %v %s", err, out)
	}
	s.logf("host killed")
	s.mustCompose("start", "host")
	s.waitHealthy(2 * time.Minute)
	api.setBase(s.apiURL())
	s.logf("host started again, API at %s", api.baseURL())
	during(t, 10*time.Second)

	c := audit(t, s, l, resumedOutcomes)
	if c.completed == 0 {
		t.Errorf("no script completed")
	}
}

// TestScenarioHostFailover (scenario 9): two hosts on one fabric, load on
// the first; the first is killed and stays down. The second adopts its
// suspended sessions once the first's lease lapses, takes the answers its
// workers send for them, and answers for every session the first
// accepted: every accepted script completes, each effect once.
func TestScenarioHostFailover(t *testing.T) {
	s, api := cluster(t, 3)
	s.mustCompose("--profile", "failover", "up", "-d", "--no-color", "host2")
	s.waitHealthy(2 * time.Minute)
	second := "http://" + s.port("host2", 8080)
	l := startLoad(t, api, loadClients)
	during(t, 8*time.Second)

	victim := s.containers("host")[0]
	if out, err := execDocker("kill", victim); err != nil {
		t.Fatalf("docker kill: %v %s", err, out)
	}
	killed := time.Now()
	s.logf("first host killed; clients move to %s", second)
	api.setBase(second)
	l.mu.Lock()
	held := append([]string(nil), l.sessions...)
	l.mu.Unlock()
	// Adopted: the second host drives (or has finished) every session the
	// first had accepted.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	testwait.Until(t, 2*time.Minute, "the second host to drive every session of the first", func() bool {
		for _, id := range held {
			ss, err := api.session(ctx, id)
			if err != nil || !(ss.terminal() || len(ss.Operations) > 0) {
				return false
			}
		}
		return true
	})
	s.logf("adoption: every session of the first host driven by the second %v after the kill", time.Since(killed).Round(100*time.Millisecond))
	during(t, 8*time.Second)
	c := audit(t, s, l, resumedOutcomes)
	if c.completed == 0 {
		t.Errorf("no script completed")
	}
}

func execDocker(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := execCommand(ctx, "docker", args...)
	return out, err
}
