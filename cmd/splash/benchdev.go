package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/internal/benchharness"
)

// devBenchScript is what every operation of the dev runner submits: the
// shape of benchharness.NoopScript, calling the dev catalog's echo, which
// answers its input at once and is idempotent as the bench's no-op is.
const devBenchScript = `const r = await tool.start("` + demotools.Echo + `", "x"); r`

// devBenchWait is how long a submission waits for its session's end: the
// API's maximum.
const devBenchWait = httpapi.DefaultMaxWait

// devBench builds the runner of `splash bench --dev`: the stack `splash
// dev` starts with its defaults (embedded node with users and passwords,
// durable sessions, catalog watch, metrics, the HTTP API and its console
// index, a pool of workers serving the demo catalog), driven the way a
// client that wants an outcome drives it: each operation is one POST
// /v1/sessions that waits for the session's end (wait_ms), and only if
// the wait runs out, the session's event stream read to its terminal
// state. streams is the most event streams open at once, which
// the host's stream limits must admit: they are the only defaults the
// runner changes, since the default per-token bound (64) would refuse a
// single client with more operations in flight than that.
// The first error of a failed run is written to errs, since
// testing.Benchmark keeps a benchmark's failure message to itself.
// flags are more of dev's flags.
func devBench(streams int, errs io.Writer, flags ...string) benchharness.NewRunner {
	return func(b *testing.B, workers int, complete func(id uint64)) benchharness.RoundTripper {
		r, err := startDevRunner(b.TempDir(), workers, streams, complete, flags)
		if err != nil {
			fmt.Fprintln(errs, err)
			b.Fatal(err)
		}
		r.errs = errs
		return r
	}
}

// devRunner is a client of one dev stack.
type devRunner struct {
	stack    *devStack
	client   *apiclient.Client
	http     *http.Client
	complete func(uint64)
	// ctx ends the event streams still open at Close.
	ctx    context.Context
	cancel context.CancelFunc
	// waits are the goroutines following an event stream each.
	waits sync.WaitGroup
	// failed is the first error of an operation; the next Submit
	// returns it, so a broken run stops rather than waiting out the
	// harness's timeout.
	failed atomic.Pointer[error]
	errs   io.Writer
}

func startDevRunner(dataDir string, workers, streams int, complete func(uint64), flags []string) (*devRunner, error) {
	token, err := randomToken()
	if err != nil {
		return nil, err
	}
	var cfg devConfig
	var lf logFlags
	fs := devCommand.newFlagSet(&cfg, &lf)
	// Flags only, no environment: the runner measures dev's defaults
	// whatever the shell running the bench exports.
	_, err = fs.parse(append([]string{
		"--data-dir", dataDir, "--api-addr", "127.0.0.1:0", "--api-token", token,
		"--workers", strconv.Itoa(workers),
		"--max-streams", strconv.Itoa(streams), "--max-streams-per-token", strconv.Itoa(streams),
		"--http-max-conns", strconv.Itoa(2*streams + 64),
		// One client is the whole load: the quotas that keep a client
		// to its share of a host would measure themselves.
		"--http-max-conns-per-client", "0", "--submit-rate", "0",
	}, flags...), func(string) (string, bool) { return "", false })
	if err != nil {
		return nil, fmt.Errorf("bench: dev flags: %w", err)
	}
	// Dev's default logger, writing nowhere: its records are still
	// built and formatted, as they are for a user.
	log, err := lf.logger(io.Discard)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	stack, err := cfg.start(ctx, log)
	if err == nil && stack == nil {
		err = fmt.Errorf("bench: dev did not start")
	}
	if err != nil {
		cancel()
		return nil, err
	}
	// One client, as a load generator holding its connections open: with
	// the default two idle connections per host, most requests at 64 in
	// flight would open a new one and measure connection setup instead.
	hc := &http.Client{Transport: &http.Transport{
		MaxIdleConns: 2*streams + 64, MaxIdleConnsPerHost: 2*streams + 64, IdleConnTimeout: time.Minute,
	}}
	client, err := apiclient.New(stack.banner.apiURL, stack.token, apiclient.WithHTTPClient(hc))
	if err != nil {
		cancel()
		stack.stop()
		return nil, err
	}
	return &devRunner{stack: stack, client: client, http: hc, complete: complete, ctx: ctx, cancel: cancel}, nil
}

// Submit posts the script and follows the new session on its own
// goroutine until it ends.
func (r *devRunner) Submit(id uint64) error {
	if err := r.failed.Load(); err != nil {
		return *err
	}
	s, err := r.client.Submit(r.ctx, apiclient.SubmitRequest{Source: devBenchScript, WaitMS: devBenchWait.Milliseconds()})
	if err != nil {
		return r.fail(fmt.Errorf("bench: dev submit: %w", err))
	}
	if s.State != apiclient.StateSuspended {
		return r.fail(r.finished(id, s))
	}
	r.waits.Go(func() { _ = r.fail(r.await(id, s.ID)) })
	return nil
}

// fail keeps and reports the first error of the run.
func (r *devRunner) fail(err error) error {
	if err != nil && r.failed.CompareAndSwap(nil, &err) {
		fmt.Fprintln(r.errs, err)
	}
	return err
}

// await reads the session's event stream to its terminal state.
func (r *devRunner) await(id uint64, session string) error {
	stream, err := r.client.Events(r.ctx, session)
	if err != nil {
		return fmt.Errorf("bench: dev events of %s: %w", session, err)
	}
	defer stream.Close()
	for {
		ev, err := stream.Next()
		if err != nil {
			return fmt.Errorf("bench: dev events of %s: %w", session, err)
		}
		if ev.Terminal() {
			return r.finished(id, ev.State)
		}
	}
}

// finished reports a session that ended: completed is the only outcome
// the echo script may have.
func (r *devRunner) finished(id uint64, s apiclient.Session) error {
	if s.State != apiclient.StateCompleted {
		return fmt.Errorf("bench: dev session %s ended %s: %s", s.ID, s.State, s.Error)
	}
	r.complete(id)
	return nil
}

// Close ends any stream still open, then stops the stack as `splash dev`
// stops on SIGTERM.
func (r *devRunner) Close() {
	r.cancel()
	r.waits.Wait()
	r.stack.stop()
	r.http.CloseIdleConnections()
}
