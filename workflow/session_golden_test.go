package workflow_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workflow"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of workflow/testdata/*.txt")

// TestSessionRules runs the golden scripts in testdata: one per ordering
// rule of the durable-session core, each a sequence of commands (inputs,
// the driver's reports, a host crash) and what the session hands out
// after each. -rewrite regenerates the expected output.
//
// Commands:
//
//	catalog                      tools, as catalog YAML (input lines)
//	submit [ledger]              the script (input lines) runs its first step
//	claim                        claims what the script started
//	ready                        drains Ready; acks run and print
//	stored | write-failed | retry-write | conflict
//	                             the Log's answer to the last Append
//	answer <op> <status> [text] [ack=<name>]
//	chunk <op> <text>
//	cancel <op> | cancel-ack <op> [ack=<name>] | force <op>
//	cancel-session [force] [lifetime]
//	expire | republish <op> | end | removed (the driver's removal is done)
//	acknowledge ack=<name>       an event that changed nothing (a redelivery)
//	reconciled <op> <state> [past]
//	advance <duration>
//	crash                        a new process restores the stored entries
//	state                        the session's result and live operations
func TestSessionRules(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden scripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runGolden(t, file)
		})
	}
}

// goldenCase is one command of a script with its expected output.
type goldenCase struct {
	comments []string
	cmd      string
	input    []string
	want     []string
}

func parseGolden(t *testing.T, text string) []goldenCase {
	lines := strings.Split(text, "\n")
	var out []goldenCase
	var c goldenCase
	for i := 0; i < len(lines); {
		line := lines[i]
		switch {
		case strings.TrimSpace(line) == "":
			i++
			continue
		case strings.HasPrefix(line, "#"):
			c.comments = append(c.comments, line)
			i++
			continue
		}
		c.cmd = line
		i++
		for i < len(lines) && lines[i] != "----" {
			c.input = append(c.input, lines[i])
			i++
		}
		if i == len(lines) {
			t.Fatalf("command %q has no ----", c.cmd)
		}
		i++
		for i < len(lines) && lines[i] != "" {
			c.want = append(c.want, lines[i])
			i++
		}
		out = append(out, c)
		c = goldenCase{}
	}
	return out
}

func runGolden(t *testing.T, file string) {
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cases := parseGolden(t, string(raw))
	h := &harness{t: t, clock: host.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))}
	var b strings.Builder
	for i, c := range cases {
		got := h.run(c)
		if *rewrite {
			if i > 0 {
				b.WriteString("\n")
			}
			for _, l := range c.comments {
				b.WriteString(l + "\n")
			}
			b.WriteString(c.cmd + "\n")
			for _, l := range c.input {
				b.WriteString(l + "\n")
			}
			b.WriteString("----\n")
			for _, l := range got {
				b.WriteString(l + "\n")
			}
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Fatalf("%s: command %d %q:\n got:\n  %s\nwant:\n  %s", file, i+1, c.cmd,
				strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
		}
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// harness drives one session as a host loop would, but by hand.
type harness struct {
	t       *testing.T
	clock   *host.ManualClock
	catalog *toolspec.Set
	source  string
	s       *workflow.Session
	// stored is what the Log holds; last is the Append handed out.
	stored []workflow.Entry
	last   *workflow.Append
	nextID int
	// acked collects the acknowledgements run since the last command.
	acked []string
}

func (h *harness) request() string {
	h.nextID++
	return "r" + strconv.Itoa(h.nextID)
}

func (h *harness) register(rt *host.Runtime) error {
	if h.catalog == nil {
		return nil
	}
	return rt.RegisterTools(h.catalog)
}

func (h *harness) op(arg string) *workflow.Op {
	n, err := strconv.Atoi(strings.TrimPrefix(arg, "op-"))
	if err != nil {
		h.t.Fatalf("operation %q", arg)
	}
	op := h.s.Op(host.ExternalToolID(n))
	if op == nil {
		// An input for an operation the session does not hold: the
		// script checks what the session says.
		return &workflow.Op{ID: host.ExternalToolID(n)}
	}
	return op
}

// ack returns an acknowledgement that prints when it runs.
func (h *harness) ack(name string) func() {
	if name == "" {
		return nil
	}
	return func() { h.acked = append(h.acked, "ack "+name) }
}

func (h *harness) run(c goldenCase) []string {
	var out []string
	f := strings.Fields(c.cmd)
	args, opts := f[1:], map[string]string{}
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok {
			opts[k] = v
		}
	}
	errLine := func(err error) {
		if err != nil {
			out = append(out, "error: "+err.Error())
		}
	}
	switch f[0] {
	case "catalog":
		cat, err := toolspec.Parse([]byte(strings.Join(c.input, "\n")), ".")
		if err != nil {
			h.t.Fatal(err)
		}
		if h.catalog, err = cat.Compile(); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, "ok")
	case "submit":
		h.source = strings.Join(c.input, "\n")
		seed, nonce := host.RandomSeed{1}, host.NewCapabilitySessionNonce([16]byte{2})
		rt := host.NewRuntime(host.Config{Clock: h.clock, RandomSeed: &seed, SessionNonce: &nonce})
		if err := h.register(rt); err != nil {
			h.t.Fatal(err)
		}
		res, err := rt.Eval(h.source)
		if err != nil {
			h.t.Fatal(err)
		}
		var led *workflow.Ledger
		if slices.Contains(args, "ledger") {
			led = workflow.NewLedger(h.clock.Now(), workflow.Submitted{Source: h.source, Nonce: nonce.Bytes(), Seed: seed, Tools: rt.ToolDigests()})
		}
		h.s = workflow.NewSession(workflow.Config{Runtime: rt, First: res, Clock: h.clock, Ledger: led, RequestID: h.request})
		out = append(out, h.state()...)
	case "claim":
		for _, op := range h.s.Claim() {
			out = append(out, fmt.Sprintf("claimed %s %s %s %q key=%s", op.ID, op.RequestID, op.Inv.Tool, op.Inv.Input, op.Inv.IdempotencyKey))
		}
	case "ready":
		out = append(out, h.ready()...)
	case "stored":
		if h.last == nil {
			out = append(out, "no append was handed out")
			break
		}
		h.stored = append(h.stored[:h.last.From], h.last.Entries...)
		h.s.Stored(h.last.UpTo())
		h.last = nil
		out = append(out, fmt.Sprintf("the log holds %d entries", len(h.stored)))
	case "write-failed":
		h.last = nil
		h.s.WriteFailed()
		out = append(out, "ok")
	case "retry-write":
		h.s.RetryWrite()
		out = append(out, "ok")
	case "conflict":
		h.last = nil
		h.s.Conflict()
		out = append(out, "ok")
	case "answer":
		r := protocol.Result{Status: protocol.ResultStatus(args[1])}
		if len(args) > 2 && !strings.Contains(args[2], "=") {
			if r.Status == protocol.ResultSucceeded {
				p := protocol.TextPayload(args[2])
				r.Payload = &p
			} else {
				r.Error = args[2]
			}
		}
		if ms, ok := opts["after"]; ok {
			r.RetryAfterMillis, _ = strconv.ParseInt(ms, 10, 64)
		}
		ans, err := h.s.Answer(h.op(args[0]), r, h.ack(opts["ack"]))
		errLine(err)
		if ans.Retry {
			out = append(out, fmt.Sprintf("retry scheduled (after %v)", ans.After))
		}
		out = append(out, h.state()...)
	case "chunk":
		c, err := h.s.Chunk(h.op(args[0]), args[1])
		errLine(err)
		if err == nil {
			out = append(out, fmt.Sprintf("chunk %d of %s: %q", c.Index, c.ID, c.Text))
		}
	case "cancel":
		errLine(h.s.RequestCancel(h.op(args[0])))
		out = append(out, h.state()...)
	case "cancel-ack":
		errLine(h.s.CancelAcknowledged(h.op(args[0]), h.ack(opts["ack"])))
		out = append(out, h.state()...)
	case "force":
		errLine(h.s.ForceCancel(h.op(args[0])))
		out = append(out, h.state()...)
	case "cancel-session":
		reason := workflow.EndOperator
		if slices.Contains(args, "lifetime") {
			reason = workflow.EndLifetime
		}
		errLine(h.s.CancelSession(reason, slices.Contains(args, "force")))
		out = append(out, h.state()...)
	case "expire":
		for _, id := range h.s.Expire() {
			out = append(out, "expired "+id.String())
		}
		out = append(out, h.state()...)
	case "republish":
		h.s.Republish(h.op(args[0]))
		out = append(out, "ok")
	case "end":
		h.s.End()
		out = append(out, "ok")
	case "removed":
		h.s.Removed()
		out = append(out, "ok")
	case "acknowledge":
		h.s.Acknowledge(h.ack(opts["ack"]))
		out = append(out, "ok")
	case "reconciled":
		st := protocol.OperationStatus{State: protocol.OperationState(args[1])}
		action, err := h.s.Reconciled(h.op(args[0]), st, slices.Contains(args, "past"))
		errLine(err)
		if err == nil {
			out = append(out, "action "+action.String())
		}
		out = append(out, h.state()...)
	case "advance":
		d, err := time.ParseDuration(args[0])
		if err != nil {
			h.t.Fatal(err)
		}
		h.clock.Advance(d)
		out = append(out, "now +"+d.String())
	case "crash":
		out = append(out, h.crash()...)
	case "state":
		out = append(out, h.state()...)
	default:
		h.t.Fatalf("unknown command %q", f[0])
	}
	out, h.acked = append(out, h.acked...), nil
	if len(out) == 0 {
		out = []string{"(nothing)"}
	}
	return out
}

// crash is a host that died: the next process restores the session from
// what the Log holds, and nothing else.
func (h *harness) crash() []string {
	if len(h.stored) == 0 {
		h.s = nil
		return []string{"no ledger: the session is gone"}
	}
	clock := host.NewManualClock(h.clock.Now())
	s, err := workflow.Restore(slices.Clone(h.stored), workflow.ReplayConfig{Register: h.register, Clock: clock, RequestID: h.request})
	if err != nil {
		return []string{"restore: " + err.Error()}
	}
	clock.Set(h.clock.Now())
	h.clock, h.s, h.last = clock, s, nil
	return append([]string{fmt.Sprintf("restored from %d entries", len(h.stored))}, h.state()...)
}

func (h *harness) state() []string {
	out := []string{"session " + h.s.String()}
	for _, op := range h.s.Ops() {
		info, _ := h.s.Operation(op.ID)
		line := fmt.Sprintf("  %s %s attempt %d, %s", op.ID, op.RequestID, op.Inv.Attempt, info.State)
		if op.Sent() {
			line += ", out"
		}
		if info.Chunks > 0 {
			line += fmt.Sprintf(", streamed %d chunks (%d bytes)", info.Chunks, info.SourceBytes)
		}
		out = append(out, line)
	}
	return out
}

func (h *harness) ready() []string {
	var out []string
	if h.s.Done() && !h.s.Ended() {
		// As its driver does once a session's outcome is final.
		h.s.End()
		out = append(out, "end: "+h.s.String())
	}
	rd := h.s.Ready()
	for _, op := range rd.Settled {
		out = append(out, fmt.Sprintf("settled %s %s", op.ID, op.Final))
	}
	if rd.Accepted {
		out = append(out, "accepted")
	}
	for _, op := range rd.Publish {
		out = append(out, fmt.Sprintf("publish %s %s attempt %d", op.ID, op.RequestID, op.Inv.Attempt))
	}
	for _, c := range rd.Cancel {
		out = append(out, fmt.Sprintf("cancel %s %s attempt %d", c.Op.ID, c.Op.RequestID, c.Request.Attempt))
	}
	for _, a := range rd.Acks {
		a()
	}
	if a := rd.Append; a != nil {
		h.last = a
		out = append(out, fmt.Sprintf("append %d entries at %d:", len(a.Entries), a.From))
		for _, e := range a.Entries {
			out = append(out, "  "+describe(e))
		}
	}
	if rd.Remove != nil {
		// As its driver does, once the outcome is stored elsewhere; the
		// script says when it is done (removed).
		h.stored = nil
		out = append(out, "remove the ledger")
		for _, a := range rd.Remove.Acks {
			a()
		}
	}
	if rd.Relinquish {
		out = append(out, "relinquish")
	}
	return out
}

func describe(e workflow.Entry) string {
	switch {
	case e.Submitted != nil:
		return "submitted"
	case e.Prepared != nil:
		p := e.Prepared
		return fmt.Sprintf("prepared %s %s %s %q", p.Op, p.Request, p.Tool, p.Input)
	}
	a := e.Applied
	s := string(a.Kind)
	if a.Op != 0 {
		s += " " + a.Op.String()
	}
	switch {
	case a.Output != "":
		s += fmt.Sprintf(" %q", a.Output)
	case a.Error != "":
		s += fmt.Sprintf(" error %q", a.Error)
	case a.Stream != nil:
		s += fmt.Sprintf(" %d chunks, %d/%d bytes", a.Stream.Chunks, a.Stream.SourceBytes, a.Stream.ReleasedBytes)
	case a.Reason != "":
		s += " " + string(a.Reason)
	}
	return s
}
