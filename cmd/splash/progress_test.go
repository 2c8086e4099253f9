package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/apiclient"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestProgressLine(t *testing.T) {
	sleep := apiclient.Operation{ID: "op-1", Tool: "demo.sleep", State: "claimed", Attempt: 1}
	tests := []struct {
		name    string
		ops     []apiclient.Operation
		elapsed time.Duration
		want    string
	}{
		{"no operation yet", nil, 400 * time.Millisecond, "running script 0.4s"},
		{"one operation", []apiclient.Operation{sleep}, 2300 * time.Millisecond, "waiting on demo.sleep (attempt 1) 2.3s"},
		{"queued", []apiclient.Operation{{ID: "op-1", Tool: "demo.echo", State: "queued", Attempt: 1}}, 0, "waiting on demo.echo (attempt 1, queued) 0.0s"},
		{"cancelling", []apiclient.Operation{{ID: "op-1", Tool: "demo.sleep", State: "cancellation_requested", Attempt: 2}}, time.Second, "waiting on demo.sleep (attempt 2, cancellation requested) 1.0s"},
		{"several", []apiclient.Operation{sleep, {ID: "op-2", Tool: "demo.echo", Attempt: 1}, {ID: "op-3", Tool: "demo.echo", Attempt: 1}}, 90 * time.Second, "waiting on demo.sleep (attempt 1) 1m30s and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
			var w bytes.Buffer
			p := newProgress(&w, true, clock.now)
			if tt.ops != nil {
				p.update(apiclient.Session{Operations: tt.ops})
			}
			clock.t = clock.t.Add(tt.elapsed)
			if got := p.line(); got != tt.want {
				t.Errorf("line %q, want %q", got, tt.want)
			}
		})
	}
}

// A new attempt restarts the clock; an operation seen before keeps it.
func TestProgressAttemptClock(t *testing.T) {
	clock := &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	p := newProgress(new(bytes.Buffer), true, clock.now)
	op := apiclient.Operation{ID: "op-1", Tool: "demo.flaky", State: "claimed", Attempt: 1}
	p.update(apiclient.Session{Operations: []apiclient.Operation{op}})
	clock.t = clock.t.Add(time.Second)
	p.update(apiclient.Session{Operations: []apiclient.Operation{op}})
	clock.t = clock.t.Add(time.Second)
	if got := p.line(); got != "waiting on demo.flaky (attempt 1) 2.0s" {
		t.Errorf("same attempt: %q", got)
	}
	op.Attempt = 2
	p.update(apiclient.Session{Operations: []apiclient.Operation{op}})
	clock.t = clock.t.Add(500 * time.Millisecond)
	if got := p.line(); got != "waiting on demo.flaky (attempt 2) 0.5s" {
		t.Errorf("next attempt: %q", got)
	}
}

// On a terminal, output between frames clears the spinner line first and
// redraws it after; close leaves the line empty.
func TestProgressTerminal(t *testing.T) {
	clock := &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	var stderr, stdout bytes.Buffer
	p := newProgress(&stderr, true, clock.now)
	p.update(apiclient.Session{Operations: []apiclient.Operation{{ID: "op-1", Tool: "demo.sleep", State: "claimed", Attempt: 1}}})
	p.print(&stdout, "[demo.stream] a\n")
	p.audit(apiclient.AuditEntry{Operation: "op-1", Tool: "demo.sleep", Outcome: "claimed"})
	p.close()
	const line = "\r⠋ waiting on demo.sleep (attempt 1) 0.0s\x1b[K"
	if want := line + "\r\x1b[K" + line + "\r\x1b[K"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	if stdout.String() != "[demo.stream] a\n" {
		t.Errorf("stdout %q", stdout.String())
	}
}

// The spinner's goroutine draws frames and stops with close.
func TestProgressSpinnerStops(t *testing.T) {
	var stderr syncBuffer
	p := newProgress(&stderr, true, time.Now)
	p.run()
	p.close()
	p.close()
	if s := stderr.String(); s != "" && !strings.HasSuffix(s, "\r\x1b[K") {
		t.Errorf("line left on screen: %q", s)
	}
}

func TestProgressPlain(t *testing.T) {
	var stderr bytes.Buffer
	p := newProgress(&stderr, false, time.Now)
	p.run()
	p.update(apiclient.Session{Operations: []apiclient.Operation{{ID: "op-1", Tool: "demo.sleep", Attempt: 1}}})
	for _, e := range []apiclient.AuditEntry{
		{Operation: "op-1", Tool: "demo.flaky", Outcome: "started"},
		{Operation: "op-1", Tool: "demo.flaky", Attempt: 2, Outcome: "retry_scheduled", Detail: "transient", RetryClass: "transient"},
		{Operation: "op-1", Tool: "demo.stream", Attempt: 1, Outcome: "streamed", Detail: "released 9 bytes", Bytes: 9},
		{Operation: "op-1", Tool: "demo.ratelimited", Attempt: 1, Outcome: "retry_scheduled", Detail: "slow down", RetryClass: "rate_limited"},
		{Operation: "op-2", Tool: "demo.sleep", Attempt: 1, Outcome: "timed_out", Detail: "deadline 30s"},
	} {
		p.audit(e)
	}
	p.close()
	want := "op-1 demo.flaky: started\n" +
		"op-1 demo.flaky attempt 2: retry scheduled (transient)\n" +
		"op-1 demo.ratelimited attempt 1: retry scheduled (rate limited): slow down\n" +
		"op-2 demo.sleep attempt 1: timed out: deadline 30s\n"
	if stderr.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), want)
	}
}

func TestFormatElapsed(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0.0s"},
		{0, "0.0s"},
		{2340 * time.Millisecond, "2.3s"},
		{59900 * time.Millisecond, "59.9s"},
		{61500 * time.Millisecond, "1m1s"},
		{2*time.Hour + 3*time.Minute, "2h3m0s"},
	}
	for _, tt := range tests {
		if got := formatElapsed(tt.d); got != tt.want {
			t.Errorf("formatElapsed(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestChunkLines(t *testing.T) {
	tests := []struct {
		text, want string
	}{
		{"a", "[t] a\n"},
		{"a\n", "[t] a\n"},
		{"a\nb", "[t] a\n[t] b\n"},
		{"", "[t] \n"},
	}
	for _, tt := range tests {
		if got := chunkLines(apiclient.Chunk{Tool: "t", Text: tt.text}); got != tt.want {
			t.Errorf("chunkLines(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

// Operation events keep the live operations: a new one is added, a later
// attempt restarts its clock, a terminal state takes it off.
func TestProgressOperationEvents(t *testing.T) {
	clock := &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	p := newProgress(new(bytes.Buffer), true, clock.now)
	p.update(apiclient.Session{})
	op := apiclient.Operation{ID: "op-1", Tool: "demo.flaky", State: "claimed", Attempt: 1}
	p.operation(op)
	clock.t = clock.t.Add(time.Second)
	p.operation(apiclient.Operation{ID: "op-2", Tool: "demo.echo", State: "claimed", Attempt: 1})
	if got := p.line(); got != "waiting on demo.flaky (attempt 1) 1.0s and 1 more" {
		t.Errorf("two live: %q", got)
	}
	op.Attempt = 2
	p.operation(op)
	clock.t = clock.t.Add(500 * time.Millisecond)
	if got := p.line(); got != "waiting on demo.flaky (attempt 2) 0.5s and 1 more" {
		t.Errorf("next attempt: %q", got)
	}
	op.State = "succeeded"
	p.operation(op)
	if got := p.line(); got != "waiting on demo.echo (attempt 1) 0.5s" {
		t.Errorf("after the first settled: %q", got)
	}
}
