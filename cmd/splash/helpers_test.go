package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

// invoke runs a command in-process with env as its whole environment and
// returns its exit status and output.
func invoke(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{stdout: &out, stderr: &errOut, lookupEnv: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}}
	code = run(context.Background(), args, a)
	return code, out.String(), errOut.String()
}

// The binary is built once per test run, for the tests that run it as an
// operator would; TestMain removes it.
var (
	binaryOnce sync.Once
	binaryDir  string
	binaryPath string
	binaryErr  error
)

func splashBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the splash binary")
	}
	binaryOnce.Do(func() {
		if binaryDir, binaryErr = os.MkdirTemp("", "splash-test-"); binaryErr != nil {
			return
		}
		binaryPath = filepath.Join(binaryDir, "splash")
		out, err := exec.Command("go", "build", "-o", binaryPath, ".").CombinedOutput()
		if err != nil {
			binaryErr = errors.New(string(out))
		}
	})
	if binaryErr != nil {
		t.Fatalf("go build: %v", binaryErr)
	}
	return binaryPath
}

func removeBinary() {
	if binaryDir != "" {
		os.RemoveAll(binaryDir)
	}
}

// syncBuffer collects a subprocess's stderr while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// proc is a splash subprocess logging JSON to stderr.
type proc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{} // closed once Wait returned; err is then set
	err    error
}

// startSplash runs the binary with args and an environment free of SPLASH_
// variables, so the machine running the tests cannot change what they see.
// The process is killed when the test ends if it still runs.
func startSplash(t *testing.T, args ...string) *proc {
	t.Helper()
	return startSplashEnv(t, nil, args...)
}

// startSplashEnv is startSplash with env (KEY=value) added to the
// process's environment.
func startSplashEnv(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(splashBinary(t), args...)
	cmd.Env = append(splashEnv(), env...)
	return startProc(t, cmd, "splash "+strings.Join(args, " "), nil)
}

// splashEnv is the test's environment without the SPLASH_, OTEL_ and
// GOMEMLIMIT variables that would change what a splash process does.
func splashEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SPLASH_") && !strings.HasPrefix(kv, "OTEL_") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			env = append(env, kv)
		}
	}
	return env
}

// startProc starts cmd, a splash process named label, and kills it when
// the test ends if it still runs. Every JSON record it wrote to stderr
// must name each attribute once; if the test failed, its stderr (through
// show, when set) is logged.
func startProc(t *testing.T, cmd *exec.Cmd, label string, show func(string) string) *proc {
	t.Helper()
	p := &proc{cmd: cmd, stderr: new(syncBuffer), done: make(chan struct{})}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start splash: %v", err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		// Every record of the host, its workers and the NATS node names
		// each attribute once.
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			if keys := repeatedKeys([]byte(line)); len(keys) > 0 {
				t.Errorf("a log record repeats %q: %s", keys, line)
			}
		}
		if t.Failed() {
			out := p.stderr.String()
			if show != nil {
				out = show(out)
			}
			t.Logf("%s stderr:\n%s", label, out)
		}
	})
	return p
}

// repeatedKeys lists the keys a JSON log record has twice at one level;
// a line that is not a JSON object has none.
func repeatedKeys(line []byte) []string {
	if !bytes.HasPrefix(line, []byte("{")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	var repeated []string
	var object func() bool
	var value func() bool
	object = func() bool {
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return false
			}
			key, _ := tok.(string)
			if seen[key] {
				repeated = append(repeated, key)
			}
			seen[key] = true
			if !value() {
				return false
			}
		}
		_, err := dec.Token() // }
		return err == nil
	}
	value = func() bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			return object()
		case json.Delim('['):
			for dec.More() {
				if !value() {
					return false
				}
			}
			_, err := dec.Token() // ]
			return err == nil
		}
		return true
	}
	value()
	return repeated
}

// client waits for dev's "dev ready" record and returns an API client of
// the API it names, holding token.
func (p *proc) client(t *testing.T, token string) *apiclient.Client {
	t.Helper()
	rec := p.waitRecord(t, "dev ready")
	c, err := apiclient.New(rec["api_url"].(string), token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitRecord waits for a JSON log record with the given message and returns
// its attributes.
func (p *proc) waitRecord(t *testing.T, msg string) map[string]any {
	t.Helper()
	var rec map[string]any
	testwait.Until(t, 0, "log record "+msg, func() bool {
		// Look at done before the log: once Wait has returned, stderr
		// is complete, so a record missing then will never come.
		exited := false
		select {
		case <-p.done:
			exited = true
		default:
		}
		sc := bufio.NewScanner(strings.NewReader(p.stderr.String()))
		for sc.Scan() {
			var r map[string]any
			if json.Unmarshal(sc.Bytes(), &r) == nil && r["msg"] == msg {
				rec = r
				return true
			}
		}
		if exited {
			t.Fatalf("splash exited (%v) without logging %q", p.err, msg)
		}
		return false
	})
	return rec
}

// stop sends SIGTERM and returns the exit error, nil for a clean exit.
func (p *proc) stop(t *testing.T) error {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(testwait.DefaultTimeout):
		t.Fatalf("splash did not exit after SIGTERM")
		return nil
	}
}
