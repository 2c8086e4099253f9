package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/splashfabric/splashfabric/apiclient"
)

var runCommand = command{
	name:    "run",
	args:    "<script.js> | -e <source>",
	summary: "submit a script to a host and stream its output",
	help: `
Submits the script in the file, or the source given with -e, to the host at
--api-url, prints its chunks as they arrive and then its result. Exits 0 only
when the script completed successfully. --json prints one JSON object per
event instead of plain lines.

Chunks go to stdout, one line each, after the name of the tool that sent
them: "[demo.stream] chunk 1/5". The result follows on stdout. While the
script waits, a terminal shows what it waits on in a line on stderr
("waiting on demo.sleep (attempt 1) 2.3s"); when stderr is not a terminal,
each audit event is one plain line on stderr instead. A failed script's
error goes to stderr and the exit status is 1.

With --json, stdout holds one object per line, {"event": kind, "data": ...},
kind being "submitted" (the new session), then the host's event kinds
("audit", "chunk", "state", "lagged"); the last is the terminal "state".

--budget and --pending ask for the session's tool call budget and its
limit of operations in flight at once (SPLASH_RUN_BUDGET,
SPLASH_RUN_PENDING); 0 takes the host's defaults (1,000 calls, 256 in
flight unless its operator set others). The host refuses more than its
maximum (--max-session-budget, --max-session-pending) with limit_too_high.

--tools limits what the script may call to some of the tools its token may
use ("demo.*,text.>": "*" stands for one dot-separated segment, a final ">"
for one or more); a call outside them fails in the script, before it uses
any budget.

If the event stream ends early (the client fell behind, the connection
broke), the command polls the session until it finishes; chunks sent in the
meantime are not shown. Interrupting the command leaves the script running
on the host.`,
	new: func() runner { return new(runConfig) },
}

// errScriptFailed marks a script that ran and failed, as opposed to a
// host that could not be asked.
var errScriptFailed = errors.New("script failed")

// errSessionCancelled is the error of a script whose session an operator
// ended.
var errSessionCancelled = errors.New("session cancelled")

// Polling after the event stream is lost: often enough that the result
// shows promptly, and a host that went away is given up on after
// pollGiveUp failed attempts in a row.
var (
	pollInterval = 500 * time.Millisecond
	pollGiveUp   = 10
)

// runConfig holds the flags of `splash run`.
type runConfig struct {
	api    apiClientFlags
	source string
	tools  string
	json   bool
	// lifetime ends the session once it lived this long (0: no end).
	lifetime time.Duration
	// budget and pending are the session's tool call budget and pending
	// limit (0: the host's defaults).
	budget, pending int
}

func (c *runConfig) flags(fs *flagSet) {
	c.api.register(fs)
	fs.stringVar(&c.source, "e", "SPLASH_RUN_SOURCE", "", "script `source` to run instead of a file")
	fs.stringVar(&c.tools, "tools", "SPLASH_RUN_TOOLS", "", "comma-separated `patterns` of the tools the script may call (\"demo.*,text.>\"; \"none\" for none); empty: every tool the token may use")
	fs.boolVar(&c.json, "json", "SPLASH_RUN_JSON", false, "print events as JSON lines")
	fs.durationVar(&c.lifetime, "max-lifetime", "SPLASH_RUN_MAX_LIFETIME", 0, "end the session once it has lived this long, however long its calls wait (0: as long as the script waits)")
	fs.intVar(&c.budget, "budget", "SPLASH_RUN_BUDGET", 0, "the session's tool call budget (`calls`; 0: the host's default)")
	fs.intVar(&c.pending, "pending", "SPLASH_RUN_PENDING", 0, "how many `operations` the session may hold in flight at once (0: the host's default)")
}

// toolPatterns reads --tools: "" leaves the choice to the host (the
// token's tools), "none" grants none, anything else is a comma-separated
// list of patterns, checked by the host.
func toolPatterns(v string) []string {
	switch v = strings.TrimSpace(v); v {
	case "":
		return nil
	case "none":
		return []string{}
	}
	out := []string{}
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// script returns the source to submit: -e or the one file argument, never
// both, so an ambiguous command line is refused rather than guessed.
func (c *runConfig) script(args []string) (source, path string, err error) {
	switch {
	case c.source != "" && len(args) > 0:
		return "", "", fmt.Errorf("%w: give a script file or -e, not both", errUsage)
	case c.source != "":
		return c.source, "", nil
	case len(args) == 1:
		return "", args[0], nil
	case len(args) == 0:
		return "", "", fmt.Errorf("%w: no script: give a file or -e 'source'", errUsage)
	default:
		return "", "", fmt.Errorf("%w: one script file at a time, got %d", errUsage, len(args))
	}
}

func (c *runConfig) run(ctx context.Context, a *app, args []string) error {
	source, path, err := c.script(args)
	if err != nil {
		return err
	}
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read script: %w", err)
		}
		source = string(b)
	}
	client, err := c.api.client()
	if err != nil {
		return err
	}
	switch {
	case c.lifetime < 0:
		return fmt.Errorf("%w: --max-lifetime %v is negative", errUsage, c.lifetime)
	case c.budget < 0:
		return fmt.Errorf("%w: --budget %d is negative", errUsage, c.budget)
	case c.pending < 0:
		return fmt.Errorf("%w: --pending %d is negative", errUsage, c.pending)
	}
	r := &scriptRun{client: client, a: a, json: c.json, lifetime: c.lifetime, tools: toolPatterns(c.tools), budget: c.budget, pending: c.pending}
	if !c.json {
		r.progress = newProgress(a.stderr, isTerminal(a.stderr), time.Now)
	}
	return c.api.explain(r.run(ctx, source))
}

// scriptRun is one `splash run`: it submits, follows and reports.
type scriptRun struct {
	client   *apiclient.Client
	tools    []string // nil: the token's
	a        *app
	json     bool
	progress *progress // nil with --json
	lifetime time.Duration
	// budget and pending go to the submission as they are (0: the
	// host's defaults).
	budget, pending int
}

func (r *scriptRun) run(ctx context.Context, source string) error {
	s, err := r.client.Submit(ctx, apiclient.SubmitRequest{
		Source: source, Tools: r.tools, MaxLifetimeMS: r.lifetime.Milliseconds(),
		ToolCallBudget: r.budget, MaxPending: r.pending,
	})
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	r.emitSession("submitted", s)
	if !s.Terminal() {
		if r.progress != nil {
			r.progress.update(s)
			r.progress.run()
		}
		s, err = r.follow(ctx, s)
		if r.progress != nil {
			r.progress.close()
		}
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted: session %s goes on running on the host (splash ops lists its operations): %w", s.ID, ctx.Err())
			}
			return err
		}
	}
	return r.finish(s)
}

// follow reads the session's event stream to its terminal state, and
// polls when the stream cannot be had or ends early.
func (r *scriptRun) follow(ctx context.Context, s apiclient.Session) (apiclient.Session, error) {
	stream, err := r.client.Events(ctx, s.ID)
	if err == nil {
		var final apiclient.Session
		final, err = r.consume(stream, s)
		stream.Close()
		if err == nil {
			return final, nil
		}
		s = final
	}
	if ctx.Err() != nil || errors.Is(err, apiclient.ErrUnauthorized) || errors.Is(err, apiclient.ErrNotFound) {
		return s, err
	}
	r.note(fmt.Sprintf("event stream lost (%v); polling session %s until it finishes", err, s.ID))
	return r.poll(ctx, s)
}

// consume handles events until the terminal state; it returns the last
// state seen, so a fallback starts from there.
func (r *scriptRun) consume(stream *apiclient.EventStream, s apiclient.Session) (apiclient.Session, error) {
	for {
		ev, err := stream.Next()
		if errors.Is(err, io.EOF) {
			return s, nil
		}
		if err != nil {
			return s, err
		}
		if r.json {
			r.emit(string(ev.Kind), ev.Data)
		}
		switch ev.Kind {
		case apiclient.EventState:
			s = ev.State
			if r.progress != nil {
				r.progress.update(s)
			}
		case apiclient.EventChunk:
			if r.progress != nil {
				r.progress.print(r.a.stdout, chunkLines(ev.Chunk))
			}
		case apiclient.EventAudit:
			if r.progress != nil {
				r.progress.audit(ev.Audit)
			}
		case apiclient.EventOperation:
			if r.progress != nil {
				r.progress.operation(ev.Operation)
			}
		case apiclient.EventLagged:
			r.note("the host dropped the event stream: " + ev.Message)
		}
	}
}

// poll asks for the session until it is terminal, reporting each change.
func (r *scriptRun) poll(ctx context.Context, s apiclient.Session) (apiclient.Session, error) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-t.C:
		}
		next, err := r.client.Session(ctx, s.ID)
		switch {
		case err == nil:
			failures = 0
		case ctx.Err() != nil:
			return s, ctx.Err()
		case errors.Is(err, apiclient.ErrUnreachable) || errors.Is(err, apiclient.ErrUnavailable):
			if failures++; failures >= pollGiveUp {
				return s, err
			}
			continue
		default:
			return s, err
		}
		if changed(s, next) {
			r.emitSession("state", next)
			if r.progress != nil {
				r.progress.update(next)
			}
		}
		s = next
		if s.Terminal() {
			return s, nil
		}
	}
}

// finish prints the result and turns a failed script into an error.
func (r *scriptRun) finish(s apiclient.Session) error {
	switch s.State {
	case apiclient.StateCompleted:
		if !r.json && s.Value != nil && *s.Value != "" {
			fmt.Fprintln(r.a.stdout, strings.TrimSuffix(*s.Value, "\n"))
		}
		return nil
	case apiclient.StateFailed:
		// The host's reason may already say the script failed.
		return fmt.Errorf("%w: %s", errScriptFailed, strings.TrimPrefix(s.Error, errScriptFailed.Error()+": "))
	case apiclient.StateCancelled:
		return fmt.Errorf("%w: %s", errSessionCancelled, s.Error)
	default:
		return fmt.Errorf("session %s ended in state %q", s.ID, s.State)
	}
}

// emitSession prints a session as a JSON event with --json.
func (r *scriptRun) emitSession(kind string, s apiclient.Session) {
	if !r.json {
		return
	}
	b, err := json.Marshal(s)
	if err != nil {
		return
	}
	r.emit(kind, b)
}

func (r *scriptRun) emit(kind string, data json.RawMessage) {
	b, err := json.Marshal(struct {
		Event string          `json:"event"`
		Data  json.RawMessage `json:"data"`
	}{kind, data})
	if err != nil {
		// Data the host sent that is not JSON cannot be passed on as
		// JSON; keep it as a string.
		b, _ = json.Marshal(struct {
			Event string `json:"event"`
			Data  string `json:"data"`
		}{kind, string(data)})
	}
	fmt.Fprintf(r.a.stdout, "%s\n", b)
}

// note tells the person running the command something on stderr.
func (r *scriptRun) note(line string) {
	if r.progress != nil {
		r.progress.note(line)
		return
	}
	fmt.Fprintln(r.a.stderr, line)
}

// chunkLines prefixes every line of a chunk with its tool, so output of
// tools that stream at once stays apart; a chunk is a line of its own.
func chunkLines(c apiclient.Chunk) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(c.Text, "\n"), "\n") {
		fmt.Fprintf(&b, "[%s] %s\n", c.Tool, line)
	}
	return b.String()
}

func changed(a, b apiclient.Session) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) != string(jb)
}

// client builds the API client from the flags; a malformed --api-url is a
// usage error.
func (c *apiClientFlags) client() (*apiclient.Client, error) {
	cl, err := apiclient.New(c.url, c.token)
	if err != nil {
		return nil, fmt.Errorf("%w: --api-url: %v", errUsage, err)
	}
	return cl, nil
}

// explain adds to an API error what the person can do about it: which
// setting holds the token, which URL was tried.
func (c *apiClientFlags) explain(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, apiclient.ErrUnauthorized) && c.token == "":
		return fmt.Errorf("%w; no API token given: set --api-token or %s to the host's token", err, envAPIToken)
	case errors.Is(err, apiclient.ErrUnauthorized):
		return fmt.Errorf("%w; the host refused the API token: check --api-token or %s", err, envAPIToken)
	case errors.Is(err, apiclient.ErrMissingScope):
		return fmt.Errorf("%w; this token may not do that: the host's token file gives it other scopes", err)
	case errors.Is(err, apiclient.ErrToolNotPermitted):
		return fmt.Errorf("%w; name tools within the token's own with --tools, or leave --tools out to take them", err)
	case errors.Is(err, apiclient.ErrUnreachable):
		return fmt.Errorf("%w; is a host (splash host or splash dev) serving %s? (--api-url, %s)", err, c.url, envAPIURL)
	}
	return err
}
