package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

// loadScript makes one demo.ledger call (the effect the audit counts) and
// one short demo.sleep, so calls are in flight whenever a fault strikes.
const loadScript = `let n = await tool.start("demo.ledger", "");
let s = await tool.start("demo.sleep", "150ms");
n`

// load submits loadScript from a fixed number of clients until stopped.
type load struct {
	api *apiClient

	mu       sync.Mutex
	sessions []string
	// final holds each session's terminal state as its client saw it: the
	// host forgets the oldest finished sessions (it keeps 1024), so the
	// audit cannot ask for every one of them afterwards.
	final map[string]session
	// refused counts submissions the host refused or that failed in
	// transit (the host restarting): they were never accepted, so the
	// audit does not expect them to finish.
	refused int
	// refusals are the first errors of refused submissions, for the
	// audit's log: a refusal the host took anyway is told by its cause.
	refusals []string

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// startLoad runs clients concurrent submitters of loadScript, each
// waiting for its script to reach a terminal state before submitting the
// next one (a steady number of scripts in flight).
func startLoad(t *testing.T, api *apiClient, clients int) *load {
	t.Helper()
	return startLoadOf(t, api, clients, loadScript)
}

// startLoadOf is startLoad with another script.
func startLoadOf(t *testing.T, api *apiClient, clients int, script string) *load {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{api: api, stop: cancel, final: map[string]session{}}
	for range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for ctx.Err() == nil {
				// Not ctx: a submission cut off by the end of the load
				// could have been taken by the host without its id
				// reaching the audit.
				s, err := api.submit(context.Background(), script)
				l.mu.Lock()
				if err != nil {
					l.refused++
					if len(l.refusals) < maxRefusalsLogged {
						l.refusals = append(l.refusals, err.Error())
					}
				} else {
					l.sessions = append(l.sessions, s.ID)
				}
				l.mu.Unlock()
				if err != nil {
					// The host may be restarting; try again shortly.
					select {
					case <-ctx.Done():
					case <-time.After(200 * time.Millisecond):
					}
					continue
				}
				if fin, ok := waitTerminal(ctx, api, s.ID); ok {
					l.mu.Lock()
					l.final[s.ID] = fin
					l.mu.Unlock()
				}
			}
		}()
	}
	t.Cleanup(l.finish)
	return l
}

// maxRefusalsLogged bounds the refusal causes an audit logs.
const maxRefusalsLogged = 5

// waitTerminal polls a session until it is terminal (and returns it) or
// ctx ends.
func waitTerminal(ctx context.Context, api *apiClient, id string) (session, bool) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if s, err := api.session(ctx, id); err == nil && s.terminal() {
			return s, true
		}
		select {
		case <-ctx.Done():
			return session{}, false
		case <-tick.C:
		}
	}
}

// finish stops submitting and waits for the clients to return.
func (l *load) finish() {
	l.stop()
	l.wg.Wait()
}

// auditCounts is what an audit found, logged by every scenario.
type auditCounts struct {
	submitted, refused, completed, failed, indeterminate, timedOut, ledgerKeys int
	// hostStopped and hostRestarted count scripts that failed because the
	// host process holding them stopped, or was killed.
	hostStopped, hostRestarted int
	// ledgerOK and sessionsDone are the host's counters the audit compared.
	ledgerOK, sessionsDone float64
}

func (c auditCounts) String() string {
	return fmt.Sprintf("submitted %d (refused %d), completed %d, failed %d (indeterminate %d, timed out %d, host stopped %d, host restarted %d), ledger keys %d (each at most once); host metrics: demo.ledger succeeded %v, sessions completed %v",
		c.submitted, c.refused, c.completed, c.failed, c.indeterminate, c.timedOut, c.hostStopped, c.hostRestarted, c.ledgerKeys, c.ledgerOK, c.sessionsDone)
}

// failures says which failed scripts a scenario's audit accepts.
type failures int

const (
	// noFailures: every script completes.
	noFailures failures = iota
	// lostWorkerOutcomes: a script may fail only because its
	// demo.ledger call ended indeterminate: a call a lost worker held
	// mid-effect, which the fabric refuses to run again since it cannot
	// tell whether the effect happened (auditLostWorker bounds how many).
	// Nothing times out: the ack wait hands the lost worker's other calls
	// to the others well before any deadline. The host process is the
	// same throughout, so its metrics must agree exactly.
	lostWorkerOutcomes
	// resumedOutcomes: every accepted script completes, though the host
	// restarted under it (a durable session is resumed by the next
	// process); the metrics are those of the process now running, which
	// also finished sessions earlier ones accepted.
	resumedOutcomes
)

// How a failed script's error names an indeterminate or timed-out call.
const (
	indeterminate = "indeterminate"
	timedOut      = "timed_out"
)

// The error codes of a script lost with its host process (docs/api.md).
const (
	codeHostStopped   = "host_stopped"
	codeHostRestarted = "host_restarted"
)

// terminal waits until every script l submitted is terminal and returns
// each one's final state. A session the host does not know is lost and
// fails the test, and so does an empty load.
func (s *stack) terminal(l *load) map[string]session {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.t.Context(), 3*time.Minute)
	defer cancel()
	l.mu.Lock()
	ids := append([]string(nil), l.sessions...)
	final := make(map[string]session, len(ids))
	for id, ss := range l.final {
		final[id] = ss
	}
	l.mu.Unlock()
	if len(ids) == 0 {
		s.fatalf("audit: no script was accepted")
	}

	// waiting says which session the wait below stopped at, and how it
	// stood, should the wait run out.
	var waiting string
	defer func() {
		if s.t.Failed() && waiting != "" {
			s.note("still waiting for %s", waiting)
			s.logf("still waiting for %s", waiting)
		}
	}()
	testwait.Until(s.t, 3*time.Minute, "every submitted script terminal", func() bool {
		for _, id := range ids {
			if _, done := final[id]; done {
				continue
			}
			ss, err := l.api.session(ctx, id)
			var ae *apiError
			if errors.As(err, &ae) && ae.Status == 404 {
				s.fatalf("session %s unknown to the host: lost", id)
			}
			if err != nil || !ss.terminal() {
				desc, _ := json.Marshal(ss)
				waiting = fmt.Sprintf("session %s: %s (%v)", id, desc, err)
				return false
			}
			final[id] = ss
		}
		return true
	})
	waiting = "" // every one is
	return final
}

// audit stops the load and checks the scenario's outcome: every accepted
// script reaches a terminal state, every demo.ledger effect ran exactly
// once per idempotency key (no key twice; a failed script's key at most
// once), and the host's metrics agree with those counts. allow says which
// failed scripts are accepted; completed ones must always be right.
func audit(t *testing.T, s *stack, l *load, allow failures) auditCounts {
	t.Helper()
	l.finish()
	s.logf("load stopped")
	l.mu.Lock()
	c := auditCounts{submitted: len(l.sessions), refused: l.refused}
	for _, why := range l.refusals {
		s.logf("submission refused: %s", why)
	}
	l.mu.Unlock()
	final := s.terminal(l)
	ctx, cancel := context.WithTimeout(s.t.Context(), time.Minute)
	defer cancel()
	for _, ss := range final {
		switch ss.State {
		case "completed":
			c.completed++
			if ss.Value != "1" {
				s.errorf("session %s: ledger answered %q, want 1 (a repeated effect)", ss.ID, ss.Value)
			}
		case "failed":
			c.failed++
			fault := false
			switch {
			case ss.ErrorCode == codeHostStopped:
				c.hostStopped++
			case ss.ErrorCode == codeHostRestarted:
				c.hostRestarted++
			case strings.Contains(ss.Error, indeterminate):
				c.indeterminate++
				// Only the ledger claims; a call of another tool is
				// never indeterminate.
				fault = strings.Contains(ss.Error, demotools.Ledger)
			case strings.Contains(ss.Error, timedOut):
				c.timedOut++
			}
			switch {
			case ss.Error == "":
				s.errorf("session %s failed without a reason", ss.ID)
			case allow == noFailures, allow == resumedOutcomes, allow == lostWorkerOutcomes && !fault:
				s.errorf("session %s failed: %s", ss.ID, ss.Error)
			}
		}
	}

	counts, err := demotools.LedgerCounts(ctx, s.opsJS())
	if err != nil {
		s.fatalf("ledger counts: %v", err)
	}
	c.ledgerKeys = len(counts)
	for key, n := range counts {
		if n != 1 {
			s.errorf("idempotency key %q: effect ran %d times", key, n)
		}
	}
	// Each completed script ran one ledger call; a failed one at most one.
	// A submission that failed in transit (the host restarting) may still
	// have been taken and run.
	most := c.completed + c.failed
	if allow == resumedOutcomes {
		most += c.refused
	}
	if c.ledgerKeys < c.completed || c.ledgerKeys > most {
		s.errorf("ledger holds %d keys for %d completed and %d failed scripts", c.ledgerKeys, c.completed, c.failed)
	}

	// The host's counters (of the host process now running: a restarted
	// host starts from zero, so that scenario compares them with the
	// scripts whose ids carry the current incarnation).
	fams, err := l.api.metrics(ctx)
	if err != nil {
		s.fatalf("metrics: %v", err)
	}
	ledgerOK := metricSum(fams, "splash_operations_finished_total", map[string]string{"tool": demotools.Ledger, "outcome": "succeeded"})
	sessionsDone := metricSum(fams, "splash_sessions_total", map[string]string{"state": "completed"})
	c.ledgerOK, c.sessionsDone = ledgerOK, sessionsDone
	// An indeterminate ledger call may or may not have run its effect:
	// that is what the outcome says.
	ledgerUnknown := metricSum(fams, "splash_operations_finished_total", map[string]string{"tool": demotools.Ledger, "outcome": indeterminate})
	switch allow {
	case noFailures:
		if int(ledgerOK) != c.ledgerKeys {
			s.errorf("metrics: %v demo.ledger operations succeeded, ledger holds %d keys", ledgerOK, c.ledgerKeys)
		}
	case lostWorkerOutcomes:
		if int(ledgerOK) > c.ledgerKeys || c.ledgerKeys > int(ledgerOK+ledgerUnknown) {
			s.errorf("metrics: %v demo.ledger operations succeeded and %v indeterminate, ledger holds %d keys", ledgerOK, ledgerUnknown, c.ledgerKeys)
		}
		if int(ledgerUnknown) != c.indeterminate {
			s.errorf("metrics: %v demo.ledger operations indeterminate, the audit found %d scripts failed so", ledgerUnknown, c.indeterminate)
		}
	}
	switch allow {
	case resumedOutcomes:
		// Resumed sessions finished here, fresh ones too; a submission
		// that failed in transit may have been taken and finished.
		if int(sessionsDone) > c.completed+c.refused {
			s.errorf("metrics: %v sessions completed, audit found %d (refused %d)", sessionsDone, c.completed, c.refused)
		}
		if f := metricSum(fams, "splash_sessions_total", map[string]string{"state": "failed"}); f != 0 {
			s.errorf("metrics: %v sessions failed", f)
		}
	case noFailures, lostWorkerOutcomes:
		if int(sessionsDone) != c.completed {
			s.errorf("metrics: %v sessions completed, audit found %d", sessionsDone, c.completed)
		}
	}
	if p := metricSum(fams, "splash_operations_pending", nil) + metricSum(fams, "splash_operations_claimed", nil); p != 0 {
		s.errorf("metrics: %v operations still pending or claimed after the audit", p)
	}
	s.logf("audit: %v", c)
	return c
}

// during runs for d, failing the test if ctx ends first.
func during(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-time.After(d):
	case <-t.Context().Done():
		t.Fatal("test ended while waiting")
	}
}
