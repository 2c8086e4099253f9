package itest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/httpapi/apitoken"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

var (
	fairSeeds = flag.Int("fairload.seeds", 0, "random seeds of TestHostStaysFairUnderLoad beside its fixed ones")
	fairSeed  = flag.Uint64("fairload.seed", 0, "replay one seed of TestHostStaysFairUnderLoad")
)

// fairHost is a host over real NATS with its API in front, serving two
// owners: an attacker and an ordinary client.
type fairHost struct {
	c                *cluster
	api              *httptest.Server
	attacker, client *apiclient.Client
}

// The scripts of the load.
const (
	// holderScript holds 64 MiB across an await, within its session's
	// 256 MiB.
	holderScript = `const kept = []; for (let i = 0; i < 16; i++) kept.push("x".repeat(4 * 2**20) + i); await tool.start("it.sleep", "800"); kept.length`
	burnerScript = `while (true) {}`
	floodScript  = `await tool.start("it.sleep", "300")`
	// ordinaryScript is the client's: two calls in a row.
	ordinaryScript = `const a = await tool.start("it.echo", "x"); await tool.start("it.echo", a + "y")`
	ordinaryValue  = "xy"
)

// liveHeapNow is the heap that survives a collection.
func liveHeapNow() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// newFairHost starts it, each owner allowed rate submissions a second.
func newFairHost(t testing.TB, rate float64) *fairHost {
	t.Helper()
	events := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{})
	// Room for about eight holders above what the process holds; the
	// runtime's soft limit follows it, as splash host sets it.
	budget := liveHeapNow() + 512<<20
	old := debug.SetMemoryLimit(budget)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	c := newCluster(t, options{
		tools:        []toolspec.Spec{tool("it.echo"), tool("it.sleep")},
		limits:       hostloop.Limits{MaxSuspendedSessions: 120, MaxSessionsPerOwner: 40},
		memoryBudget: budget,
		also:         []hostloop.Observer{events},
	})
	t.Cleanup(events.Close)
	c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.echo"), workeragent.HandlerFunc(echo)))
		must(t, a.HandleTool(c.tool("it.sleep"), workeragent.HandlerFunc(func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
			ms, _ := strconv.Atoi(call.Input.Text)
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
				return workeragent.Result("slept"), nil
			case <-ctx.Done():
				return workeragent.Output{}, context.Cause(ctx)
			}
		})))
	})
	var entries []apitoken.Entry
	for _, name := range []string{"attacker", "client"} {
		tok, err := apitoken.New(apitoken.Spec{Name: name, Scopes: []apitoken.Scope{apitoken.ScopeSubmit, apitoken.ScopeRead, apitoken.ScopeCancel}, Tools: []string{">"}})
		must(t, err)
		entries = append(entries, apitoken.Entry{Digest: apitoken.DigestOf(name + "-secret"), Token: tok})
	}
	set, err := apitoken.NewSet(entries)
	must(t, err)
	api := httptest.NewServer(httpapi.New(c.loop, httpapi.Config{
		Tokens: set, Events: events,
		Gate: httpapi.NewGate(c.loop, httpapi.GateConfig{SubmitRate: rate, SubmitBurst: int(rate)}),
	}))
	t.Cleanup(api.Close)
	h := &fairHost{c: c, api: api}
	for _, p := range []struct {
		c    **apiclient.Client
		name string
	}{{&h.attacker, "attacker"}, {&h.client, "client"}} {
		cl, err := apiclient.New(api.URL, p.name+"-secret")
		must(t, err)
		*p.c = cl
	}
	return h
}

// attackRefusals are the codes a refusal of the attacker may have: its
// quotas, the host's bounds, its memory.
var attackRefusals = map[string]bool{"submission_rate": true, "session_quota": true, "host_busy": true, "memory_pressure": true}

// attackEnds are how the attacker's sessions may end besides completing.
var attackEnds = map[string]bool{"execution_budget": true, "memory_budget": true}

// phaseLoad is what one phase throws at the host.
type phaseLoad struct {
	holders, burners, flood, ordinary int
}

// phaseResult is what one phase saw.
type phaseResult struct {
	refused  map[string]int // attacker refusals by code
	ended    map[string]int // attacker sessions by how they ended
	ordinary []time.Duration
}

// runPhase throws load at h, all at once in an order rng chooses, and
// waits for every session to end. It fails the test for a refusal or an
// end without its code, or an ordinary script that did not complete.
func (h *fairHost) runPhase(t testing.TB, rng *rand.Rand, load phaseLoad) phaseResult {
	t.Helper()
	ctx := context.Background()
	var jobs []func()
	var mu sync.Mutex
	res := phaseResult{refused: map[string]int{}, ended: map[string]int{}}
	var attackIDs []string
	var failure error
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if failure == nil {
			failure = err
		}
	}
	attack := func(req apiclient.SubmitRequest) func() {
		return func() {
			s, err := h.attacker.Submit(ctx, req)
			var apiErr *apiclient.Error
			switch {
			case err == nil:
				mu.Lock()
				attackIDs = append(attackIDs, s.ID)
				mu.Unlock()
			case errors.As(err, &apiErr) && attackRefusals[apiErr.Code] && apiErr.RetryAfter > 0:
				mu.Lock()
				res.refused[apiErr.Code]++
				mu.Unlock()
			default:
				fail(fmt.Errorf("attacker refused without a quota's code and Retry-After: %w", err))
			}
		}
	}
	for range load.holders {
		jobs = append(jobs, attack(apiclient.SubmitRequest{Source: holderScript, ExecutionBudgetMS: 10_000}))
	}
	for range load.burners {
		jobs = append(jobs, attack(apiclient.SubmitRequest{Source: burnerScript, ExecutionBudgetMS: int64(300 + rng.IntN(1200))}))
	}
	for range load.flood {
		jobs = append(jobs, attack(apiclient.SubmitRequest{Source: floodScript}))
	}
	for range load.ordinary {
		jobs = append(jobs, func() {
			start := time.Now()
			s, err := h.client.Submit(ctx, apiclient.SubmitRequest{Source: ordinaryScript, WaitMS: 15_000})
			if err != nil {
				fail(fmt.Errorf("the ordinary client was refused: %w", err))
				return
			}
			for !s.Terminal() {
				if s, err = h.client.Session(ctx, s.ID); err != nil {
					fail(fmt.Errorf("the ordinary client lost its session: %w", err))
					return
				}
			}
			took := time.Since(start)
			if s.State != apiclient.StateCompleted || s.Value == nil || *s.Value != ordinaryValue {
				fail(fmt.Errorf("an ordinary script ended %s %q (%s)", s.State, s.ErrorCode, s.Error))
				return
			}
			mu.Lock()
			res.ordinary = append(res.ordinary, took)
			mu.Unlock()
		})
	}
	rng.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(j)
	}
	wg.Wait()
	if failure != nil {
		t.Fatal(failure)
	}
	for _, id := range attackIDs {
		var s apiclient.Session
		testwait.Until(t, 60*time.Second, "attacker session "+id+" to end", func() bool {
			var err error
			s, err = h.attacker.Session(ctx, id)
			return err == nil && s.Terminal()
		})
		switch {
		case s.State == apiclient.StateCompleted:
			res.ended["completed"]++
		case s.State == apiclient.StateFailed && attackEnds[s.ErrorCode]:
			res.ended[s.ErrorCode]++
		default:
			t.Fatalf("attacker session %s ended %s %q (%s)", id, s.State, s.ErrorCode, s.Error)
		}
	}
	return res
}

// alive checks the host answers: its health, and a status read.
func (h *fairHost) alive(t testing.TB, phase string) {
	t.Helper()
	resp, err := http.Get(h.api.URL + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: healthz %v, %v", phase, resp, err)
	}
	resp.Body.Close()
	if _, err := h.c.loop.Operations(context.Background()); err != nil {
		t.Fatalf("%s: the loop does not answer: %v", phase, err)
	}
}

// TestHostStaysFairUnderLoad throws randomized phases at one host: an
// attacker holding memory, burning CPU and flooding submissions from one
// token, an ordinary client's scripts from another. After each phase the
// host answers, every ordinary script completed, every refusal of the
// attacker had a quota's code and Retry-After, and each of its sessions
// ended completed or with its budget's code. Replay a seed with
// -fairload.seed; add random ones with -fairload.seeds.
func TestHostStaysFairUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs seconds of load per seed")
	}
	fixed, phases := []uint64{1, 2}, 3
	if raceEnabled {
		fixed, phases = []uint64{1}, 2
	}
	for _, seed := range testwait.Seeds(fixed, *fairSeeds, *fairSeed) {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			h := newFairHost(t, 40)
			rng := rand.New(rand.NewPCG(seed, seed))
			for phase := range phases {
				load := phaseLoad{holders: rng.IntN(12), burners: rng.IntN(6), flood: rng.IntN(120), ordinary: 8}
				res := h.runPhase(t, rng, load)
				name := fmt.Sprintf("phase %d %+v", phase, load)
				h.alive(t, name)
				t.Logf("seed %d %s: refused %v, ended %v, ordinary p50 %v max %v", seed, name, res.refused, res.ended,
					percentile(res.ordinary, 50), percentile(res.ordinary, 100))
			}
		})
	}
}

// percentile is the p-th percentile of d (100: the worst).
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// BenchmarkOrdinaryClientUnderAttack is the ordinary client's latency
// (submission to completion of a two-call script, over the API) while
// another token holds memory, burns CPU and floods, beside the same with
// nobody attacking: its p50 and p99 in milliseconds.
func BenchmarkOrdinaryClientUnderAttack(b *testing.B) {
	for _, attacked := range []bool{false, true} {
		name := "quiet"
		if attacked {
			name = "attacked"
		}
		b.Run(name, func(b *testing.B) {
			// The client submits one script after another, faster than
			// the load test's rate quota when nobody attacks.
			h := newFairHost(b, 1000)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if attacked {
				rng := rand.New(rand.NewPCG(7, 7))
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						h.runPhase(b, rng, phaseLoad{holders: 6, burners: 4, flood: 60})
					}
				})
			}
			var lat []time.Duration
			for b.Loop() {
				res := h.runPhase(b, rand.New(rand.NewPCG(1, 1)), phaseLoad{ordinary: 1})
				lat = append(lat, res.ordinary...)
			}
			close(stop)
			wg.Wait()
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
			b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
		})
	}
}
