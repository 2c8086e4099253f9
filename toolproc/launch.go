package toolproc

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// The variables every process gets; catalog env entries may not use the
// prefix.
const (
	envPrefix   = "SPLASH_TOOL_"
	envKeyFD    = "SPLASH_TOOL_KEY_FD"
	envSession  = "SPLASH_TOOL_SESSION"
	envToolName = "SPLASH_TOOL_NAME"
	keyFD       = 3 // the first of exec.Cmd.ExtraFiles
)

// sandboxPath is where a contained tool's bare command is looked up: the
// system's directories, which every sandbox holds.
const sandboxPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

// process is a started child with its pipes.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr io.ReadCloser
	// sandbox is the running sandbox of a contained tool; nil otherwise.
	sandbox *sandboxRun
}

// launch starts the tool's process for session id with key, handing the
// key over the inherited pipe. An MCP server gets no key (nil): the
// protocol has no use for one. A contained tool starts in its sandbox,
// in a cgroup of its own where the worker has one to give.
func (s *Supervisor) launch(id string, key *protocol.SessionKey) (*process, error) {
	env := append([]string(nil), s.cfg.Env...)
	if key != nil {
		env = append(env, envKeyFD+"="+strconv.Itoa(keyFD))
	}
	env = append(env, envSession+"="+id, envToolName+"="+s.cfg.Tool)
	keyR, keyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: key pipe: %v", ErrStartFailed, err)
	}
	defer keyR.Close()
	var keyFile *os.File
	if key != nil {
		keyFile = keyR
	}
	var (
		cmd  *exec.Cmd
		plan *sandboxPlan
		run  *sandboxRun
	)
	if s.cfg.Contain != nil {
		lim := s.cfg.Contain.Limits
		run = &sandboxRun{lim: lim}
		if s.cgroupParent != "" {
			if run.cg, err = newCgroup(s.cgroupParent, cgroupName(id), lim); err != nil {
				keyW.Close()
				return nil, err
			}
		}
		cmd, plan, err = s.sandbox.sandboxCmd(s.argv0, env, keyFile, lim, run.cg)
		if err != nil {
			keyW.Close()
			if run.cg != nil {
				run.cg.remove()
			}
			return nil, err
		}
		defer plan.close()
	} else {
		cmd = exec.Command(s.argv0, s.cfg.Command[1:]...)
		cmd.Env = env
		cmd.Dir = s.cfg.Dir
		// A session of its own: no controlling terminal, and one process
		// group to signal, the tool's children included. It dies with
		// the worker (a sandbox's bwrap sees to that itself), so a
		// crashed worker leaves no call running that another worker may
		// be handed.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
		if keyFile != nil {
			cmd.ExtraFiles = []*os.File{keyFile}
		}
	}
	p := &process{cmd: cmd, sandbox: run}
	fail := func(err error) (*process, error) {
		keyW.Close()
		if run != nil && run.cg != nil {
			run.cg.remove()
		}
		return nil, err
	}
	// stdout and stderr are pipes of our own rather than exec's: Wait
	// closes exec's as soon as the process exits, which could drop the
	// last frames it wrote; ours stay open until the readers reach EOF.
	outR, outW, err := os.Pipe()
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrStartFailed, err))
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return fail(fmt.Errorf("%w: %v", ErrStartFailed, err))
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	p.stdout, p.stderr = outR, errR
	if p.stdin, err = cmd.StdinPipe(); err == nil {
		err = cmd.Start()
	}
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return fail(fmt.Errorf("%w: %q: %v", ErrStartFailed, clip.String(s.cfg.Command[0], clip.Echo), err))
	}
	if run != nil {
		run.pid = cmd.Process.Pid
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

// cgroupName is a sandbox's cgroup under the worker's: the session id,
// which is unique across the worker's tools, starts and restarts, with
// the characters a path may not hold replaced.
func cgroupName(id string) string {
	return "splash-" + strings.Map(func(r rune) rune {
		if r == '/' || r == 0 {
			return '_'
		}
		return r
	}, id)
}

// signal sends sig to the process's group. In a sandbox, whose processes
// are in a session of their own, TERM goes to the tool itself (the
// children of the sandbox's pid 1), so it may stop cleanly; bwrap would
// only die of it and take the sandbox down at once, which is KILL's job.
func (p *process) signal(sig syscall.Signal) {
	pid := p.cmd.Process.Pid
	if pid <= 0 {
		return
	}
	if sig == syscall.SIGTERM && p.sandbox != nil {
		if init := firstChild(pid); init != 0 {
			for _, c := range children(init) {
				_ = syscall.Kill(c, sig)
			}
			return
		}
	}
	_ = syscall.Kill(-pid, sig)
}

func (p *process) kill() {
	p.signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
	p.stdout.Close()
	p.stderr.Close()
}

// resolveCommand finds the program the way the process will see it: a
// relative path from Dir; a bare name in the worker's PATH, or, for a
// contained tool, in the sandbox's (sandboxPath): a program the worker
// finds in its home or under a version manager's shims is not in the
// sandbox, and one in the system's directories is.
func resolveCommand(cfg Config) (string, error) {
	name := cfg.Command[0]
	if !strings.Contains(name, "/") {
		if cfg.Contain != nil {
			for _, dir := range filepath.SplitList(sandboxPath) {
				p := filepath.Join(dir, name)
				if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
					return p, nil
				}
			}
			return "", fmt.Errorf("%w: tool %q: %q is not in the sandbox's PATH %s", ErrStartFailed, cfg.Tool, clip.String(name, clip.Echo), sandboxPath)
		}
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
