package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/recordauth"
)

// victim is a worker a scenario is about to lose (killed or cut off),
// and what it held when it went.
type victim struct {
	container string
	// workerID is the worker's --worker-id: its container's host name,
	// which begins every journal owner id of its calls.
	workerID string
	// pool is the pool it serves: its claims are in that pool's journal,
	// sealed under that pool's ring.
	pool string
	addr string // its /metrics address on the compose network
	// js reads the journal as the ops user; connected before the loss,
	// so that counting the victim's claims takes no compose command.
	js jetstream.JetStream

	// inFlight is the victim's splash_worker_in_flight just before it was
	// lost, by tool (handlers running), when its /metrics answered.
	inFlight map[string]float64
	// held counts the journal claims the victim held once it was lost:
	// records running under one of its owner ids, or already taken over
	// from one (should the count come after a lease ran out). These are
	// the calls it held mid-effect, the only ones that may end
	// indeterminate: the fabric cannot tell whether their effect
	// happened, and refuses to run it again.
	held int
}

// pickVictim chooses the first worker container (of the pool "demo") and
// reads its in-flight gauge, just before the scenario loses it.
func (s *stack) pickVictim() *victim {
	s.t.Helper()
	return s.pickVictimOf("worker", "demo")
}

// pickVictimOf is pickVictim among the containers of service, whose
// workers serve pool.
func (s *stack) pickVictimOf(service, pool string) *victim {
	s.t.Helper()
	id := s.containers(service)[0]
	st := s.inspect(id)[0]
	v := &victim{container: id, workerID: st.Config.Hostname, pool: pool}
	if v.workerID == "" {
		s.fatalf("worker %s has no host name", st.Name)
	}
	if n, ok := st.NetworkSettings.Networks[s.project+"_fabric"]; ok && n.IPAddress != "" {
		v.addr = fmt.Sprintf("%s:%d", n.IPAddress, workerPort)
	}
	v.js = s.opsJS()
	v.inFlight = s.workerInFlight(v.addr)
	return v
}

// workerInFlight scrapes a worker's splash_worker_in_flight by tool; nil
// when its /metrics cannot be reached from the machine running the test.
func (s *stack) workerInFlight(addr string) map[string]float64 {
	if addr == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(s.t.Context(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.logf("victim metrics at %s: %v (in-flight gauge not read)", addr, err)
		return nil
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for _, m := range fams["splash_worker_in_flight"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "tool" {
				out[l.GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// lost counts the victim's journal claims once it can write no more. The
// pause lets a write it sent just before it went reach the stream first.
func (s *stack) lost(v *victim) {
	s.t.Helper()
	during(s.t, time.Second)
	ctx, cancel := context.WithTimeout(s.t.Context(), time.Minute)
	defer cancel()
	kv, err := v.js.KeyValue(ctx, fabric.JournalBucket(v.pool))
	if err != nil {
		s.fatalf("journal bucket: %v", err)
	}
	// Opened as the pool's workers open them, with the key they derive
	// from its ring.
	key, err := recordauth.Derive(s.pools[v.pool].Ring, recordauth.StoreJournal)
	if err != nil {
		s.fatalf("journal key of pool %s: %v", v.pool, err)
	}
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		s.fatalf("journal watch: %v", err)
	}
	defer func() { _ = w.Stop() }()
	records := 0
	for done := false; !done; {
		select {
		case <-ctx.Done():
			s.fatalf("journal watch: %v", ctx.Err())
		case e := <-w.Updates():
			if e == nil {
				// The end of the records present when the watch began.
				done = true
				break
			}
			records++
			body, err := key.Open(e.Key(), e.Value())
			if err != nil {
				s.fatalf("journal record %s: %v", e.Key(), err)
			}
			var r idempotency.Record
			if err := json.Unmarshal(body, &r); err != nil {
				s.fatalf("journal record %s: %v", e.Key(), err)
			}
			mine := func(owner string) bool { return strings.HasPrefix(owner, v.workerID+"/") }
			if (r.State == idempotency.StateRunning && mine(r.Owner)) || (r.TakenOver && mine(r.PreviousOwner)) {
				v.held++
			}
		}
	}
	s.logf("worker %s lost holding %d journal claims (of %d records); handlers in flight just before: %v", v.workerID, v.held, records, v.inFlightString())
}

func (v *victim) inFlightString() string {
	if v.inFlight == nil {
		return "not read"
	}
	var parts []string
	for _, tool := range []string{demotools.Ledger, "demo.sleep"} {
		parts = append(parts, fmt.Sprintf("%s %v", tool, v.inFlight[tool]))
	}
	for tool, n := range v.inFlight {
		if tool != demotools.Ledger && tool != "demo.sleep" && n > 0 {
			parts = append(parts, fmt.Sprintf("%s %v", tool, n))
		}
	}
	return strings.Join(parts, ", ")
}

// auditLostWorker audits a scenario that lost v: every script completes
// except those whose demo.ledger call v held mid-effect, which may end
// indeterminate (never timed out); there are at most as many as the
// claims v held.
func auditLostWorker(t *testing.T, s *stack, l *load, v *victim) auditCounts {
	t.Helper()
	c := audit(t, s, l, lostWorkerOutcomes)
	if c.indeterminate > v.held {
		s.errorf("%d calls ended indeterminate; the lost worker %s held %d claims", c.indeterminate, v.workerID, v.held)
	}
	s.logf("lost worker %s: held %d claims, %d calls ended indeterminate (at most that), %d timed out (none allowed)",
		v.workerID, v.held, c.indeterminate, c.timedOut)
	return c
}

// resumedClaims counts, in the workers' logs, the journal claims whose
// answer was lost and that their writer then asked for again
// (workeragent's beginClaim), and how many of those it found its own.
func (s *stack) resumedClaims() (unanswered, resumed int) {
	s.t.Helper()
	out, err := s.compose(time.Minute, "logs", "--no-color", "worker")
	if err != nil {
		s.logf("worker logs: %v", err)
		return 0, 0
	}
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(line, "journal claim unanswered"):
			unanswered++
		case strings.Contains(line, "journal claim answered") && strings.Contains(line, "outcome=resumed"):
			resumed++
		}
	}
	return unanswered, resumed
}
