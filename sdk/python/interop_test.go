package python_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/sdk/go/splashtool/splashtooltest"
)

// These tests run Python tools built on splash_tool.py as the worker runs
// them, and talk to them through a host-role session.

const (
	session = "proc-py"
	// patience bounds every wait; slow_upper takes 200 ms a word.
	patience = 20 * time.Second
)

// TestMain checks that every tool's pipes and reader goroutines are gone.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var testKey = protocol.SessionKeyFromArray([protocol.AuthTagBytes]byte{0xde, 0xad, 0xbe, 0xef})

// lockedBuffer collects the child's stderr, which exec copies on its own
// goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type tool struct {
	*splashtooltest.Process
	t      *testing.T
	stderr *lockedBuffer
}

// startTool runs `python3 script` in dir with the SDK on PYTHONPATH; the
// process is killed and reaped when the test ends.
func startTool(t *testing.T, dir, script, pythonPath string) *tool {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH")
	}
	cmd := exec.Command(python, script)
	cmd.Dir = dir
	// No __pycache__ left in the source tree.
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonPath, "PYTHONDONTWRITEBYTECODE=1")
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	p, err := splashtooltest.StartProcess(cmd, session, "text.upper", testKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("tool stderr:\n%s", stderr.String())
		}
	})
	return &tool{Process: p, t: t, stderr: stderr}
}

func startSlowUpper(t *testing.T) *tool {
	t.Parallel()
	return startTool(t, "../../examples/python", "slow_upper.py", "../../sdk/python")
}

func (tl *tool) send(msg protocol.WorkerMessage) { tl.t.Helper(); tl.MustSend(tl.t, msg) }

func (tl *tool) next() protocol.WorkerMessage { tl.t.Helper(); return tl.MustNext(tl.t, patience) }

// exit closes the tool's input, checks it wrote nothing more, and returns
// how it exited.
func (tl *tool) exit() error {
	tl.t.Helper()
	_ = tl.CloseInput()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if m, err := tl.Next(ctx); !errors.Is(err, splashtooltest.ErrClosed) {
		tl.t.Fatalf("want end of output, got %s %+v, %v", m.Kind, m, err)
	}
	select {
	case <-tl.Exited():
	case <-ctx.Done():
		tl.t.Fatal("tool did not exit")
	}
	return tl.Wait()
}

func invoke(id, text string, attempt uint32) protocol.WorkerMessage {
	return protocol.InvokeMessage(protocol.Invoke{
		RequestID: id, Tool: "text.upper", Input: protocol.TextPayload(text), CallIndex: 1,
		Attempt: attempt, AttemptLimit: 3, IdempotencyKey: "op-" + id, OutputLimit: 1 << 20, DeadlineMillis: 30_000,
	})
}

func invokeJSON(id, raw string) protocol.WorkerMessage {
	m := invoke(id, "", 1)
	m.Invoke.Input = protocol.JSONPayload(json.RawMessage(raw))
	return m
}

func cancelMsg(id string, attempt uint32) protocol.WorkerMessage {
	return protocol.CancelMessage(protocol.Cancel{RequestID: id, Tool: "text.upper", Attempt: attempt, IdempotencyKey: "op-" + id})
}

func wantResult(t *testing.T, m protocol.WorkerMessage, id string, status protocol.ResultStatus) *protocol.Result {
	t.Helper()
	if m.Kind != protocol.KindResult || m.Result.RequestID != id || m.Result.Status != status {
		t.Fatalf("want %s result for %s, got %s %+v", status, id, m.Kind, m.Result)
	}
	return m.Result
}

func wantDisposition(t *testing.T, m protocol.WorkerMessage, id string, d protocol.CancelDisposition) {
	t.Helper()
	if m.Kind != protocol.KindCancelDisposition || *m.CancelDisp != (protocol.CancelReply{RequestID: id, Attempt: 1, Disposition: d}) {
		t.Fatalf("want %s for %s, got %s %+v", d, id, m.Kind, m.CancelDisp)
	}
}

func wantChunk(t *testing.T, m protocol.WorkerMessage, id string, seq uint64, text string) {
	t.Helper()
	if m.Kind != protocol.KindChunk || *m.Chunk != (protocol.Chunk{RequestID: id, Sequence: seq, Text: text}) {
		t.Fatalf("want chunk %d %q of %s, got %s %+v", seq, text, id, m.Kind, m.Chunk)
	}
}

func TestSlowUpperStreamsEachWord(t *testing.T) {
	tl := startSlowUpper(t)
	tl.send(invoke("c1", "hello big world", 1))
	for i, w := range []string{"hello", "big", "world"} {
		wantChunk(t, tl.next(), "c1", uint64(i+1), fmt.Sprintf("word %d/3: %s", i+1, w))
	}
	r := wantResult(t, tl.next(), "c1", protocol.ResultSucceeded)
	if r.Attempt != 1 || r.Payload.Format != protocol.FormatText || r.Payload.Text != "HELLO BIG WORLD" {
		t.Fatalf("result %+v, payload %+v", r, r.Payload)
	}
	if err := tl.exit(); err != nil {
		t.Fatalf("exit: %v", err)
	}
}

func TestSlowUpperFlakyFirstAttempt(t *testing.T) {
	tl := startSlowUpper(t)
	tl.send(invoke("c1", "flaky thing", 1))
	r := wantResult(t, tl.next(), "c1", protocol.ResultRetryTransient)
	if r.Error != "flaky input fails its first attempt" || r.Payload != nil {
		t.Fatalf("result %+v", r)
	}
	tl.send(invoke("c2", "flaky thing", 2)) // the host's retry
	wantChunk(t, tl.next(), "c2", 1, "word 1/2: flaky")
	wantChunk(t, tl.next(), "c2", 2, "word 2/2: thing")
	if r := wantResult(t, tl.next(), "c2", protocol.ResultSucceeded); r.Attempt != 2 || r.Payload.Text != "FLAKY THING" {
		t.Fatalf("result %+v", r)
	}
}

func TestSlowUpperCancelMidCall(t *testing.T) {
	tl := startSlowUpper(t)
	tl.send(invoke("c1", "one two three four five six", 1))
	wantChunk(t, tl.next(), "c1", 1, "word 1/6: one")
	tl.send(cancelMsg("c1", 1))
	// The handler may stream more words before the cancel reaches it.
	m := tl.next()
	for seq := uint64(2); m.Kind == protocol.KindChunk; seq++ {
		wantChunk(t, m, "c1", seq, fmt.Sprintf("word %d/6: %s", seq, strings.Fields("one two three four five six")[seq-1]))
		m = tl.next()
	}
	wantDisposition(t, m, "c1", protocol.CancelAcknowledged)
	if err := tl.exit(); err != nil { // and no result follows
		t.Fatalf("exit: %v", err)
	}
}

func TestSlowUpperCancelAfterResult(t *testing.T) {
	tl := startSlowUpper(t)
	tl.send(invoke("c1", "x", 1))
	wantChunk(t, tl.next(), "c1", 1, "word 1/1: x")
	wantResult(t, tl.next(), "c1", protocol.ResultSucceeded)
	tl.send(cancelMsg("c1", 1))
	wantDisposition(t, tl.next(), "c1", protocol.CancelTooLate)
}

func TestSlowUpperTwoCallsAtOnce(t *testing.T) {
	tl := startSlowUpper(t)
	tl.send(invoke("c1", "a b c", 1))
	tl.send(invoke("c2", "d e f", 1))
	results := map[string]string{}
	chunks := map[string]uint64{}
	for len(results) < 2 {
		m := tl.next()
		switch m.Kind {
		case protocol.KindChunk:
			chunks[m.Chunk.RequestID]++
			if m.Chunk.Sequence != chunks[m.Chunk.RequestID] {
				t.Fatalf("chunk %+v out of order", m.Chunk)
			}
		case protocol.KindResult:
			// Run one after the other, c1 would finish before c2 began.
			if len(results) == 0 && (chunks["c1"] == 0 || chunks["c2"] == 0) {
				t.Errorf("first result after chunks %v: the calls did not overlap", chunks)
			}
			results[m.Result.RequestID] = m.Result.Payload.Text
		default:
			t.Fatalf("unexpected %s", m.Kind)
		}
	}
	if results["c1"] != "A B C" || results["c2"] != "D E F" {
		t.Fatalf("results %v", results)
	}
}

func TestSlowUpperFinishesRunningCallsAtEOF(t *testing.T) {
	tl := startSlowUpper(t)
	tl.send(invoke("c1", "a b", 1))
	_ = tl.CloseInput()
	wantChunk(t, tl.next(), "c1", 1, "word 1/2: a")
	wantChunk(t, tl.next(), "c1", 2, "word 2/2: b")
	wantResult(t, tl.next(), "c1", protocol.ResultSucceeded)
	if err := tl.exit(); err != nil {
		t.Fatalf("exit: %v", err)
	}
}

// sealAs seals msg as some frame of the session, bypassing the host's own
// sequence.
func sealAs(t *testing.T, sessionID string, key protocol.SessionKey, role protocol.SessionRole, seq uint64) []byte {
	t.Helper()
	f, err := protocol.NewSigner(key).Seal(sessionID, role, seq, invoke("c2", "x", 1))
	if err != nil {
		t.Fatal(err)
	}
	line, err := f.ToJSONLine()
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// TestFailsClosed sends one bad frame while a call runs: the tool exits
// non-zero without answering it or finishing the call. The running call is
// json_tool's "wait", which writes nothing more on its own, so anything
// after its chunk would be the tool answering.
func TestFailsClosed(t *testing.T) {
	tests := []struct {
		name       string
		bad        func(t *testing.T, tl *tool) []byte // the host has sent invoke c1 as frame 1
		wantStderr string
	}{
		{"bad tag", func(t *testing.T, tl *tool) []byte {
			line, _ := tl.Seal(invoke("c2", "x", 1))
			return breakTag(line)
		}, "bad tag"},
		{"changed message", func(t *testing.T, tl *tool) []byte {
			line, _ := tl.Seal(invoke("c2", "x", 1))
			return bytes.Replace(line, []byte(`"text":"x"`), []byte(`"text":"y"`), 1)
		}, "bad tag"},
		{"other key", func(t *testing.T, tl *tool) []byte {
			return sealAs(t, session, protocol.SessionKeyFromArray([protocol.AuthTagBytes]byte{1}), protocol.RoleHost, 2)
		}, "bad tag"},
		{"replayed sequence", func(t *testing.T, tl *tool) []byte {
			return sealAs(t, session, testKey, protocol.RoleHost, 1)
		}, "seq 1, want 2"},
		{"skipped sequence", func(t *testing.T, tl *tool) []byte {
			return sealAs(t, session, testKey, protocol.RoleHost, 3)
		}, "seq 3, want 2"},
		{"other session", func(t *testing.T, tl *tool) []byte {
			return sealAs(t, "proc-other", testKey, protocol.RoleHost, 2)
		}, "session"},
		{"reflected role", func(t *testing.T, tl *tool) []byte {
			return sealAs(t, session, testKey, protocol.RoleWorker, 2)
		}, "role"},
		{"garbage", func(t *testing.T, tl *tool) []byte { return []byte("{}\n") }, "not a frame line"},
		{"unexpected kind", func(t *testing.T, tl *tool) []byte {
			line, _ := tl.Seal(protocol.ResultMessage(protocol.Result{
				RequestID: "c1", Attempt: 1, Status: protocol.ResultFailed, Error: "x"}))
			return line
		}, "unexpected kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := startJSONTool(t)
			tl.send(invokeJSON("c1", `{"wait":true}`))
			wantChunk(t, tl.next(), "c1", 1, "waiting")
			_ = tl.SendLine(tt.bad(t, tl))
			err := tl.exit() // nothing more is written
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("exit: %v, want a non-zero status", err)
			}
			if !strings.Contains(tl.stderr.String(), tt.wantStderr) {
				t.Fatalf("stderr %q, want %q", tl.stderr.String(), tt.wantStderr)
			}
		})
	}
}

func TestSlowUpperBadTagExits(t *testing.T) {
	tl := startSlowUpper(t)
	line, _ := tl.Seal(invoke("c1", "hello", 1))
	_ = tl.SendLine(breakTag(line))
	err := tl.exit() // it never answered the invoke
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 || !strings.Contains(tl.stderr.String(), "bad tag") {
		t.Fatalf("exit: %v, stderr %q", err, tl.stderr.String())
	}
}

// breakTag changes one digit of a line's tag, keeping it lowercase hex so
// that the tag, not the line's shape, is what is wrong.
func breakTag(line []byte) []byte {
	i := bytes.LastIndex(line, []byte(`"tag":"`)) + len(`"tag":"`)
	if line[i] == '0' {
		line[i] = '1'
	} else {
		line[i] = '0'
	}
	return line
}

// jsonTool is a second tool: JSON in and out, every failure kind, no
// cancellation support.
const jsonTool = `import threading
import splash_tool

release = threading.Event()
kept = []


def handle(call):
    print("stray print for", call.request_id)  # must reach stderr, not the frames
    v = call.input
    if "n" in v:
        return {"double": 2 * v["n"], "format": call.format, "attempt": call.attempt}
    if "limit" in v:
        raise splash_tool.RateLimited(v["limit"], "slow down")
    if "fail" in v:
        raise splash_tool.Permanent(v["fail"])
    if "unknown" in v:
        raise splash_tool.Indeterminate("lost the connection mid-write")
    if "crash" in v:
        return 1 / 0
    if "oom" in v:
        raise MemoryError()
    if "none" in v:
        return None
    if "nan" in v:
        return float("nan")
    if "wait" in v:
        call.stream("waiting")
        release.wait()
        return "released"
    if "release" in v:
        release.set()
        return True
    if "keep" in v:
        kept.append(call)
        return "kept"
    if "stream_kept" in v:
        try:
            kept[0].stream("late")
        except splash_tool.StreamClosed as e:
            return "closed: " + str(e)
        return "streamed"
    return {"unknown input": v}


splash_tool.serve(handle)
`

func startJSONTool(t *testing.T) *tool {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "json_tool.py"), []byte(jsonTool), 0o644); err != nil {
		t.Fatal(err)
	}
	sdk, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	return startTool(t, dir, "json_tool.py", sdk)
}

func TestJSONToolOutcomes(t *testing.T) {
	tl := startJSONTool(t)
	tests := []struct {
		input      string
		wantStatus protocol.ResultStatus
		wantJSON   string
		wantError  string
		wantAfter  int64
	}{
		{`{"n":21}`, protocol.ResultSucceeded, `{"double":42,"format":"json","attempt":1}`, "", 0},
		{`{"none":true}`, protocol.ResultSucceeded, `null`, "", 0},
		{`{"limit":1.5}`, protocol.ResultRetryRateLimited, "", "slow down", 1500},
		{`{"limit":0.1}`, protocol.ResultRetryRateLimited, "", "slow down", 100},
		{`{"limit":0.0001}`, protocol.ResultRetryRateLimited, "", "slow down", 1},
		{`{"fail":"nope"}`, protocol.ResultFailed, "", "nope", 0},
		{`{"fail":""}`, protocol.ResultFailed, "", "failed", 0},
		{`{"unknown":1}`, protocol.ResultIndeterminate, "", "lost the connection mid-write", 0},
		{`{"crash":1}`, protocol.ResultRetryTransient, "", "ZeroDivisionError: division by zero", 0},
		{`{"oom":1}`, protocol.ResultFailed, "", "MemoryError: the tool ran out of memory", 0},
		{`{"nan":1}`, protocol.ResultFailed, "", "result is not JSON: Out of range float values are not JSON compliant", 0},
	}
	for i, tt := range tests {
		id := fmt.Sprintf("j%d", i)
		tl.send(invokeJSON(id, tt.input))
		r := wantResult(t, tl.next(), id, tt.wantStatus)
		var gotJSON string
		if r.Payload != nil {
			gotJSON = string(r.Payload.JSON)
		}
		if gotJSON != tt.wantJSON || r.Error != tt.wantError || r.RetryAfterMillis != tt.wantAfter {
			t.Errorf("%s: result %+v, payload %s", tt.input, r, gotJSON)
		}
	}
	if err := tl.exit(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if !strings.Contains(tl.stderr.String(), "stray print for j0") {
		t.Fatalf("stderr %q", tl.stderr.String())
	}
}

func TestJSONToolCancelUnsupported(t *testing.T) {
	tl := startJSONTool(t)
	tl.send(invokeJSON("w1", `{"wait":true}`))
	wantChunk(t, tl.next(), "w1", 1, "waiting")
	tl.send(cancelMsg("w1", 1))
	wantDisposition(t, tl.next(), "w1", protocol.CancelUnsupported) // at once; the call runs on
	tl.send(invokeJSON("r1", `{"release":true}`))
	got := map[string]string{}
	for len(got) < 2 { // in either order: releasing lets w1 race r1's own answer
		m := tl.next()
		if m.Kind != protocol.KindResult || m.Result.Status != protocol.ResultSucceeded {
			t.Fatalf("want a result, got %s %+v", m.Kind, m)
		}
		got[m.Result.RequestID] = string(m.Result.Payload.JSON)
	}
	if got["w1"] != `"released"` || got["r1"] != "true" {
		t.Fatalf("results %v", got)
	}
}

func TestJSONToolStreamAfterAnswer(t *testing.T) {
	tl := startJSONTool(t)
	tl.send(invokeJSON("k1", `{"keep":true}`))
	wantResult(t, tl.next(), "k1", protocol.ResultSucceeded)
	tl.send(invokeJSON("k2", `{"stream_kept":true}`))
	r := wantResult(t, tl.next(), "k2", protocol.ResultSucceeded)
	if string(r.Payload.JSON) != `"closed: request 'k1' already answered"` {
		t.Fatalf("payload %s", r.Payload.JSON)
	}
}
