package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/splashfabric/splashfabric/apiclient"
)

// isTerminal reports whether w is a character device, the one test that
// needs no dependency; a pipe or a file gets plain lines instead of
// escape codes.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// spinnerFrames and spinnerPeriod: a frame every 100ms reads as motion
// without flooding a slow terminal.
var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

const spinnerPeriod = 100 * time.Millisecond

// progress tells the person running `splash run` what the script waits
// on. On a terminal it keeps one line on stderr, redrawn by its own
// goroutine; elsewhere it writes one plain line per audit event, which
// reads well in a CI log. Output that must go between (chunks on stdout)
// goes through print, so the line is cleared first and redrawn after.
type progress struct {
	w   io.Writer
	tty bool
	now func() time.Time

	mu      sync.Mutex
	started time.Time
	ops     []apiclient.Operation
	seen    map[string]time.Time // operation and attempt → when this client first saw it
	frame   int
	drawn   bool // the spinner line is on screen
	closed  bool
	stop    chan struct{}
	done    chan struct{}
}

func newProgress(w io.Writer, tty bool, now func() time.Time) *progress {
	return &progress{w: w, tty: tty, now: now, started: now(), seen: make(map[string]time.Time)}
}

// run starts the spinner on a terminal; close stops it.
func (p *progress) run() {
	if !p.tty {
		return
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(spinnerPeriod)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.frame++
				p.draw()
				p.mu.Unlock()
			}
		}
	}()
}

// close stops the spinner and leaves the line empty for what follows.
func (p *progress) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.clear()
	p.mu.Unlock()
	if p.stop != nil {
		close(p.stop)
		<-p.done
	}
}

// update records the session's live operations.
func (p *progress) update(s apiclient.Session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ops = s.Operations
	now := p.now()
	live := make(map[string]bool, len(s.Operations))
	for _, o := range s.Operations {
		k := o.ID + "#" + fmt.Sprint(o.Attempt)
		live[k] = true
		if _, ok := p.seen[k]; !ok {
			p.seen[k] = now
		}
	}
	for k := range p.seen {
		if !live[k] {
			delete(p.seen, k)
		}
	}
	p.draw()
}

// operation records one operation's change: a terminal state takes it off
// the live ones, anything else adds or replaces it.
func (p *progress) operation(o apiclient.Operation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := o.ID + "#" + fmt.Sprint(o.Attempt)
	i := slices.IndexFunc(p.ops, func(x apiclient.Operation) bool { return x.ID == o.ID })
	switch {
	case terminalOperation(o.State):
		if i >= 0 {
			p.ops = slices.Delete(p.ops, i, i+1)
		}
		for key := range p.seen {
			if strings.HasPrefix(key, o.ID+"#") {
				delete(p.seen, key)
			}
		}
	case i >= 0:
		p.ops[i] = o
	default:
		p.ops = append(p.ops, o)
	}
	if !terminalOperation(o.State) {
		if _, ok := p.seen[k]; !ok {
			p.seen[k] = p.now()
		}
	}
	p.draw()
}

// terminalOperation reports whether an operation state is final.
func terminalOperation(state string) bool {
	switch state {
	case "succeeded", "failed", "timed_out", "cancelled", "finished":
		return true
	}
	return false
}

// audit writes an audit event as a plain line; a terminal shows the
// spinner instead. Streamed events are left out: the chunks themselves
// are on stdout.
func (p *progress) audit(e apiclient.AuditEntry) {
	if p.tty || e.Outcome == "streamed" {
		return
	}
	p.note(auditLine(e))
}

// note writes a line to stderr between spinner frames.
func (p *progress) note(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintln(p.w, line)
	p.draw()
}

// print writes text to out (stdout) with the spinner line out of its way.
func (p *progress) print(out io.Writer, text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	io.WriteString(out, text)
	p.draw()
}

func (p *progress) clear() {
	if p.drawn {
		io.WriteString(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

func (p *progress) draw() {
	if !p.tty || p.closed {
		return
	}
	fmt.Fprintf(p.w, "\r%s %s\x1b[K", spinnerFrames[p.frame%len(spinnerFrames)], p.line())
	p.drawn = true
}

// line says what the script waits on: its oldest live operation, and how
// many others. Elapsed time is measured from when this client first saw
// the attempt, not from the host's clock, so skew cannot make it negative.
func (p *progress) line() string {
	now := p.now()
	if len(p.ops) == 0 {
		return "running script " + formatElapsed(now.Sub(p.started))
	}
	o := p.ops[0]
	first := p.seen[o.ID+"#"+fmt.Sprint(o.Attempt)]
	var b strings.Builder
	fmt.Fprintf(&b, "waiting on %s (attempt %d", o.Tool, o.Attempt)
	if o.State != "claimed" && o.State != "" {
		fmt.Fprintf(&b, ", %s", strings.ReplaceAll(o.State, "_", " "))
	}
	fmt.Fprintf(&b, ") %s", formatElapsed(now.Sub(first)))
	if n := len(p.ops) - 1; n > 0 {
		fmt.Fprintf(&b, " and %d more", n)
	}
	return b.String()
}

// auditLine is one audit event as a line: operation, tool, attempt
// (once the host has numbered one), outcome, then its retry class and
// detail when they say something more.
func auditLine(e apiclient.AuditEntry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", e.Operation, e.Tool)
	if e.Attempt > 0 {
		fmt.Fprintf(&b, " attempt %d", e.Attempt)
	}
	fmt.Fprintf(&b, ": %s", strings.ReplaceAll(e.Outcome, "_", " "))
	if e.RetryClass != "" {
		fmt.Fprintf(&b, " (%s)", strings.ReplaceAll(e.RetryClass, "_", " "))
	}
	if e.Detail != "" && e.Detail != e.RetryClass {
		fmt.Fprintf(&b, ": %s", e.Detail)
	}
	return b.String()
}

// formatElapsed shows tenths of a second under a minute, where waits are
// watched closely, and whole seconds beyond.
func formatElapsed(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Truncate(time.Second).String()
}
