package splashtooltest

import (
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"

	"github.com/splashfabric/splashfabric/protocol"
)

// Process is a tool process started as the worker starts one, with a Host
// connected to its standard input and output.
type Process struct {
	*Host
	cmd    *exec.Cmd
	stdout *os.File      // the parent's read end, closed by Stop
	exited chan struct{} // closed when cmd.Wait has returned
	err    error         // cmd.Wait's answer, set before exited is closed
	stop   sync.Once
}

// StartProcess starts cmd with the session key on a pipe at the next free
// descriptor (3 unless cmd.ExtraFiles has entries) and SPLASH_TOOL_KEY_FD,
// SPLASH_TOOL_SESSION and SPLASH_TOOL_NAME added to cmd.Env (or to the
// current environment when cmd.Env is nil). cmd.Stdin and cmd.Stdout must be
// unset; cmd.Stderr is the caller's. Call Stop when done, even after Wait.
func StartProcess(cmd *exec.Cmd, sessionID, toolName string, key protocol.SessionKey) (*Process, error) {
	if cmd.Stdin != nil || cmd.Stdout != nil {
		return nil, fmt.Errorf("splashtooltest: cmd.Stdin and cmd.Stdout must be unset")
	}
	// Plain pipes rather than cmd.StdinPipe and StdoutPipe: Wait closes
	// those, which would race the read goroutine.
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	keyR, keyW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	// 65 bytes fit in any pipe buffer, so the key is written before the
	// child exists and the write end closed: the child reads it to EOF.
	b := key.Bytes()
	if _, err := keyW.Write([]byte(hex.EncodeToString(b[:]) + "\n")); err != nil {
		closeAll()
		return nil, err
	}
	keyW.Close()

	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env,
		"SPLASH_TOOL_KEY_FD="+strconv.Itoa(3+len(cmd.ExtraFiles)),
		"SPLASH_TOOL_SESSION="+sessionID,
		"SPLASH_TOOL_NAME="+toolName)
	cmd.ExtraFiles = append(cmd.ExtraFiles, keyR)
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	// The child holds its own copies; closing ours lets outR see EOF when
	// the child exits.
	inR.Close()
	outW.Close()
	keyR.Close()

	host, err := NewHost(sessionID, key, inW, outR)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		inW.Close()
		outR.Close()
		return nil, err
	}
	p := &Process{Host: host, cmd: cmd, stdout: outR, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Wait waits for the process to exit and returns what exec.Cmd.Wait did:
// nil for status 0, an *exec.ExitError otherwise.
func (p *Process) Wait() error {
	<-p.exited
	return p.err
}

// Stop kills the process if it is still running, waits for it and for the
// Host's read goroutine, and closes the pipes. It is safe to call more than
// once.
func (p *Process) Stop() {
	p.stop.Do(func() {
		_ = p.CloseInput()
		_ = p.cmd.Process.Kill() // harmless when the process has exited
		<-p.exited
		// A grandchild may still hold stdout open; closing our end ends
		// the read goroutine regardless.
		p.stdout.Close()
		<-p.Done()
	})
}
