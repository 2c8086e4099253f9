package toolproc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/toolproc"
	"github.com/splashfabric/splashfabric/toolspec"
)

// attacksChildEnv makes TestSandboxAttacks, re-run by itself in a child of
// the test, the worker as an ordinary user.
const attacksChildEnv = "TOOLPROC_ATTACKS_AS_USER"

// userUID is the ordinary user the worker runs as in the child: an id
// with no entry in /etc/passwd, which a clean CI machine has too.
const userUID = 4242

// TestSandboxAttacks is each attack of a tool on its worker, against a
// real contained child process, with the worker as root and as an
// ordinary user. Each ends in a refusal, or in a limit with its reason
// code; after each the next call is served by a healthy process.
func TestSandboxAttacks(t *testing.T) {
	requireBwrap(t)
	if os.Getenv(attacksChildEnv) != "" {
		runAttacks(t)
		return
	}
	t.Run("worker=root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("the worker runs as root only when the test does")
		}
		runAttacks(t)
	})
	t.Run("worker=user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			runAttacks(t)
			return
		}
		runAttacksAsUser(t)
	})
}

// runAttacksAsUser runs TestSandboxAttacks again in a child process of
// uid userUID: a copy of this binary in a directory that user may read,
// its temporary files in one it may write.
func runAttacksAsUser(t *testing.T) {
	dir := worldDir(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "toolproc.test")
	copyFile(t, exe, bin, 0o755)
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^TestSandboxAttacks$", "-test.count", "1", "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{attacksChildEnv + "=1", "TMPDIR=" + tmp, "PATH=/usr/local/bin:/usr/bin:/bin", "SPLASH_BWRAP=" + os.Getenv("SPLASH_BWRAP")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: userUID, Gid: userUID, Groups: []uint32{}}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("the worker as uid %d:\n%s", userUID, out.String())
	if err != nil {
		t.Fatalf("the attacks as an ordinary user: %v", err)
	}
	if !strings.Contains(out.String(), "--- PASS: TestSandboxAttacks") {
		t.Fatal("the child did not run the attacks")
	}
}

// worldDir is a temporary directory every user may read, outside /tmp
// (where a sandbox has its own).
func worldDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "toolproc-attack-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// attack is one attack and how it must end.
type attack struct {
	name  string
	input string
	// network runs it in a sandbox with the network granted.
	network bool
	// cancel cancels the call once the tool has it.
	cancel bool
	// reason is the poison the attack must end in; "" means the call
	// is answered and check judges the answer.
	reason string
	check  func(answer string) error
}

func answerHas(parts ...string) func(string) error {
	return func(a string) error {
		for _, p := range parts {
			if !strings.Contains(a, p) {
				return fmt.Errorf("answer %q lacks %q", a, p)
			}
		}
		return nil
	}
}

// attackLimits are tight enough that each limit is reached quickly.
var attackLimits = toolproc.Limits{Memory: 256 << 20, Pids: 64, TmpSize: 8 << 20, FileSize: 4 << 20, CPUSeconds: 1}

func runAttacks(t *testing.T) {
	// The worker's secrets: a data directory and a key file outside
	// /tmp (a sandbox's /tmp is its own, which would prove nothing),
	// and a token in its environment.
	secrets := worldDir(t)
	dataDir := filepath.Join(secrets, "data")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(dataDir, "api.token")
	keyFile := filepath.Join(secrets, "frame.key")
	for _, f := range []string{token, keyFile} {
		if err := os.WriteFile(f, []byte("secret-of-the-worker"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("SPLASH_API_TOKEN", "secret-of-the-worker")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go acceptAll(l)
	worker := strconv.Itoa(os.Getpid())

	attacks := []attack{
		{name: "capabilities", input: "status", check: answerHas("CapEff: 0000000000000000", "CapPrm: 0000000000000000", "CapBnd: 0000000000000000", "NoNewPrivs: 1", "Seccomp: 2")},
		{name: "uid", input: "status", check: answerHas("uid 65534\n", "Uid: 65534 65534 65534 65534", "Gid: 65534 65534 65534 65534")},
		{name: "remount / read-write", input: "remount", check: answerHas("refused: operation not permitted")},
		{name: "read the data dir", input: "read:" + token, check: answerHas("refused:", "no such file or directory")},
		{name: "read the key file", input: "read:" + keyFile, check: answerHas("refused:", "no such file or directory")},
		{name: "read the worker's environ", input: "read:/proc/" + worker + "/environ", check: answerHas("refused:")},
		{name: "read pid 1's environ", input: "read:/proc/1/environ", check: func(a string) error {
			// The sandbox's own pid 1, which holds nothing of the worker.
			if strings.Contains(a, "secret") {
				return fmt.Errorf("answer %q", a)
			}
			return nil
		}},
		{name: "socket without network", input: "dial:" + l.Addr().String(), check: answerHas("refused:")},
		{name: "socket with network", input: "dial:" + l.Addr().String(), network: true, check: answerHas("connected")},
		{name: "ptrace", input: "ptrace", check: answerHas("refused: operation not permitted")},
		{name: "fork bomb", input: "forkbomb", reason: toolproc.ReasonPidsLimit},
		{name: "allocate 4 GB", input: "alloc:4096", reason: toolproc.ReasonMemoryLimit},
		{name: "fill /tmp", input: "filltmp", reason: toolproc.ReasonTmpFull},
		{name: "burn CPU", input: "spin", reason: toolproc.ReasonCPULimit},
		{name: "a file past the size limit", input: "bigfile:16", check: answerHas("refused:", "file too large")},
		{name: "answer a cancel unsupported", input: "hang", cancel: true, reason: toolproc.ReasonCancelUnsupported},
		{name: "ignore a cancel", input: "ignore", cancel: true, reason: toolproc.ReasonCancelUnanswered},
		{name: "flood stdout with one line", input: "bad:hugeline", reason: toolproc.ReasonTooLong},
		{name: "flood stdout with chunks", input: "bad:flood", reason: toolproc.ReasonFlood},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			rec := &recorder{}
			cfg := containedConfig(toolproc.Containment{Network: a.network, Limits: attackLimits})
			cfg.Observer = rec
			cfg.CancelGrace = 300 * time.Millisecond
			cfg.Protected = toolspec.Protected{Secrets: []string{dataDir, keyFile}}
			s := startSupervisor(t, cfg)
			wantText(t, call(t, s, toolproc.Request{Invoke: invoke("echo:before")}), "before")
			req := toolproc.Request{Invoke: invoke(a.input), Chunk: func(string) error { return errors.New("past the bounds") }}
			if a.cancel {
				c := make(chan struct{})
				close(c)
				req.Cancel = c
			}
			o := call(t, s, req)
			if a.reason == "" {
				if o.Kind != toolproc.Answered || o.Result.Payload == nil {
					t.Fatalf("outcome %v (%v), want an answer", o.Kind, o.Err)
				}
				if err := a.check(o.Result.Payload.Text); err != nil {
					t.Fatal(err)
				}
			} else {
				var pe *toolproc.PoisonError
				if o.Kind != toolproc.Lost || !errors.As(o.Err, &pe) || pe.Reason != a.reason {
					t.Fatalf("outcome %v (%v), want lost with reason %s", o.Kind, o.Err, a.reason)
				}
				if got := rec.snapshot().poisoned[a.reason]; got != 1 {
					t.Errorf("poisoned %v, want one %s", rec.snapshot().poisoned, a.reason)
				}
			}
			// The worker is untouched and the tool is served again.
			wantText(t, call(t, s, toolproc.Request{Invoke: invoke("echo:after")}), "after")
		})
	}
}

func acceptAll(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// A tool that writes into a read-write bind leaves files of uid 65534
// under a root worker (unprivileged on the host, not root), and of the
// worker's own user under an ordinary one.
func TestSandboxFilesAreUnprivileged(t *testing.T) {
	requireBwrap(t)
	rw := worldDir(t)
	if err := os.Chmod(rw, 0o777); err != nil {
		t.Fatal(err)
	}
	s := startSupervisor(t, containedConfig(toolproc.Containment{RWBinds: []toolproc.Bind{{Src: rw, Dst: rw}}}))
	path := filepath.Join(rw, "made")
	wantText(t, call(t, s, toolproc.Request{Invoke: invoke("write:" + path)}), "written")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	want := uint32(os.Geteuid())
	if want == 0 {
		want = toolproc.SandboxUID
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != want {
		t.Fatalf("the tool's file belongs to uid %d, want %d", uid, want)
	}
}

// A sandbox that would hold the worker's secrets is refused before any
// process starts.
func TestSandboxRefusesProtectedPaths(t *testing.T) {
	requireBwrap(t)
	secret := worldDir(t)
	for _, tc := range []struct {
		name string
		edit func(*toolproc.Config)
	}{
		{"the tool's directory", func(c *toolproc.Config) { c.Dir = secret }},
		{"a bind", func(c *toolproc.Config) {
			c.Contain.ROBinds = []toolproc.Bind{{Src: filepath.Dir(secret), Dst: "/data"}}
		}},
		{"the home", func(c *toolproc.Config) {
			c.Protected.Home = filepath.Join(secret, "home")
			c.Contain.RWBinds = []toolproc.Bind{{Src: secret, Dst: "/x"}}
			c.Protected.Secrets = nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := containedConfig(toolproc.Containment{})
			cfg.Protected = toolspec.Protected{Secrets: []string{secret}}
			tc.edit(&cfg)
			_, err := toolproc.New(cfg)
			if !errors.Is(err, toolspec.ErrUnsafeBind) || !errors.Is(err, toolproc.ErrInvalidConfig) {
				t.Fatalf("New: %v, want ErrUnsafeBind", err)
			}
		})
	}
}

// A poisoned session's error names the line by number and size, never
// by what the tool wrote: it reaches the audit and the script.
func TestPoisonHoldsNoToolBytes(t *testing.T) {
	const secret = "tok-3f9a1c-secret"
	for _, contained := range []bool{false, true} {
		t.Run(fmt.Sprintf("contained=%v", contained), func(t *testing.T) {
			cfg := testConfig(nil)
			if contained {
				requireBwrap(t)
				cfg = containedConfig(toolproc.Containment{})
			}
			cfg.Env = append(cfg.Env, "CHATTER_SECRET="+secret)
			s := startSupervisor(t, cfg)
			o := call(t, s, toolproc.Request{Invoke: invoke("bad:chatter")})
			var pe *toolproc.PoisonError
			if o.Kind != toolproc.Lost || !errors.As(o.Err, &pe) || pe.Reason != toolproc.ReasonGarbage {
				t.Fatalf("outcome %v (%v), want lost as garbage", o.Kind, o.Err)
			}
			if msg := o.Err.Error(); strings.Contains(msg, "tok-") || strings.Contains(msg, "api-token") {
				t.Fatalf("the error holds the tool's bytes: %s", msg)
			}
			if want := len("api-token=" + secret); pe.Line != 1 || pe.Bytes != want {
				t.Errorf("line %d bytes %d, want 1 and %d", pe.Line, pe.Bytes, want)
			}
		})
	}
}

// A call without a deadline still ends, at the worker's maximum runtime,
// and the watchdog's stop counts it.
func TestMaxRuntimeEndsACallWithoutDeadline(t *testing.T) {
	rec := &recorder{}
	cfg := testConfig(rec)
	cfg.MaxRuntime = 300 * time.Millisecond
	s := startSupervisor(t, cfg)
	o := call(t, s, toolproc.Request{Invoke: invoke("ignore")})
	var pe *toolproc.PoisonError
	if o.Kind != toolproc.Lost || !o.Watchdog || !errors.As(o.Err, &pe) || pe.Reason != toolproc.ReasonMaxRuntime {
		t.Fatalf("outcome %v watchdog %v (%v), want lost at the maximum runtime", o.Kind, o.Watchdog, o.Err)
	}
	if got := rec.snapshot(); got.watched != 1 {
		t.Errorf("watchdog stops %d, want 1", got.watched)
	}
	// The next call has a deadline of its own, so the short maximum is
	// not its bound: starting the process again may take longer on a
	// busy machine.
	wantText(t, call(t, s, toolproc.Request{Invoke: invoke("echo:next"), Deadline: time.Now().Add(testwait.DefaultTimeout)}), "next")
}

// A cancelled call of a tool that honours no cancellation is sent
// nothing, and stopped at the end of the grace unless it ends first.
func TestUncancellableCallStoppedAfterGrace(t *testing.T) {
	for _, tc := range []struct {
		input  string
		finish bool
	}{{"ignore", false}, {"sleep:50ms", true}} {
		t.Run(tc.input, func(t *testing.T) {
			cfg := testConfig(nil)
			cfg.CancelGrace = 2 * time.Second
			if !tc.finish {
				cfg.CancelGrace = 200 * time.Millisecond
			}
			s := startSupervisor(t, cfg)
			c := make(chan struct{})
			close(c)
			o := call(t, s, toolproc.Request{Invoke: invoke(tc.input), Cancel: c, Uncancellable: true})
			if tc.finish {
				// Nothing reached the tool: it ran to its end.
				wantText(t, o, "slept")
				return
			}
			var pe *toolproc.PoisonError
			if o.Kind != toolproc.Lost || !o.Stopped || !errors.Is(o.Err, toolproc.ErrCancelUnanswered) || !errors.As(o.Err, &pe) || pe.Reason != toolproc.ReasonCancelUnsupported {
				t.Fatalf("outcome %v stopped %v (%v), want stopped as cancel_unsupported", o.Kind, o.Stopped, o.Err)
			}
		})
	}
}

// The sandbox's limits are enforced by the mechanism the supervisor
// reports: a cgroup v2 where the worker may make one, rlimits elsewhere.
func TestLimitMechanismReported(t *testing.T) {
	requireBwrap(t)
	s := startSupervisor(t, containedConfig(toolproc.Containment{}))
	switch m := s.LimitMechanism(); m {
	case toolproc.LimitsCgroup, toolproc.LimitsRlimit:
		t.Logf("limits enforced by %s", m)
	default:
		t.Fatalf("mechanism %q", m)
	}
	if m := startSupervisor(t, testConfig(nil)).LimitMechanism(); m != "" {
		t.Errorf("an uncontained tool reports %q", m)
	}
}
