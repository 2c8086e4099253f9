package toolproc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolproc"
)

func TestMain(m *testing.M) {
	if os.Getenv(testToolEnv) != "" {
		os.Exit(runTestTool())
	}
	if os.Getenv(testMCPEnv) != "" {
		os.Exit(runTestMCPServer())
	}
	goleak.VerifyTestMain(m)
}

// counts is what a recorder has seen.
type counts struct {
	started, restarted, watched int
	poisoned                    map[string]int
	inFlight                    int
}

// recorder is an Observer that counts.
type recorder struct {
	mu sync.Mutex
	counts
}

func (r *recorder) ProcessStarted(string)   { r.mu.Lock(); r.started++; r.mu.Unlock() }
func (r *recorder) ProcessRestarted(string) { r.mu.Lock(); r.restarted++; r.mu.Unlock() }
func (r *recorder) WatchdogStop(string)     { r.mu.Lock(); r.watched++; r.mu.Unlock() }
func (r *recorder) ProcessInFlight(_ string, n int) {
	r.mu.Lock()
	r.inFlight = max(r.inFlight, n)
	r.mu.Unlock()
}
func (r *recorder) ProcessPoisoned(_, reason string) {
	r.mu.Lock()
	if r.poisoned == nil {
		r.poisoned = map[string]int{}
	}
	r.poisoned[reason]++
	r.mu.Unlock()
}

func (r *recorder) snapshot() counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := counts{started: r.started, restarted: r.restarted, watched: r.watched, inFlight: r.inFlight, poisoned: map[string]int{}}
	for k, v := range r.poisoned {
		c.poisoned[k] = v
	}
	return c
}

// testConfig runs this test binary as the tool.
func testConfig(obs toolproc.Observer) toolproc.Config {
	exe, _ := os.Executable()
	return toolproc.Config{
		Tool:           "test.tool",
		Command:        []string{exe},
		Env:            []string{testToolEnv + "=1"},
		Concurrency:    4,
		StopGrace:      time.Second,
		RestartInitial: 10 * time.Millisecond,
		RestartMax:     50 * time.Millisecond,
		Observer:       obs,
	}
}

func startSupervisor(t *testing.T, cfg toolproc.Config) *toolproc.Supervisor {
	t.Helper()
	s, err := toolproc.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testwait.DefaultTimeout)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func invoke(text string) protocol.Invoke {
	return protocol.Invoke{
		RequestID: "r-1", Tool: "test.tool", Input: protocol.TextPayload(text),
		CallIndex: 1, Attempt: 1, AttemptLimit: 3, IdempotencyKey: "k-1", OutputLimit: 1 << 20,
	}
}

func call(t *testing.T, s *toolproc.Supervisor, req toolproc.Request) toolproc.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.DefaultTimeout)
	defer cancel()
	done := make(chan toolproc.Outcome, 1)
	go func() { done <- s.Call(ctx, req) }()
	select {
	case o := <-done:
		return o
	case <-time.After(testwait.DefaultTimeout):
		t.Fatalf("call %q never ended", req.Invoke.Input.Text)
		return toolproc.Outcome{}
	}
}

func wantText(t *testing.T, o toolproc.Outcome, text string) {
	t.Helper()
	if o.Kind != toolproc.Answered || o.Result.Status != protocol.ResultSucceeded || o.Result.Payload == nil || o.Result.Payload.Text != text {
		t.Fatalf("outcome %v %+v (err %v), want result %q", o.Kind, o.Result, o.Err, text)
	}
}

func TestCallAnswers(t *testing.T) {
	rec := &recorder{}
	s := startSupervisor(t, testConfig(rec))
	wantText(t, call(t, s, toolproc.Request{Invoke: invoke("echo:hello")}), "hello")
	if got := rec.snapshot(); got.started != 1 || got.restarted != 0 {
		t.Errorf("started %d restarted %d, want 1 and 0", got.started, got.restarted)
	}
}

func TestResultStatuses(t *testing.T) {
	s := startSupervisor(t, testConfig(nil))
	for _, tc := range []struct {
		input  string
		status protocol.ResultStatus
		after  int64
	}{
		{"retry", protocol.ResultRetryTransient, 0},
		{"ratelimit:250", protocol.ResultRetryRateLimited, 250},
		{"fail", protocol.ResultFailed, 0},
		{"indeterminate", protocol.ResultIndeterminate, 0},
	} {
		o := call(t, s, toolproc.Request{Invoke: invoke(tc.input)})
		if o.Kind != toolproc.Answered || o.Result.Status != tc.status || o.Result.RetryAfterMillis != tc.after || o.Result.Error == "" {
			t.Errorf("%s: outcome %v %+v, want status %s after %d", tc.input, o.Kind, o.Result, tc.status, tc.after)
		}
	}
}

// The reference: several invocations in flight per process.
func TestConcurrentCallsShareOneProcess(t *testing.T) {
	rec := &recorder{}
	s := startSupervisor(t, testConfig(rec))
	const n = 4
	var wg sync.WaitGroup
	outs := make([]toolproc.Outcome, n)
	release := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			outs[i] = call(t, s, toolproc.Request{Invoke: invoke("sleep:300ms")})
		}()
	}
	close(release)
	wg.Wait()
	for i, o := range outs {
		wantText(t, o, "slept")
		_ = i
	}
	got := rec.snapshot()
	if got.started != 1 {
		t.Errorf("started %d processes, want 1", got.started)
	}
	if got.inFlight < 2 {
		t.Errorf("at most %d calls were in flight at once, want several", got.inFlight)
	}
}

func TestChunksReleasedInOrder(t *testing.T) {
	s := startSupervisor(t, testConfig(nil))
	var got []string
	o := call(t, s, toolproc.Request{Invoke: invoke("chunks:5"), Chunk: func(text string) error {
		got = append(got, text)
		return nil
	}})
	wantText(t, o, "streamed 5")
	if want := "chunk 1,chunk 2,chunk 3,chunk 4,chunk 5"; strings.Join(got, ",") != want {
		t.Errorf("chunks %q, want %q", got, want)
	}
}

// The reference: acknowledged only after the tool says its effect stopped.
func TestCancelAcknowledged(t *testing.T) {
	s := startSupervisor(t, testConfig(nil))
	cancel := make(chan struct{})
	var told []protocol.CancelDisposition
	close(cancel)
	o := call(t, s, toolproc.Request{Invoke: invoke("sleep:1h"), Cancel: cancel,
		Disposition: func(d protocol.CancelDisposition) { told = append(told, d) }})
	if o.Kind != toolproc.CancelAcknowledged {
		t.Fatalf("outcome %v (%v), want cancel acknowledged", o.Kind, o.Err)
	}
	if len(told) != 1 || told[0] != protocol.CancelAcknowledged {
		t.Errorf("dispositions %v, want [acknowledged]", told)
	}
	// The session is still good.
	wantText(t, call(t, s, toolproc.Request{Invoke: invoke("echo:after")}), "after")
}

// The reference: a normal result wins when it comes before too_late.
func TestCancelTooLateResultWins(t *testing.T) {
	s := startSupervisor(t, testConfig(nil))
	cancel := make(chan struct{})
	told := make(chan protocol.CancelDisposition, 1)
	close(cancel)
	o := call(t, s, toolproc.Request{Invoke: invoke("finish:1h"), Cancel: cancel,
		Disposition: func(d protocol.CancelDisposition) { told <- d }})
	wantText(t, o, "finished anyway")
	select {
	case d := <-told:
		if d != protocol.CancelTooLate {
			t.Errorf("disposition %s, want too_late", d)
		}
	case <-time.After(testwait.DefaultTimeout):
		t.Fatal("too_late never arrived")
	}
	wantText(t, call(t, s, toolproc.Request{Invoke: invoke("echo:after")}), "after")
}

// The reference: unsupported keeps the call pending; without a positive
// acknowledgement the watchdog ends it, indeterminate.
func TestCancelUnsupportedThenWatchdog(t *testing.T) {
	rec := &recorder{}
	s := startSupervisor(t, testConfig(rec))
	wantText(t, call(t, s, toolproc.Request{Invoke: invoke("echo:warm")}), "warm") // the start must not eat the deadline
	cancel := make(chan struct{})
	told := make(chan protocol.CancelDisposition, 1)
	close(cancel)
	o := call(t, s, toolproc.Request{Invoke: invoke("hang"), Cancel: cancel, Deadline: time.Now().Add(2 * time.Second),
		Disposition: func(d protocol.CancelDisposition) { told <- d }})
	if o.Kind != toolproc.Lost || !o.Watchdog || !errors.Is(o.Err, toolproc.ErrWatchdog) {
		t.Fatalf("outcome %v watchdog %v (%v), want lost to the watchdog", o.Kind, o.Watchdog, o.Err)
	}
	if d := testwait.Receive(t, 0, "the disposition", told); d != protocol.CancelUnsupported {
		t.Errorf("disposition %s, want unsupported", d)
	}
	if got := rec.snapshot(); got.watched != 1 || got.poisoned[toolproc.ReasonWatchdog] != 1 {
		t.Errorf("watchdog stops %d, poisoned %v", got.watched, got.poisoned)
	}
}

// The reference: the supervisor arms the deadline before it writes the
// invocation and poisons the session when the deadline wins; the next
// call gets a fresh process.
func TestWatchdogStopsHungToolNextCallFreshProcess(t *testing.T) {
	rec := &recorder{}
	s := startSupervisor(t, testConfig(rec))
	held := make(chan toolproc.Outcome, 1)
	go func() {
		held <- s.Call(context.Background(), toolproc.Request{Invoke: invoke("sleep:1h")})
	}()
	o := call(t, s, toolproc.Request{Invoke: invoke("hang"), Deadline: time.Now().Add(300 * time.Millisecond)})
	if o.Kind != toolproc.Lost || !o.Watchdog {
		t.Fatalf("outcome %v watchdog %v (%v), want lost to the watchdog", o.Kind, o.Watchdog, o.Err)
	}
	// The other call of the process is lost with it, but not as the
	// watchdog's own.
	if h := <-held; h.Kind != toolproc.Lost || h.Watchdog || h.Stopped {
		t.Errorf("held call: %v watchdog %v stopped %v, want lost", h.Kind, h.Watchdog, h.Stopped)
	}
	wantText(t, call(t, s, toolproc.Request{Invoke: invoke("echo:fresh")}), "fresh")
	if got := rec.snapshot(); got.started != 2 || got.restarted != 1 {
		t.Errorf("started %d restarted %d, want 2 and 1", got.started, got.restarted)
	}
}

func TestDeadlineMetByResultDisarmsWatchdog(t *testing.T) {
	rec := &recorder{}
	s := startSupervisor(t, testConfig(rec))
	// The process is started first, so its start (slow under -race on a
	// busy machine) does not eat the deadline.
	wantText(t, call(t, s, toolproc.Request{Invoke: invoke("echo:warm")}), "warm")
	wantText(t, call(t, s, toolproc.Request{Invoke: invoke("echo:quick"), Deadline: time.Now().Add(testwait.Scale(time.Second))}), "quick")
	// A call that outlives the first one's deadline runs in the same
	// process: the timer was stopped at the result.
	wantText(t, call(t, s, toolproc.Request{Invoke: invoke("sleep:1200ms")}), "slept")
	if got := rec.snapshot(); got.watched != 0 || got.started != 1 {
		t.Errorf("watchdog stops %d, processes %d; want 0 and 1", got.watched, got.started)
	}
}

func TestCrashMidCallIsLostAndRestarted(t *testing.T) {
	rec := &recorder{}
	s := startSupervisor(t, testConfig(rec))
	o := call(t, s, toolproc.Request{Invoke: invoke("crash")})
	if o.Kind != toolproc.Lost || o.Watchdog || o.Stopped || !errors.Is(o.Err, toolproc.ErrPoisoned) {
		t.Fatalf("outcome %v (%v), want lost", o.Kind, o.Err)
	}
	wantText(t, call(t, s, toolproc.Request{Invoke: invoke("echo:again")}), "again")
	got := rec.snapshot()
	if got.poisoned[toolproc.ReasonExited] != 1 || got.restarted != 1 {
		t.Errorf("poisoned %v restarted %d, want one exit and one restart", got.poisoned, got.restarted)
	}
}

func TestCloseStopsHeldCalls(t *testing.T) {
	s, err := toolproc.New(testConfig(nil))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	held := make(chan toolproc.Outcome, 1)
	go func() {
		held <- s.Call(context.Background(), toolproc.Request{Invoke: invoke("sleep:1h"), Chunk: func(string) error { return nil }})
	}()
	// Wait until the process answers a call, so the held one is in it.
	go func() {
		s.Call(context.Background(), toolproc.Request{Invoke: invoke("echo:up")})
		close(started)
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), testwait.DefaultTimeout)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	o := <-held
	if o.Kind != toolproc.Lost || !o.Stopped || !errors.Is(o.Err, toolproc.ErrStopped) {
		t.Fatalf("outcome %v stopped %v (%v), want lost, stopped", o.Kind, o.Stopped, o.Err)
	}
	if o := s.Call(ctx, toolproc.Request{Invoke: invoke("echo:late")}); o.Kind != toolproc.NotStarted || !errors.Is(o.Err, toolproc.ErrClosed) {
		t.Errorf("call after Close: %v (%v)", o.Kind, o.Err)
	}
}

// Each kind of bad frame fails closed: the session is poisoned, its call
// lost, the reason counted, and the next call served by a fresh process.
func TestBadFramesPoisonTheSession(t *testing.T) {
	for _, tc := range []struct {
		kind, reason string
		cancel       bool
	}{
		{"notag", toolproc.ReasonGarbage, false},
		{"wrongkey", toolproc.ReasonBadTag, false},
		{"replay", toolproc.ReasonSequence, false},
		{"skipseq", toolproc.ReasonSequence, false},
		{"wrongid", toolproc.ReasonUnknownRequest, false},
		{"twice", toolproc.ReasonContradictory, false},
		{"afterack", toolproc.ReasonContradictory, true},
		{"earlytoolate", toolproc.ReasonContradictory, true},
		{"garbage", toolproc.ReasonGarbage, false},
		{"hugeline", toolproc.ReasonTooLong, false},
		{"flood", toolproc.ReasonFlood, false},
		{"hostrole", toolproc.ReasonWrongSession, false},
		{"invoke", toolproc.ReasonInvalidMessage, false},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			rec := &recorder{}
			s := startSupervisor(t, testConfig(rec))
			req := toolproc.Request{Invoke: invoke("bad:" + tc.kind)}
			// Every chunk is refused, as past the stream bounds.
			req.Chunk = func(string) error { return errors.New("over the bound") }
			if tc.cancel {
				c := make(chan struct{})
				close(c)
				req.Cancel = c
			}
			o := call(t, s, req)
			if tc.kind == "twice" || tc.kind == "afterack" {
				// The first terminal frame was a true answer; the poison
				// comes with the second. Wait for it to be counted.
				testwait.Until(t, testwait.DefaultTimeout, "poisoned", func() bool { return rec.snapshot().poisoned[tc.reason] == 1 })
			} else {
				var pe *toolproc.PoisonError
				if o.Kind != toolproc.Lost || !errors.As(o.Err, &pe) || pe.Reason != tc.reason {
					t.Fatalf("outcome %v (%v), want lost, poisoned for %s", o.Kind, o.Err, tc.reason)
				}
			}
			if got := rec.snapshot().poisoned; got[tc.reason] != 1 {
				t.Errorf("poisoned %v, want one %s", got, tc.reason)
			}
			wantText(t, call(t, s, toolproc.Request{Invoke: invoke("echo:fresh")}), "fresh")
			if got := rec.snapshot(); got.started != 2 {
				t.Errorf("started %d processes, want 2", got.started)
			}
		})
	}
}

func TestEnvironmentIsOnlyWhatWasGiven(t *testing.T) {
	t.Setenv("SPLASH_SECRET_OF_THE_WORKER", "do-not-leak")
	cfg := testConfig(nil)
	cfg.Env = append(cfg.Env, "GIVEN=yes")
	s := startSupervisor(t, cfg)
	o := call(t, s, toolproc.Request{Invoke: invoke("env")})
	if o.Kind != toolproc.Answered {
		t.Fatalf("outcome %v (%v)", o.Kind, o.Err)
	}
	env := strings.Split(o.Result.Payload.Text, "\n")
	var names []string
	for _, e := range env {
		name, _, _ := strings.Cut(e, "=")
		names = append(names, name)
	}
	want := "GIVEN,SPLASH_TOOL_KEY_FD,SPLASH_TOOL_NAME,SPLASH_TOOL_SESSION," + testToolEnv
	if got := strings.Join(names, ","); got != want {
		t.Errorf("environment names %s, want %s", got, want)
	}
}

// A tool that exits as soon as it starts fails its calls (nothing was
// written to it) instead of holding them while it restarts.
func TestToolExitingAtStartFailsItsCalls(t *testing.T) {
	rec := &recorder{}
	cfg := testConfig(rec)
	cfg.Env = []string{testToolEnv + "=exit-at-start"}
	s := startSupervisor(t, cfg)
	o := call(t, s, toolproc.Request{Invoke: invoke("echo:never")})
	if o.Kind != toolproc.NotStarted && o.Kind != toolproc.Lost {
		t.Fatalf("outcome %v (%v), want not started or lost", o.Kind, o.Err)
	}
	if got := rec.snapshot(); got.started < 1 || got.poisoned[toolproc.ReasonExited] < 1 {
		t.Errorf("started %d, poisoned %v", got.started, got.poisoned)
	}
}

func TestUnknownCommandRefused(t *testing.T) {
	cfg := testConfig(nil)
	cfg.Command = []string{"splash-no-such-command"}
	if _, err := toolproc.New(cfg); !errors.Is(err, toolproc.ErrStartFailed) {
		t.Fatalf("New: %v, want ErrStartFailed", err)
	}
}

func TestContainedToolRefusesWithoutBwrap(t *testing.T) {
	cfg := testConfig(nil)
	cfg.Contain = &toolproc.Containment{}
	cfg.Bwrap = filepath.Join(t.TempDir(), "no-bwrap")
	_, err := toolproc.New(cfg)
	if !errors.Is(err, toolproc.ErrContainmentUnavailable) {
		t.Fatalf("New: %v, want ErrContainmentUnavailable", err)
	}
	if !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Errorf("the error does not say what to install: %v", err)
	}
}

// containedConfig runs the test tool under Bubblewrap. The test binary
// lives under /tmp, which the sandbox replaces with a private one; the
// supervisor binds its top directory back, so nothing is needed here.
func containedConfig(c toolproc.Containment) toolproc.Config {
	cfg := testConfig(nil)
	cfg.Contain = &c
	return cfg
}

// A contained tool whose directory lies under /tmp (a checkout there)
// still starts in it: the private /tmp does not hide it.
func TestContainedToolLivingUnderTmp(t *testing.T) {
	requireBwrap(t)
	cfg := containedConfig(toolproc.Containment{})
	cfg.Dir = t.TempDir()
	s := startSupervisor(t, cfg)
	wantText(t, call(t, s, toolproc.Request{Invoke: invoke("echo:here")}), "here")
}

// requireBwrap skips a containment test where Bubblewrap is missing,
// unless SPLASH_BWRAP=require (as in .ci/run) makes that a failure.
func requireBwrap(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("SPLASH_BWRAP") == "require" {
			t.Fatalf("bwrap required: %v", err)
		}
		t.Skip("bwrap not installed (apt-get install bubblewrap)")
	}
}

func TestContainedToolHasNoNetwork(t *testing.T) {
	requireBwrap(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	free := startSupervisor(t, testConfig(nil))
	wantText(t, call(t, free, toolproc.Request{Invoke: invoke("dial:" + l.Addr().String())}), "connected")

	s := startSupervisor(t, containedConfig(toolproc.Containment{}))
	o := call(t, s, toolproc.Request{Invoke: invoke("dial:" + l.Addr().String())})
	if o.Kind != toolproc.Answered || !strings.HasPrefix(o.Result.Payload.Text, "refused") {
		t.Fatalf("contained dial: %v %+v (%v), want refused", o.Kind, o.Result, o.Err)
	}
}

func TestContainedToolWritesOnlyItsBinds(t *testing.T) {
	requireBwrap(t)
	outside, rw := t.TempDir(), t.TempDir()
	// The tool runs as uid 65534 (on the host too, under a root worker):
	// a read-write bind is the tool's to write only if its mode says so.
	if err := os.Chmod(rw, 0o777); err != nil {
		t.Fatal(err)
	}
	s := startSupervisor(t, containedConfig(toolproc.Containment{RWBinds: []toolproc.Bind{{Src: rw, Dst: rw}}}))
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(rw, "ok"), "written"},
		{filepath.Join(outside, "escape"), "refused"},
		{"/tmp/private", "written"},
	} {
		o := call(t, s, toolproc.Request{Invoke: invoke("write:" + tc.path)})
		if o.Kind != toolproc.Answered || !strings.HasPrefix(o.Result.Payload.Text, tc.want) {
			t.Errorf("write %s: %v %+v, want %s", tc.path, o.Kind, o.Result, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(rw, "ok")); err != nil {
		t.Errorf("the rw bind did not get the file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "escape")); err == nil {
		t.Error("a file was written outside the binds")
	}
	if _, err := os.Stat("/tmp/private"); err == nil {
		t.Error("the sandbox's /tmp is the machine's")
	}
}

// The watchdog stops a contained process too: the signal reaches bwrap,
// and the tool dies with its sandbox.
func TestContainedToolStoppedByWatchdog(t *testing.T) {
	requireBwrap(t)
	rec := &recorder{}
	cfg := containedConfig(toolproc.Containment{})
	cfg.Observer = rec
	s := startSupervisor(t, cfg)
	o := call(t, s, toolproc.Request{Invoke: invoke("hang"), Deadline: time.Now().Add(300 * time.Millisecond)})
	if o.Kind != toolproc.Lost || !o.Watchdog {
		t.Fatalf("outcome %v watchdog %v (%v), want lost to the watchdog", o.Kind, o.Watchdog, o.Err)
	}
	wantText(t, call(t, s, toolproc.Request{Invoke: invoke("echo:fresh")}), "fresh")
	if got := rec.snapshot(); got.started != 2 {
		t.Errorf("started %d processes, want 2", got.started)
	}
}

func TestContainedToolSeesOnlyGivenEnvironment(t *testing.T) {
	requireBwrap(t)
	t.Setenv("SPLASH_SECRET_OF_THE_WORKER", "do-not-leak")
	cfg := containedConfig(toolproc.Containment{})
	cfg.Env = append(cfg.Env, "GIVEN=yes")
	s := startSupervisor(t, cfg)
	o := call(t, s, toolproc.Request{Invoke: invoke("env")})
	if o.Kind != toolproc.Answered {
		t.Fatalf("outcome %v (%v)", o.Kind, o.Err)
	}
	for _, e := range strings.Split(o.Result.Payload.Text, "\n") {
		name, _, _ := strings.Cut(e, "=")
		switch name {
		case "GIVEN", "SPLASH_TOOL_KEY_FD", "SPLASH_TOOL_NAME", "SPLASH_TOOL_SESSION", testToolEnv:
		case "PWD": // bwrap's own, the sandbox's working directory
		default:
			t.Errorf("contained tool sees %s", name)
		}
	}
}

func ExampleSupervisor() {
	exe, _ := os.Executable()
	sup, err := toolproc.New(toolproc.Config{
		Tool:    "test.tool",
		Command: []string{exe}, // the test binary doubles as a tool
		Env:     []string{testToolEnv + "=1"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sup.Close(context.Background())
	out := sup.Call(context.Background(), toolproc.Request{Invoke: invoke("echo:hello")})
	fmt.Println(out.Kind, out.Result.Payload.Text)
	// Output: answered hello
}
