package toolproc_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolproc"
)

var (
	modelSeeds = flag.Int("toolproc.seeds", 0, "run the randomized supervisor test with this many random seeds besides the fixed ones")
	modelSeed  = flag.Uint64("toolproc.seed", 0, "replay the randomized supervisor test with this seed alone")
)

// fixedSeeds always run, so go test explores the same interleavings every
// time; -toolproc.seeds adds random ones, -toolproc.seed replays one.
var fixedSeeds = []uint64{1, 2, 3, 42}

// TestSupervisorRandomized drives one supervisor through generated runs:
// calls of every behaviour (answers, chunks, cancellations, crashes, hung
// calls with deadlines, each kind of bad frame) started at random moments
// by concurrent callers, then a Close. It checks after every call that its
// outcome is one its behaviour allows, and at the end that every call
// ended exactly once, no process held more calls than its concurrency, a
// process was started only after the previous one was lost, and every
// goroutine and process is gone (goleak, in TestMain).
func TestSupervisorRandomized(t *testing.T) {
	seeds := testwait.Seeds(fixedSeeds, *modelSeeds, *modelSeed)
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if trace, err := runModel(seed); err != nil {
				t.Fatalf("seed %d: %v\nreplay: go test ./toolproc -run TestSupervisorRandomized -toolproc.seed %d\n%s",
					seed, err, seed, strings.Join(trace, "\n"))
			}
		})
	}
}

// behaviour is one kind of call the model generates, with the outcomes it
// allows. A call can always be lost with its process when another call
// poisoned it (collateral), except where noted.
type behaviour struct {
	input    string
	cancel   bool          // close Request.Cancel after a random delay
	deadline time.Duration // 0: none
	allowed  func(o toolproc.Outcome) bool
}

func answered(text string) func(toolproc.Outcome) bool {
	return func(o toolproc.Outcome) bool {
		return o.Kind == toolproc.Answered && o.Result.Payload != nil && o.Result.Payload.Text == text || collateral(o)
	}
}

func collateral(o toolproc.Outcome) bool { return o.Kind == toolproc.Lost && !o.Watchdog }

var behaviours = []behaviour{
	{input: "echo:a", allowed: answered("a")},
	{input: "chunks:3", allowed: answered("streamed 3")},
	{input: "sleep:30ms", cancel: true, allowed: func(o toolproc.Outcome) bool {
		return o.Kind == toolproc.CancelAcknowledged || answered("slept")(o)
	}},
	{input: "finish:30ms", cancel: true, allowed: func(o toolproc.Outcome) bool {
		return answered("finished")(o) || answered("finished anyway")(o)
	}},
	{input: "retry", allowed: func(o toolproc.Outcome) bool {
		return o.Kind == toolproc.Answered && o.Result.Status == protocol.ResultRetryTransient || collateral(o)
	}},
	{input: "crash", allowed: collateral},
	{input: "hang", deadline: 150 * time.Millisecond, allowed: func(o toolproc.Outcome) bool {
		return o.Kind == toolproc.Lost // its own watchdog, or another's loss first
	}},
	{input: "bad:garbage", allowed: collateral},
	{input: "bad:replay", allowed: collateral},
	{input: "bad:wrongid", allowed: collateral},
	{input: "bad:twice", allowed: answered("x")},
}

func runModel(seed uint64) (trace []string, err error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	rec := &recorder{}
	cfg := testConfig(rec)
	cfg.Concurrency = 1 + rng.IntN(4)
	cfg.StopGrace = 200 * time.Millisecond
	s, err := toolproc.New(cfg)
	if err != nil {
		return nil, err
	}
	var (
		mu    sync.Mutex
		fails []string
	)
	note := func(format string, v ...any) {
		mu.Lock()
		trace = append(trace, fmt.Sprintf(format, v...))
		mu.Unlock()
	}
	note("concurrency %d", cfg.Concurrency)
	const calls = 24
	var wg sync.WaitGroup
	ended := make([]int, calls)
	for i := range calls {
		b := behaviours[rng.IntN(len(behaviours))]
		startAfter := time.Duration(rng.IntN(40)) * time.Millisecond
		cancelAfter := time.Duration(rng.IntN(40)) * time.Millisecond
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(startAfter) // generated arrival times, not synchronisation
			req := toolproc.Request{Invoke: invoke(b.input), Chunk: func(string) error { return nil }}
			if b.deadline > 0 {
				req.Deadline = time.Now().Add(b.deadline)
			}
			if b.cancel {
				c := make(chan struct{})
				req.Cancel = c
				time.AfterFunc(cancelAfter, func() { close(c) })
			}
			note("call %d: %s at +%v", i, b.input, startAfter)
			ctx, cancel := context.WithTimeout(context.Background(), testwait.DefaultTimeout)
			defer cancel()
			o := s.Call(ctx, req)
			mu.Lock()
			ended[i]++
			mu.Unlock()
			note("call %d: %s ended %v watchdog=%v stopped=%v err=%v", i, b.input, o.Kind, o.Watchdog, o.Stopped, o.Err)
			if o.Kind == toolproc.NotStarted && errors.Is(o.Err, context.DeadlineExceeded) {
				mu.Lock()
				fails = append(fails, fmt.Sprintf("call %d (%s) never got a process", i, b.input))
				mu.Unlock()
			} else if !b.allowed(o) {
				mu.Lock()
				fails = append(fails, fmt.Sprintf("call %d (%s) ended %v %+v (%v), which its behaviour does not allow", i, b.input, o.Kind, o.Result, o.Err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.DefaultTimeout)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		return trace, fmt.Errorf("close: %w", err)
	}
	for i, n := range ended {
		if n != 1 {
			fails = append(fails, fmt.Sprintf("call %d ended %d times", i, n))
		}
	}
	got := rec.snapshot()
	note("processes %d, restarts %d, watchdog stops %d, poisoned %v, max in flight %d",
		got.started, got.restarted, got.watched, got.poisoned, got.inFlight)
	switch {
	case got.inFlight > cfg.Concurrency:
		fails = append(fails, fmt.Sprintf("%d calls in flight in one process, concurrency %d", got.inFlight, cfg.Concurrency))
	case got.started > 0 && got.restarted != got.started-1:
		fails = append(fails, fmt.Sprintf("%d starts but %d restarts", got.started, got.restarted))
	}
	lost := 0
	for _, n := range got.poisoned {
		lost += n
	}
	// Every process but the last was lost, and each loss counted once;
	// the last one may have gone quietly at Close.
	if lost < got.started-1 || lost > got.started {
		fails = append(fails, fmt.Sprintf("%d processes but %d poisonings", got.started, lost))
	}
	if len(fails) > 0 {
		return trace, errors.New(strings.Join(fails, "; "))
	}
	return trace, nil
}
