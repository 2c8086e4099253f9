package host

import (
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

// Runtime is one script session's capability runtime: its tools,
// policies, budgets, operations, deadlines and audit log. Like etcd raft's
// RawNode it is a thread-unsafe state machine: methods go in, decisions
// come out as return values and drained audit events, and it never starts
// a goroutine, reads the wall clock or does I/O. One goroutine (the host
// Loop) owns it.
type Runtime struct {
	clock      Clock
	budget     int
	maxPending int
	grants     []string      // read by the script engine
	allowed    ToolPatterns  // Config.Tools; nil: every tool
	allowedErr error         // a malformed Config.Tools; refuses every tool
	execBudget time.Duration // read by the script engine
	memBudget  int64         // read by the script engine
	maxInput   int           // Config.MaxInputBytes; 0: unlimited
	// background: the script's slices give way to live ones (a replay).
	background bool
	// owner is the tenant the script's slices are scheduled for
	// (Config.Owner); turns and turnTag, when set, are where its turns
	// are told (SetTurns).
	owner   string
	turns   *Turns
	turnTag any

	nonce        CapabilitySessionNonce
	nonceErr     error  // why the nonce could not be drawn; refuses external tools
	keyBuf       []byte // idempotency key prefix plus room for the call index
	keyPrefixLen int
	seed         RandomSeed
	random       *rand.Rand  // Math.random, seeded by seed on first use
	plan         *replayPlan // nil unless the runtime replays a ledger

	tools map[string]*tool
	ops   opTable // live operations only

	lastID  ExternalToolID
	calls   uint64 // tool calls consumed so far; the last call index
	pending int    // live operations: queued, claimed or cancellation requested

	external  opQueue // queued external operations, FIFO
	local     opQueue // queued local operations, FIFO, drained by Pump
	deadlines deadlineHeap

	finished finishedLog
	audit    auditLog

	// toNotify holds settled promises with hooks; finish runs them at the
	// end of the public method, once the runtime is consistent.
	toNotify []*Promise
	flushing bool

	script scriptDriver
}

// tool is one registered tool.
type tool struct {
	policy      ToolPolicy
	format      Format
	external    bool
	started     bool // the first start fixes the redactor
	handler     LocalHandler
	jsonHandler LocalJSONHandler
	redactor    func(string) string
	// def checks a JSON tool's input and output: the definition an
	// external tool was registered from (RegisterTool), or a schemaless
	// one for a local JSON tool; nil for a local text tool. contract is
	// what the invocations of an external tool say of it.
	def      *toolspec.Tool
	contract *protocol.Contract
}

// NewRuntime returns a runtime configured by cfg. It draws the session
// nonce at once (unless cfg.SessionNonce is set); if that fails, the
// runtime still serves local tools but refuses to register external ones
// with ErrEntropyUnavailable.
func NewRuntime(cfg Config) *Runtime {
	r := &Runtime{
		clock:      cfg.Clock,
		budget:     cfg.ToolCallBudget,
		maxPending: cfg.MaxPending,
		grants:     cfg.Grants,
		execBudget: cfg.ExecutionBudget,
		memBudget:  cfg.MemoryBudget,
		maxInput:   cfg.MaxInputBytes,
		owner:      cfg.Owner,
		tools:      make(map[string]*tool),
	}
	if r.clock == nil {
		r.clock = systemClock{}
	}
	if r.grants == nil {
		r.grants = DefaultGrants
	}
	if r.allowed, r.allowedErr = ParseToolPatterns(cfg.Tools); r.allowedErr != nil {
		r.allowed = ToolPatterns{}
	}
	if r.execBudget <= 0 {
		r.execBudget = DefaultExecutionBudget
	}
	if r.memBudget <= 0 {
		r.memBudget = DefaultMemoryBudget
	}
	r.audit.limit = cfg.AuditLimit
	if r.audit.limit <= 0 {
		r.audit.limit = DefaultAuditLimit
	}
	r.finished.init(cfg.TerminalHistory)
	switch {
	case cfg.SessionNonce != nil:
		r.nonce = *cfg.SessionNonce
	default:
		src := cfg.Entropy
		if src == nil {
			src = crand.Reader
		}
		r.nonce, r.nonceErr = drawNonce(src)
	}
	switch {
	case cfg.RandomSeed != nil:
		r.seed = *cfg.RandomSeed
	case r.nonceErr == nil:
		src := cfg.Entropy
		if src == nil {
			src = crand.Reader
		}
		// A seed that cannot be drawn leaves Math.random on the zero seed:
		// scripts still run, and the session's record still replays.
		_, _ = io.ReadFull(src, r.seed[:])
	}
	r.plan = newReplayPlan(cfg.Replay)
	r.keyBuf = keyPrefix(r.nonce)
	r.keyPrefixLen = len(r.keyBuf)
	return r
}

// Owner returns the tenant the runtime's script runs for (Config.Owner).
func (r *Runtime) Owner() string { return r.owner }

// SessionNonce returns the nonce in this session's idempotency keys; it is
// the zero nonce if entropy was unavailable.
func (r *Runtime) SessionNonce() CapabilitySessionNonce { return r.nonce }

// setScript installs the script engine the runtime resumes after settling
// promises with hooks.
func (r *Runtime) setScript(d scriptDriver) { r.script = d }

// LocalHandler is a host-pumped text tool. A script's tool.call runs it
// inside the script's slice, while no other slice of the process may run:
// it must not evaluate or resume a script of another Runtime.
type LocalHandler func(input string) (string, error)

// LocalJSONHandler is a host-pumped JSON tool.
type LocalJSONHandler func(input json.RawMessage) (json.RawMessage, error)

// RegisterLocalTool registers a text tool run in-process by Call and Pump.
func (r *Runtime) RegisterLocalTool(p ToolPolicy, h LocalHandler) error {
	if h == nil {
		return fmt.Errorf("%w: nil handler for %q", ErrInvalidInput, p.Name)
	}
	return r.register(p, FormatText, false, toolImpl{handler: h})
}

// RegisterLocalJSONTool registers a JSON tool run in-process by CallJSON
// and Pump.
func (r *Runtime) RegisterLocalJSONTool(p ToolPolicy, h LocalJSONHandler) error {
	if h == nil {
		return fmt.Errorf("%w: nil handler for %q", ErrInvalidInput, p.Name)
	}
	return r.register(p, FormatJSON, false, toolImpl{jsonHandler: h})
}

// toolImpl is what register needs of a tool beyond its policy: an
// external tool's definition, compiled already, or a local tool's handler.
type toolImpl struct {
	def         *toolspec.Tool
	handler     LocalHandler
	jsonHandler LocalJSONHandler
}

func (r *Runtime) register(p ToolPolicy, f Format, external bool, impl toolImpl) error {
	p, err := p.normalize()
	if err != nil {
		return err
	}
	if _, dup := r.tools[p.Name]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateTool, p.Name)
	}
	if external && r.nonceErr != nil {
		return fmt.Errorf("%w: cannot register %q", r.nonceErr, p.Name)
	}
	if !external && p.Stream != nil {
		return fmt.Errorf("%w: %q: streaming applies to external tools only", ErrInvalidInput, p.Name)
	}
	t := &tool{policy: p, format: f, external: external, handler: impl.handler, jsonHandler: impl.jsonHandler, def: impl.def}
	if f == FormatJSON && t.def == nil {
		if t.def, err = jsonChecks(p.Name); err != nil {
			return err
		}
	}
	r.tools[p.Name] = t
	return nil
}

// Start starts a text tool and returns its promise; the Go counterpart of
// a script's tool.start, with the same policy checks.
func (r *Runtime) Start(tool, input string) (*Promise, error) {
	return r.startOp(tool, input, FormatText, nil)
}

// StartJSON starts a JSON tool; input must be valid JSON matching the
// tool's input schema.
func (r *Runtime) StartJSON(tool string, input json.RawMessage) (*Promise, error) {
	return r.startOp(tool, string(input), FormatJSON, nil)
}

func (r *Runtime) startOp(name, in string, format Format, onSettle func(Settlement)) (*Promise, error) {
	if err := r.granted(name); err != nil {
		return nil, err
	}
	if err := r.inputFits(name, in); err != nil {
		return nil, err
	}
	t, err := r.toolFor(name, format, in)
	if err != nil {
		return nil, err
	}
	if err := r.admit(t, true); err != nil {
		return nil, err
	}
	if err := r.checkPlan(t, name, in); err != nil {
		return nil, err
	}
	r.calls++
	r.lastID++
	now := r.clock.Now()
	op := &operation{id: r.lastID, tool: t, input: in, callIndex: r.calls, heapIndex: -1, state: Queued}
	if t.external {
		op.key = r.idempotencyKey(op.callIndex)
		r.external.push(op)
	} else {
		r.local.push(op)
	}
	if d := t.policy.MaxDeferredDuration; d > 0 {
		op.deadline = now.Add(d)
		r.deadlines.add(op)
	}
	op.promise = &Promise{r: r, id: op.id, onSettle: onSettle}
	r.ops.put(op)
	r.pending++
	t.started = true
	r.record(op, AuditStarted, "", len(in), 0)
	return op.promise, nil
}

// toolFor finds the tool and validates the input for its format.
func (r *Runtime) toolFor(name string, format Format, in string) (*tool, error) {
	t := r.tools[name]
	if t == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	if t.format != format {
		return nil, fmt.Errorf("%w: tool %q takes %s, got %s", ErrInvalidInput, name, t.format, format)
	}
	if format == FormatJSON {
		if err := t.def.ValidateInput(in); err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrInvalidInput, name, err)
		}
	}
	return t, nil
}

// admit checks the budget and, for starts, the pending limit. A denial
// is audited and consumes nothing.
func (r *Runtime) admit(t *tool, start bool) error {
	var err error
	switch {
	case r.budget > 0 && r.calls >= uint64(r.budget):
		err = fmt.Errorf("%w: %d of %d calls used", ErrBudgetExhausted, r.calls, r.budget)
	case start && r.maxPending > 0 && r.pending >= r.maxPending:
		err = fmt.Errorf("%w: %d pending", ErrPendingLimit, r.pending)
	}
	if err != nil {
		r.recordTool(t.policy.Name, AuditDenied, err.Error())
	}
	return err
}

// ExternalInvocation is what the host hands to a worker for one attempt.
type ExternalInvocation struct {
	ID             ExternalToolID
	Tool           string
	Input          string // text, or JSON text for JSON tools
	Format         Format
	CallIndex      uint64
	Attempt        uint32
	AttemptLimit   uint32
	IdempotencyKey string
	OutputLimit    int
	// Stream is a copy of the tool's stream policy, nil when streaming
	// is off; StreamUsed is what earlier attempts of the operation used
	// of it, since the bounds span every attempt.
	Stream            *ToolStreamPolicy
	StreamUsed        StreamUsage
	RemainingDeadline time.Duration
	HasDeadline       bool
	// Contract is what the definition the tool was registered from says
	// of it; it is shared, read-only.
	Contract *protocol.Contract
	// Idempotent is the tool's declaration that repeating its effect is
	// harmless: what a host may do with an operation nobody knows of.
	Idempotent bool
}

// ClaimNextExternalTool returns the oldest queued external operation as
// attempt 1 and marks it claimed, in O(1). Operations whose deadline has
// already passed are skipped and left for ExpireTimedOutTools, so a worker
// is never handed work that is already late.
func (r *Runtime) ClaimNextExternalTool() (ExternalInvocation, bool) {
	now := r.clock.Now()
	for op := r.external.head; op != nil; op = r.external.head {
		r.external.remove(op)
		if op.expired(now) {
			continue
		}
		op.move(Claimed)
		op.attempt = 1
		r.record(op, AuditClaimed, "", 0, 0)
		return r.invocation(op, now), true
	}
	return ExternalInvocation{}, false
}

func (r *Runtime) invocation(op *operation, now time.Time) ExternalInvocation {
	p := &op.tool.policy
	inv := ExternalInvocation{
		ID: op.id, Tool: p.Name, Input: op.input, Format: op.tool.format,
		CallIndex: op.callIndex, Attempt: op.attempt, AttemptLimit: uint32(p.MaxAttempts),
		IdempotencyKey: op.key, OutputLimit: p.MaxOutputBytes, Contract: op.tool.contract,
	}
	if c := op.tool.contract; c != nil {
		inv.Idempotent = c.Idempotent
	}
	if p.Stream != nil {
		s := *p.Stream
		inv.Stream = &s
		inv.StreamUsed = StreamUsage{Chunks: op.chunks, SourceBytes: op.sourceBytes, ReleasedBytes: op.releasedBytes}
	}
	if op.hasDeadline() {
		inv.HasDeadline = true
		inv.RemainingDeadline = max(op.deadline.Sub(now), 0)
	}
	return inv
}

// ToolResult is a worker's terminal answer: an output, or a failure.
type ToolResult struct {
	Output string // text, or JSON text for JSON tools
	Err    error
}

// Ok returns a successful result.
func Ok(output string) ToolResult { return ToolResult{Output: output} }

// Fail returns a failed result with reason.
func Fail(reason string) ToolResult { return ToolResult{Err: toolFailure(reason)} }

type toolFailure string

func (f toolFailure) Error() string { return string(f) }

// CompleteExternalTool resolves a claimed operation (or one with
// cancellation requested: a result may win that race) with res. A
// successful output passes the output limit, JSON envelope and JSON
// contract checks or resolves the promise as ToolInvalidOutput. A result
// after the deadline resolves as a timeout even if expiry never ran. The
// *EvalResult is non-nil when a script continuation ran.
func (r *Runtime) CompleteExternalTool(id ExternalToolID, res ToolResult) (*EvalResult, error) {
	op, err := r.lookup(id, actComplete)
	if err != nil {
		return nil, err
	}
	r.deliver(op, res, "")
	return r.finish(), nil
}

// deliver applies a terminal result to op, first converting a late one to
// a timeout.
func (r *Runtime) deliver(op *operation, res ToolResult, via string) {
	if op.expired(r.clock.Now()) {
		r.record(op, AuditLateResult, via, len(res.Output), 0)
		r.timeout(op, "result arrived after the deadline")
		return
	}
	name := op.tool.policy.Name
	if wf, ok := res.Err.(errWrongFormat); ok {
		reason := "output " + wf.Error()
		r.resolve(op, Failed, Settlement{Err: &ToolError{Tool: name, Kind: ToolInvalidOutput, Reason: reason}}, AuditFailed, reason, 0)
		return
	}
	if res.Err != nil {
		reason := res.Err.Error()
		r.resolve(op, Failed, Settlement{Err: &ToolError{Tool: name, Kind: ToolFailed, Reason: reason}}, AuditFailed, reason, 0)
		return
	}
	if err := checkOutput(op.tool, res.Output); err != nil {
		reason := err.Error()
		r.resolve(op, Failed, Settlement{Err: &ToolError{Tool: name, Kind: ToolInvalidOutput, Reason: reason}}, AuditFailed, reason, len(res.Output))
		return
	}
	r.resolve(op, Succeeded, Settlement{Output: res.Output}, AuditSucceeded, via, len(res.Output))
}

// resolve moves op to a terminal state, releases everything it held and
// settles its promise. Hooks run later, in finish.
func (r *Runtime) resolve(op *operation, to OperationState, s Settlement, outcome AuditOutcome, detail string, n int) {
	op.move(to)
	if op.queued {
		if op.tool.external {
			r.external.remove(op)
		} else {
			r.local.remove(op)
		}
	}
	r.deadlines.remove(op)
	r.ops.remove(op.id)
	r.pending--
	r.finished.add(op)
	r.record(op, outcome, detail, n, 0)
	if p := op.promise; p != nil {
		p.settled, p.s = true, s
		if p.onSettle != nil && !p.dropped {
			r.toNotify = append(r.toNotify, p)
		}
	}
}

// timeout resolves op as timed out.
func (r *Runtime) timeout(op *operation, reason string) {
	r.resolve(op, TimedOut, Settlement{Err: &ToolError{Tool: op.tool.policy.Name, Kind: ToolTimedOut, Reason: reason}}, AuditTimedOut, reason, 0)
}

// finish ends a public method: it runs the hooks of promises settled by
// it, then lets the script engine run the continuations once. Hooks may
// start new operations; a nested public method does not flush again.
func (r *Runtime) finish() *EvalResult {
	if r.flushing || len(r.toNotify) == 0 {
		return nil
	}
	r.flushing = true
	defer func() { r.flushing = false }()
	var res *EvalResult
	for len(r.toNotify) > 0 {
		for i := 0; i < len(r.toNotify); i++ {
			p := r.toNotify[i]
			r.toNotify[i] = nil
			p.onSettle(p.s)
		}
		r.toNotify = r.toNotify[:0]
		if r.script != nil {
			if e := r.script.afterSettle(); e != nil {
				res = e
			}
		}
	}
	return res
}

// lookup finds a live external operation on which a may act.
func (r *Runtime) lookup(id ExternalToolID, a action) (*operation, error) {
	op, err := r.live(id)
	if err != nil {
		return nil, err
	}
	if reason := refusal(a, op.state); reason != nil {
		return nil, r.stateError(op.id, op.tool.policy.Name, op.state, a, reason)
	}
	return op, nil
}

// live finds a live external operation in any state.
func (r *Runtime) live(id ExternalToolID) (*operation, error) {
	op := r.ops.get(id)
	if op == nil {
		if rec, ok := r.finished.get(id); ok {
			return nil, r.stateError(id, rec.tool.policy.Name, rec.state, numActions, ErrWrongState)
		}
		if id != 0 && id <= r.lastID {
			return nil, r.stateError(id, "", stateNone, numActions, ErrWrongState)
		}
		return nil, fmt.Errorf("%w: %q", ErrUnknownOperation, id.String())
	}
	if !op.tool.external {
		return nil, fmt.Errorf("%w: %s (%q)", ErrNotExternal, id, op.tool.policy.Name)
	}
	return op, nil
}

func (r *Runtime) stateError(id ExternalToolID, tool string, s OperationState, a action, reason error) error {
	act := "act on it"
	if a < numActions {
		act = actionNames[a]
	}
	return &StateError{ID: id, Tool: tool, State: s, Action: act, Err: reason}
}

// Operation describes a live operation, or a recently finished one.
func (r *Runtime) Operation(id ExternalToolID) (OperationInfo, bool) {
	if op := r.ops.get(id); op != nil {
		return op.info(), true
	}
	if rec, ok := r.finished.get(id); ok {
		return OperationInfo{
			ID: id, Tool: rec.tool.policy.Name, External: rec.tool.external, Format: rec.tool.format,
			State: rec.state, CallIndex: rec.callIndex, Attempt: rec.attempt,
			AttemptLimit: uint32(rec.tool.policy.MaxAttempts),
		}, true
	}
	return OperationInfo{}, false
}

// Pending returns how many operations hold a pending slot.
func (r *Runtime) Pending() int { return r.pending }

// CallsUsed returns how many tool calls the session has consumed.
func (r *Runtime) CallsUsed() uint64 { return r.calls }
