package toolproc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// The variables every process gets; catalog env entries may not use the
// prefix.
const (
	envPrefix    = "SPLASH_TOOL_"
	envKeyFD     = "SPLASH_TOOL_KEY_FD"
	envSession   = "SPLASH_TOOL_SESSION"
	envToolName  = "SPLASH_TOOL_NAME"
	keyFD        = 3 // the first of exec.Cmd.ExtraFiles
	probeTimeout = 10 * time.Second
)

// process is a started child with its pipes.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr io.ReadCloser
}

// launch starts the tool's process for session id with key, handing the
// key over the inherited pipe. An MCP server gets no key (nil): the
// protocol has no use for one.
func (s *Supervisor) launch(id string, key *protocol.SessionKey) (*process, error) {
	env := append([]string(nil), s.cfg.Env...)
	if key != nil {
		env = append(env, envKeyFD+"="+strconv.Itoa(keyFD))
	}
	env = append(env, envSession+"="+id, envToolName+"="+s.cfg.Tool)
	var cmd *exec.Cmd
	if s.cfg.Contain != nil {
		cmd = exec.Command(s.bwrap, bwrapArgs(s.cfg, s.argv0, env)...)
		// bwrap clears and sets the sandbox's environment itself; its own
		// needs nothing.
		cmd.Env = []string{}
	} else {
		cmd = exec.Command(s.argv0, s.cfg.Command[1:]...)
		cmd.Env = env
		cmd.Dir = s.cfg.Dir
	}
	// A session of its own: no controlling terminal, and one process
	// group to signal, the tool's children included.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	keyR, keyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: key pipe: %v", ErrStartFailed, err)
	}
	defer keyR.Close()
	if key != nil {
		cmd.ExtraFiles = []*os.File{keyR}
	}
	p := &process{cmd: cmd}
	// stdout and stderr are pipes of our own rather than exec's: Wait
	// closes exec's as soon as the process exits, which could drop the
	// last frames it wrote; ours stay open until the readers reach EOF.
	outR, outW, err := os.Pipe()
	if err != nil {
		keyW.Close()
		return nil, fmt.Errorf("%w: %v", ErrStartFailed, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		keyW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("%w: %v", ErrStartFailed, err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	p.stdout, p.stderr = outR, errR
	if p.stdin, err = cmd.StdinPipe(); err == nil {
		err = cmd.Start()
	}
	outW.Close()
	errW.Close()
	if err != nil {
		keyW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("%w: %q: %v", ErrStartFailed, truncate(s.cfg.Command[0]), err)
	}
	if key == nil {
		keyW.Close()
		return p, nil
	}
	// 65 bytes fit any pipe buffer, so this never blocks on the child.
	b := key.Bytes()
	line := make([]byte, 0, 2*len(b)+1)
	line = hex.AppendEncode(line, b[:])
	line = append(line, '\n')
	_, werr := keyW.Write(line)
	clear(line)
	keyW.Close()
	if werr != nil {
		p.kill()
		return nil, fmt.Errorf("%w: handing over the key: %v", ErrStartFailed, werr)
	}
	return p, nil
}

// signal sends sig to the process's group.
func (p *process) signal(sig syscall.Signal) {
	if pid := p.cmd.Process.Pid; pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}

func (p *process) kill() {
	p.signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
	p.stdout.Close()
	p.stderr.Close()
}

// bwrapArgs builds the sandbox: read-only root, fresh /dev, /proc and
// /tmp, every namespace unshared (the network granted on request), the
// environment cleared to env, the binds, then the command. The tool dies
// with bwrap, so signalling bwrap stops it.
func bwrapArgs(cfg Config, argv0 string, env []string) []string {
	args := []string{
		"--die-with-parent", "--new-session", "--unshare-all",
	}
	if cfg.Contain.Network {
		args = append(args, "--share-net")
	}
	args = append(args, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp")
	// The private /tmp would hide a tool that lives under /tmp (a
	// checkout there, a test binary): the top directory of its working
	// directory and of its program comes back, read-only.
	for _, top := range tmpTops(cfg.Dir, argv0) {
		args = append(args, "--ro-bind", top, top)
	}
	for _, b := range cfg.Contain.ROBinds {
		args = append(args, "--ro-bind", b.Src, b.Dst)
	}
	for _, b := range cfg.Contain.RWBinds {
		args = append(args, "--bind", b.Src, b.Dst)
	}
	args = append(args, "--clearenv")
	for _, e := range env {
		name, value, _ := bytes.Cut([]byte(e), []byte("="))
		args = append(args, "--setenv", string(name), string(value))
	}
	if cfg.Dir != "" {
		args = append(args, "--chdir", cfg.Dir)
	}
	args = append(args, "--", argv0)
	return append(args, cfg.Command[1:]...)
}

// tmpTops returns, once each, the directories directly under /tmp that
// hold the given paths.
func tmpTops(paths ...string) []string {
	var tops []string
	for _, p := range paths {
		rest, ok := strings.CutPrefix(filepath.Clean(p), "/tmp/")
		if !ok || rest == "" {
			continue
		}
		top := "/tmp/" + strings.SplitN(rest, "/", 2)[0]
		if !slices.Contains(tops, top) {
			tops = append(tops, top)
		}
	}
	return tops
}

// probeBwrap checks that bwrap can build this tool's sandbox here, by
// running `true` in it, so a machine without user namespaces refuses the
// tool at start instead of at its first call.
func probeBwrap(cfg Config) (string, error) {
	path := cfg.Bwrap
	if path == "" {
		path = "bwrap"
	}
	bin, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("%w: tool %q: bwrap not found: %v", ErrContainmentUnavailable, cfg.Tool, err)
	}
	probe := cfg
	probe.Command = []string{"true"}
	probe.Dir = ""
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, bwrapArgs(probe, "true", []string{"PATH=/usr/bin:/bin"})...)
	cmd.Env = []string{}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := bytes.TrimSpace(stderr.Bytes())
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return "", fmt.Errorf("%w: tool %q: bwrap cannot start a sandbox: %v: %s", ErrContainmentUnavailable, cfg.Tool, err, msg)
	}
	return bin, nil
}

// resolveCommand finds the program the way the process will see it: a
// bare name in the worker's PATH, a relative path from Dir. The sandbox
// mounts the worker's root, so the absolute path holds there too.
func resolveCommand(cfg Config) (string, error) {
	name := cfg.Command[0]
	if !strings.Contains(name, "/") {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("%w: tool %q: %v", ErrStartFailed, cfg.Tool, err)
		}
		return p, nil
	}
	if !filepath.IsAbs(name) && cfg.Dir != "" {
		name = filepath.Join(cfg.Dir, name)
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return "", fmt.Errorf("%w: tool %q: %v", ErrStartFailed, cfg.Tool, err)
	}
	return abs, nil
}

// newSessionKey draws a process's key.
func newSessionKey() (protocol.SessionKey, error) {
	k, err := protocol.GenerateSessionKey(rand.Reader)
	if err != nil {
		return protocol.SessionKey{}, fmt.Errorf("%w: session key: %v", ErrStartFailed, err)
	}
	return k, nil
}
