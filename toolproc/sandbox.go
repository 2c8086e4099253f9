package toolproc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// SandboxUID and SandboxGID are the user and group a contained tool runs
// as inside its sandbox: nobody and nogroup. When the worker runs as root
// they are the tool's ids on the host too (see docs/process-tools.md).
const (
	SandboxUID = 65534
	SandboxGID = 65534
)

// shimPath is where the worker's own executable is bound in a sandbox. It
// runs first, as the sandbox's command, to set the tool's rlimits (and,
// under a root worker, to leave root for SandboxUID), then executes the
// tool in its place; see sandboxinit.go.
const shimPath = "/.splash/init"

// InstallHint is what a worker tells its operator when Bubblewrap is
// missing.
const InstallHint = "install Bubblewrap (Debian, Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"

// systemDirs are the host's runtime directories every sandbox sees
// read-only. One that is a symbolic link (a merged /usr) is recreated as
// the same link; one that does not exist is left out.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcEntries is the curated /etc: what name resolution, TLS, time zones,
// the dynamic linker and Debian's alternatives need, nothing that names
// the host's users or holds a secret. /etc/passwd and /etc/group are
// written for the sandbox (etcPasswd, etcGroup).
var etcEntries = []string{
	"/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
	"/etc/services", "/etc/protocols", "/etc/networks",
	"/etc/localtime", "/etc/timezone",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/ssl/certs", "/etc/ca-certificates", "/etc/pki/tls/certs", "/etc/pki/ca-trust",
	"/etc/alternatives", "/etc/mime.types", "/etc/os-release", "/etc/locale.alias",
}

const (
	etcPasswd = "root:x:0:0:root:/:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	etcGroup  = "root:x:0:\nnogroup:x:65534:\n"
)

// sandboxer builds the sandboxes of one tool.
type sandboxer struct {
	cfg   Config
	bwrap string // the bwrap binary
	shim  string // the worker's own executable
}

// sandboxPlan is one start's sandbox: bwrap's arguments and the files it
// inherits, numbered from fd 3 in order.
type sandboxPlan struct {
	args  []string
	files []*os.File
	// keep are the parent's ends, closed once bwrap has started.
	keep []*os.File
}

// addFile hands f to bwrap and returns its fd number there.
func (p *sandboxPlan) addFile(f *os.File) string {
	p.files = append(p.files, f)
	return strconv.Itoa(2 + len(p.files))
}

// addData hands bwrap a pipe holding data and returns its fd number. The
// data fits a pipe's buffer, so the write never waits for bwrap.
func (p *sandboxPlan) addData(data []byte) (string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return "", err
	}
	_, err = w.Write(data)
	w.Close()
	if err != nil {
		r.Close()
		return "", err
	}
	p.keep = append(p.keep, r)
	return p.addFile(r), nil
}

// close closes the parent's copies of the files bwrap inherited.
func (p *sandboxPlan) close() {
	for _, f := range p.keep {
		f.Close()
	}
}

// asRoot reports whether the worker runs as root, so that a sandbox is
// built in a user namespace of its own and left by the shim for
// SandboxUID (see sandboxCmd).
func asRoot() bool { return os.Geteuid() == 0 }

// sandboxCmd builds the command that runs the tool (argv0 and the
// configured arguments) in its sandbox: bwrap with the plan's arguments,
// then the shim with the limits, then the tool. key, when not nil, is
// the tool's key pipe and becomes fd 3. An empty argv0 builds the probe:
// the same sandbox, whose shim exits once it would run the tool.
//
// The sandbox sees the system's runtime directories, a curated /etc, the
// tool's own directory and program read-only, its declared binds, a
// private /tmp and /dev/shm of Limits.TmpSize each, fresh /dev and /proc;
// / and /dev are read-only. Every namespace is its own (the network
// unless granted). The tool runs as SandboxUID with no capability, with
// no_new_privs and the seccomp filter, whether the worker runs as root or
// not:
//
//   - as an ordinary user, bwrap makes the user namespace and maps
//     SandboxUID to the worker's user;
//   - as root, the worker starts bwrap in a user namespace of its own that
//     maps root to root and SandboxUID to itself, so bwrap can bind what
//     root may read, and the shim leaves root for SandboxUID (and drops
//     every capability) before the tool runs. The tool's files are then
//     those of uid 65534 on the host, and the kernel's pids limit holds
//     (it never does for uid 0).
func (s sandboxer) sandboxCmd(argv0 string, env []string, key *os.File, lim Limits, cg *cgroup) (*exec.Cmd, *sandboxPlan, error) {
	c := s.cfg.Contain
	p := &sandboxPlan{}
	if key != nil {
		p.addFile(key)
	}
	root := asRoot()
	p.args = []string{"--die-with-parent", "--new-session",
		"--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"}
	if !c.Network {
		p.args = append(p.args, "--unshare-net")
	}
	if root {
		// bwrap is root in the namespace sandboxCmd's caller made; the
		// shim needs these three to leave root, and nothing else.
		p.args = append(p.args, "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP")
	} else {
		p.args = append(p.args, "--unshare-user", "--disable-userns", "--uid", strconv.Itoa(SandboxUID), "--gid", strconv.Itoa(SandboxGID), "--cap-drop", "ALL")
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				p.args = append(p.args, "--symlink", target, d)
			}
		case fi.IsDir():
			p.args = append(p.args, "--ro-bind", d, d)
		}
	}
	for _, e := range etcEntries {
		p.args = append(p.args, "--ro-bind-try", e, e)
	}
	for _, f := range []struct{ path, data string }{{"/etc/passwd", etcPasswd}, {"/etc/group", etcGroup}} {
		fd, err := p.addData([]byte(f.data))
		if err != nil {
			p.close()
			return nil, nil, fmt.Errorf("%w: %v", ErrStartFailed, err)
		}
		p.args = append(p.args, "--perms", "0444", "--ro-bind-data", fd, f.path)
	}
	tmp := strconv.FormatInt(lim.TmpSize, 10)
	p.args = append(p.args, "--proc", "/proc", "--dev", "/dev",
		"--perms", "1777", "--size", tmp, "--tmpfs", "/tmp",
		"--perms", "1777", "--size", tmp, "--tmpfs", "/dev/shm")
	// After the tmpfs mounts, so a tool, a program or a bind that lives
	// under /tmp is not hidden by the private one.
	made := map[string]bool{}
	bind := func(op, src, dst string) {
		p.args = append(p.args, parentDirs(dst, made)...)
		p.args = append(p.args, op, src, dst)
	}
	if s.cfg.Dir != "" {
		bind("--ro-bind", s.cfg.Dir, s.cfg.Dir)
	}
	if argv0 != "" && !underAny(argv0, systemDirs) && (s.cfg.Dir == "" || !under(argv0, s.cfg.Dir)) {
		bind("--ro-bind", argv0, argv0)
	}
	for _, b := range c.ROBinds {
		bind("--ro-bind", b.Src, b.Dst)
	}
	for _, b := range c.RWBinds {
		bind("--bind", b.Src, b.Dst)
	}
	p.args = append(p.args, "--ro-bind", s.shim, shimPath,
		"--remount-ro", "/dev", "--remount-ro", "/")
	filter, err := seccompProgram()
	if err != nil {
		p.close()
		return nil, nil, fmt.Errorf("%w: seccomp: %v", ErrStartFailed, err)
	}
	fd, err := p.addData(filter)
	if err != nil {
		p.close()
		return nil, nil, fmt.Errorf("%w: %v", ErrStartFailed, err)
	}
	p.args = append(p.args, "--seccomp", fd, "--clearenv")
	for _, e := range env {
		name, value, _ := strings.Cut(e, "=")
		p.args = append(p.args, "--setenv", name, value)
	}
	dir := s.cfg.Dir
	if dir == "" {
		dir = "/"
	}
	p.args = append(p.args, "--chdir", dir, "--", shimPath)
	if argv0 == "" {
		p.args = append(p.args, "probe")
	}
	p.args = append(p.args, shimArgs(lim, cg != nil, root)...)
	p.args = append(p.args, "--")
	if argv0 != "" {
		p.args = append(p.args, argv0)
		p.args = append(p.args, s.cfg.Command[1:]...)
	}

	cmd := exec.Command(s.bwrap, p.args...)
	// bwrap clears and sets the sandbox's environment itself; its own
	// needs nothing.
	cmd.Env = []string{}
	cmd.ExtraFiles = p.files
	// A session of its own: no controlling terminal, and one process
	// group to signal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if root {
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: SandboxUID, HostID: SandboxUID, Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: SandboxGID, HostID: SandboxGID, Size: 1}}
		cmd.SysProcAttr.GidMappingsEnableSetgroups = true
	}
	if cg != nil {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = cg.fd()
	}
	return cmd, p, nil
}

// parentDirs makes the directories above dst that the sandbox lacks,
// each mode 0755. bwrap would make them too, but with the mode of the
// host's directory of the same name, and a private build directory
// (0700, root's) would then hide the program from the tool's user.
// Directories under the system's, which the sandbox has, are left alone.
func parentDirs(dst string, made map[string]bool) []string {
	var args []string
	var chain []string
	for d := filepath.Dir(filepath.Clean(dst)); d != "/" && d != "."; d = filepath.Dir(d) {
		chain = append(chain, d)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		d := chain[i]
		if made[d] || underAny(d, systemDirs) || under(d, "/proc") || under(d, "/dev") || d == "/tmp" || d == "/etc" {
			continue
		}
		made[d] = true
		args = append(args, "--perms", "0755", "--dir", d)
	}
	return args
}

// under reports whether path is dir or lies inside it.
func under(path, dir string) bool {
	path, dir = filepath.Clean(path), filepath.Clean(dir)
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

func underAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if under(path, d) {
			return true
		}
	}
	return false
}

// newSandboxer finds bwrap and the worker's executable, the shim of every
// sandbox.
func newSandboxer(cfg Config) (sandboxer, error) {
	path := cfg.Bwrap
	if path == "" {
		path = "bwrap"
	}
	bin, err := exec.LookPath(path)
	if err != nil {
		return sandboxer{}, fmt.Errorf("%w: tool %q: bwrap not found (%v): %s", ErrContainmentUnavailable, cfg.Tool, err, InstallHint)
	}
	shim, err := os.Executable()
	if err != nil {
		return sandboxer{}, fmt.Errorf("%w: tool %q: the worker's own executable, which starts every sandbox: %v", ErrContainmentUnavailable, cfg.Tool, err)
	}
	return sandboxer{cfg: cfg, bwrap: bin, shim: shim}, nil
}

// probe checks that bwrap can build s's sandbox here, up to the shim's
// last step before the tool (limits set, root left), so a machine that
// cannot (no user namespaces, a bind that does not exist) refuses the tool
// when it is registered instead of at its first call.
func (s sandboxer) probe() error {
	cmd, plan, err := s.sandboxCmd("", nil, nil, s.cfg.Contain.Limits, nil)
	if err != nil {
		return err
	}
	defer plan.close()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: tool %q: bwrap cannot start: %v", ErrContainmentUnavailable, s.cfg.Tool, err)
	}
	plan.close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
	}
	if err != nil {
		msg := bytes.TrimSpace(stderr.Bytes())
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return fmt.Errorf("%w: tool %q: bwrap cannot build the sandbox: %v: %s", ErrContainmentUnavailable, s.cfg.Tool, err, msg)
	}
	return nil
}

// probeTimeout bounds the probe's sandbox.
const probeTimeout = 10 * time.Second
