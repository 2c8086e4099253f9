package toolproc_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// The test binary doubles as the Go test tool: run with testToolEnv set,
// TestMain hands over to runTestTool, which speaks the tool side of the
// protocol at the lowest level, so each kind of misbehaviour can be asked
// for by the call's input:
//
//	echo:X          answers X
//	chunks:N        streams N chunks, then answers "streamed N"
//	sleep:D         waits D; a cancel is acknowledged at once
//	finish:D        waits D; a cancel gets the result, then too_late
//	hang            never answers; a cancel is answered unsupported
//	crash           exits 3 at once
//	retry / ratelimit:MS / fail / indeterminate: the matching result
//	env             answers the sorted environment, one variable a line
//	dial:ADDR       tries a TCP connection, answers "connected" or the error
//	write:PATH      tries to create PATH, answers "written" or the error
//	bad:KIND        misbehaves: notag, wrongkey, replay, skipseq, wrongid,
//	                twice, afterack, earlytoolate, garbage, hugeline,
//	                flood, hostrole, invoke, chatter (a non-frame line
//	                holding a secret)
//	ignore          never answers, not even a cancel
//
// and the attacks of a tool on its worker (each answers what it got,
// unless it never ends):
//
//	status          uid, gid and the capability, no_new_privs and seccomp
//	                lines of /proc/self/status
//	remount         tries to remount / read-write
//	read:PATH       tries to read PATH, answers "read N bytes" or the error
//	ptrace          tries to trace its parent
//	forkbomb        starts processes until refused, and keeps trying
//	alloc:MB        allocates and touches MB MiB, 16 MiB at a time
//	filltmp         writes /tmp full, then waits
//	spin            burns CPU forever
//	bigfile:MB      writes a file of MB MiB in /tmp
const testToolEnv = "TOOLPROC_TEST_TOOL"

type testTool struct {
	wmu  sync.Mutex
	auth *protocol.SessionAuthenticator
	out  *bufio.Writer
	key  protocol.SessionKey

	mu     sync.Mutex
	active map[string]chan struct{} // request id -> closed on cancel
}

func runTestTool() int {
	if os.Getenv(testToolEnv) == "exit-at-start" {
		return 4
	}
	fd, _ := strconv.Atoi(os.Getenv("SPLASH_TOOL_KEY_FD"))
	kf := os.NewFile(uintptr(fd), "key")
	raw, err := io.ReadAll(kf)
	kf.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "no key:", err)
		return 2
	}
	key, err := protocol.ParseSessionKey(strings.TrimSpace(string(raw)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad key:", err)
		return 2
	}
	session := os.Getenv("SPLASH_TOOL_SESSION")
	wa, _ := protocol.NewSessionAuthenticator(session, key, protocol.RoleWorker)
	ra, _ := protocol.NewSessionAuthenticator(session, key, protocol.RoleWorker)
	t := &testTool{auth: wa, out: bufio.NewWriter(os.Stdout), key: key, active: map[string]chan struct{}{}}
	fmt.Fprintln(os.Stderr, "test tool up")
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 2<<20)
	var wg sync.WaitGroup
	for sc.Scan() {
		f, err := protocol.ParseJSONLine(sc.Bytes())
		if err != nil {
			fmt.Fprintln(os.Stderr, "bad line:", err)
			return 2
		}
		msg, err := ra.Open(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bad frame:", err)
			return 2
		}
		switch msg.Kind {
		case protocol.KindInvoke:
			inv := *msg.Invoke
			cancel := make(chan struct{})
			t.mu.Lock()
			t.active[inv.RequestID] = cancel
			t.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				t.run(inv, cancel)
			}()
		case protocol.KindCancel:
			t.mu.Lock()
			ch, ok := t.active[msg.Cancel.RequestID]
			if ok {
				delete(t.active, msg.Cancel.RequestID)
			}
			t.mu.Unlock()
			if !ok {
				t.send(protocol.CancelReplyMessage(protocol.CancelReply{RequestID: msg.Cancel.RequestID, Attempt: msg.Cancel.Attempt, Disposition: protocol.CancelTooLate}))
				continue
			}
			close(ch)
		}
	}
	wg.Wait()
	return 0
}

func (t *testTool) send(m protocol.WorkerMessage) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	f, err := t.auth.Seal(m)
	if err != nil {
		panic(err)
	}
	line, _ := f.ToJSONLine()
	t.out.Write(line)
	t.out.Flush()
}

// raw writes bytes as they are.
func (t *testTool) raw(b []byte) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.out.Write(b)
	t.out.Flush()
}

func (t *testTool) finish(inv protocol.Invoke) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.active[inv.RequestID]
	delete(t.active, inv.RequestID)
	return ok
}

func (t *testTool) result(inv protocol.Invoke, status protocol.ResultStatus, text, errText string, after int64) {
	r := protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt, Status: status, Error: errText, RetryAfterMillis: after}
	if status == protocol.ResultSucceeded {
		p := protocol.TextPayload(text)
		r.Payload = &p
	}
	t.send(protocol.ResultMessage(r))
}

func (t *testTool) ok(inv protocol.Invoke, text string) {
	t.result(inv, protocol.ResultSucceeded, text, "", 0)
}

func (t *testTool) disposition(inv protocol.Invoke, d protocol.CancelDisposition) {
	t.send(protocol.CancelReplyMessage(protocol.CancelReply{RequestID: inv.RequestID, Attempt: inv.Attempt, Disposition: d}))
}

func (t *testTool) run(inv protocol.Invoke, cancel chan struct{}) {
	verb, arg, _ := strings.Cut(inv.Input.Text, ":")
	switch verb {
	case "echo":
		t.finish(inv)
		t.ok(inv, arg)
	case "chunks":
		n, _ := strconv.Atoi(arg)
		for i := 1; i <= n; i++ {
			t.send(protocol.ChunkMessage(protocol.Chunk{RequestID: inv.RequestID, Sequence: uint64(i), Text: "chunk " + strconv.Itoa(i)}))
		}
		t.finish(inv)
		t.ok(inv, "streamed "+arg)
	case "sleep":
		d, _ := time.ParseDuration(arg)
		select {
		case <-time.After(d):
			if t.finish(inv) {
				t.ok(inv, "slept")
			}
		case <-cancel:
			t.disposition(inv, protocol.CancelAcknowledged)
		}
	case "finish":
		d, _ := time.ParseDuration(arg)
		select {
		case <-time.After(d):
			t.finish(inv)
			t.ok(inv, "finished")
		case <-cancel:
			t.ok(inv, "finished anyway")
			t.disposition(inv, protocol.CancelTooLate)
		}
	case "hang":
		<-cancel
		t.disposition(inv, protocol.CancelUnsupported)
		select {}
	case "crash":
		os.Exit(3)
	case "retry":
		t.finish(inv)
		t.result(inv, protocol.ResultRetryTransient, "", "try again", 0)
	case "ratelimit":
		ms, _ := strconv.ParseInt(arg, 10, 64)
		t.finish(inv)
		t.result(inv, protocol.ResultRetryRateLimited, "", "slow down", ms)
	case "fail":
		t.finish(inv)
		t.result(inv, protocol.ResultFailed, "", "no such thing", 0)
	case "indeterminate":
		t.finish(inv)
		t.result(inv, protocol.ResultIndeterminate, "", "downstream timed out", 0)
	case "env":
		env := os.Environ()
		sort.Strings(env)
		t.finish(inv)
		t.ok(inv, strings.Join(env, "\n"))
	case "dial":
		c, err := net.DialTimeout("tcp", arg, 2*time.Second)
		t.finish(inv)
		if err != nil {
			t.ok(inv, "refused: "+err.Error())
			return
		}
		c.Close()
		t.ok(inv, "connected")
	case "write":
		err := os.WriteFile(arg, []byte("x"), 0o600)
		t.finish(inv)
		if err != nil {
			t.ok(inv, "refused: "+err.Error())
			return
		}
		t.ok(inv, "written")
	case "bad":
		t.misbehave(inv, arg, cancel)
	case "ignore":
		select {}
	default:
		t.attack(inv, verb, arg)
	}
}

// attack runs one of the attacks of a tool on its worker (see the list
// above) and answers what came of it.
func (t *testTool) attack(inv protocol.Invoke, verb, arg string) {
	answer := func(text string) {
		t.finish(inv)
		t.ok(inv, text)
	}
	refusedOr := func(err error, ok string) {
		if err != nil {
			answer("refused: " + err.Error())
			return
		}
		answer(ok)
	}
	switch verb {
	case "status":
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			answer("refused: " + err.Error())
			return
		}
		var keep []string
		for _, line := range strings.Split(string(b), "\n") {
			for _, p := range []string{"Uid:", "Gid:", "CapEff:", "CapPrm:", "CapBnd:", "NoNewPrivs:", "Seccomp:"} {
				if strings.HasPrefix(line, p) {
					keep = append(keep, strings.Join(strings.Fields(line), " "))
				}
			}
		}
		answer(fmt.Sprintf("uid %d\n%s", os.Getuid(), strings.Join(keep, "\n")))
	case "remount":
		refusedOr(syscall.Mount("none", "/", "", syscall.MS_REMOUNT|syscall.MS_BIND, ""), "remounted")
	case "read":
		b, err := os.ReadFile(arg)
		refusedOr(err, fmt.Sprintf("read %d bytes", len(b)))
	case "ptrace":
		refusedOr(syscall.PtraceAttach(os.Getppid()), "attached")
	case "forkbomb":
		for {
			c := exec.Command("/bin/sleep", "600")
			if c.Start() != nil {
				time.Sleep(time.Millisecond)
			}
		}
	case "alloc":
		mb, _ := strconv.Atoi(arg)
		var hold [][]byte
		for got := 0; got < mb; got += 16 {
			b := make([]byte, 16<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			hold = append(hold, b)
		}
		answer(fmt.Sprintf("allocated %d MiB", 16*len(hold)))
	case "filltmp":
		// Files of 1 MiB each, under any file size limit.
		chunk := make([]byte, 1<<20)
		for i := 0; ; i++ {
			if os.WriteFile(fmt.Sprintf("/tmp/fill%d", i), chunk, 0o600) != nil {
				break
			}
		}
		select {}
	case "spin":
		for {
		}
	case "bigfile":
		mb, _ := strconv.Atoi(arg)
		f, err := os.Create("/tmp/big")
		if err == nil {
			chunk := make([]byte, 1<<20)
			for i := 0; i < mb && err == nil; i++ {
				_, err = f.Write(chunk)
			}
		}
		refusedOr(err, "written")
	default:
		answer("unknown verb")
	}
}

func (t *testTool) misbehave(inv protocol.Invoke, kind string, cancel chan struct{}) {
	p := protocol.TextPayload("x")
	res := protocol.ResultMessage(protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultSucceeded, Payload: &p})
	body, _ := json.Marshal(res)
	switch kind {
	case "notag":
		// A frame with every field but the tag.
		t.raw([]byte(`{"session_id":"` + t.auth.SessionID() + `","role":"worker","seq":1,"msg":` + string(body) + "}\n"))
	case "wrongkey":
		other, _ := protocol.NewSessionKey([]byte(strings.Repeat("k", protocol.AuthTagBytes)))
		a, _ := protocol.NewSessionAuthenticator(t.auth.SessionID(), other, protocol.RoleWorker)
		f, _ := a.Seal(res)
		line, _ := f.ToJSONLine()
		t.raw(line)
	case "replay":
		t.send(protocol.ChunkMessage(protocol.Chunk{RequestID: inv.RequestID, Sequence: 1, Text: "once"}))
		t.wmu.Lock()
		sent, _ := t.auth.Sequences()
		s := protocol.NewSigner(t.key)
		f, _ := s.Seal(t.auth.SessionID(), protocol.RoleWorker, sent, protocol.ChunkMessage(protocol.Chunk{RequestID: inv.RequestID, Sequence: 2, Text: "again"}))
		t.wmu.Unlock()
		line, _ := f.ToJSONLine()
		t.raw(line)
	case "skipseq":
		sent, _ := t.auth.Sequences()
		s := protocol.NewSigner(t.key)
		f, _ := s.Seal(t.auth.SessionID(), protocol.RoleWorker, sent+2, res)
		line, _ := f.ToJSONLine()
		t.raw(line)
	case "wrongid":
		p := protocol.TextPayload("x")
		t.send(protocol.ResultMessage(protocol.Result{RequestID: "c999", Attempt: inv.Attempt, Status: protocol.ResultSucceeded, Payload: &p}))
	case "twice":
		t.send(res)
		t.send(res)
	case "afterack":
		<-cancel
		t.disposition(inv, protocol.CancelAcknowledged)
		t.send(res)
	case "earlytoolate":
		<-cancel
		t.disposition(inv, protocol.CancelTooLate)
		t.send(res)
	case "garbage":
		t.raw([]byte("this is not a frame\n"))
	case "hugeline":
		// A gigabyte without a newline: the worker must refuse it long
		// before it arrives, and this process is stopped mid-write.
		chunk := []byte(strings.Repeat("x", 1<<20))
		t.wmu.Lock()
		for range 1 << 10 {
			if _, err := t.out.Write(chunk); err != nil {
				break
			}
		}
		t.wmu.Unlock()
	case "flood":
		for i := 1; i <= 10000; i++ {
			t.send(protocol.ChunkMessage(protocol.Chunk{RequestID: inv.RequestID, Sequence: uint64(i), Text: "flood"}))
		}
		t.send(res)
	case "hostrole":
		a, _ := protocol.NewSessionAuthenticator(t.auth.SessionID(), t.key, protocol.RoleHost)
		f, _ := a.Seal(res)
		line, _ := f.ToJSONLine()
		t.raw(line)
	case "invoke":
		t.send(protocol.InvokeMessage(inv))
	case "chatter":
		t.raw([]byte("api-token=" + os.Getenv("CHATTER_SECRET") + "\n"))
	}
}
