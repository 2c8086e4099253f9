package toolproc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The shim is the worker's own executable run as a sandbox's command
// (bound at shimPath). Every program that links this package answers to
// that name before anything else of it runs, the way moby's reexec
// package turns a daemon into its own helper:
//
//	/.splash/init [probe] [drop] [rlimit=soft:hard ...] -- tool argv...
//
// It sets the tool's rlimits from inside the sandbox, so that the kernel
// counts the pids limit in the sandbox's own user namespace (set before
// bwrap made it, it would count every process of the worker's user);
// under a root worker ("drop") it then leaves root for SandboxUID and
// drops every capability; then it executes the tool in its place. A
// failure is reported on stderr (the worker's log) and exits 127, before
// the tool ever runs.
func init() {
	if len(os.Args) < 2 || os.Args[0] != shimPath {
		return
	}
	err := runShim(os.Args[1:])
	if err == errProbed {
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "splash sandbox: %v\n", err)
	os.Exit(127)
}

// errProbed ends a probe's shim where it would run the tool.
var errProbed = errors.New("probed")

// rlimitNames are the resources the shim sets, by the name shimArgs
// writes.
var rlimitNames = map[string]int{
	"nproc":  unix.RLIMIT_NPROC,
	"data":   unix.RLIMIT_DATA,
	"nofile": unix.RLIMIT_NOFILE,
	"fsize":  unix.RLIMIT_FSIZE,
	"cpu":    unix.RLIMIT_CPU,
	"core":   unix.RLIMIT_CORE,
}

// shimArgs are the shim's arguments for lim: the kernel's per-process
// limits always; the pids and memory backstops only where no cgroup
// holds them; "drop" under a root worker.
func shimArgs(lim Limits, cgroup, root bool) []string {
	var args []string
	if root {
		args = append(args, "drop")
	}
	rl := func(name string, soft, hard uint64) {
		args = append(args, name+"="+strconv.FormatUint(soft, 10)+":"+strconv.FormatUint(hard, 10))
	}
	rl("nofile", uint64(lim.OpenFiles), uint64(lim.OpenFiles))
	rl("fsize", uint64(lim.FileSize), uint64(lim.FileSize))
	rl("core", 0, 0)
	if lim.CPUSeconds > 0 {
		// SIGXCPU at the soft limit, SIGKILL a little later for a tool
		// that ignores it.
		rl("cpu", uint64(lim.CPUSeconds), uint64(lim.CPUSeconds)+cpuKillAfter)
	}
	if !cgroup {
		rl("nproc", uint64(lim.Pids), uint64(lim.Pids))
		d := dataBackstop(lim.Memory)
		rl("data", d, d)
	}
	return args
}

// cpuKillAfter is how many CPU seconds past its limit a process that
// ignores SIGXCPU gets before SIGKILL.
const cpuKillAfter = 5

// dataBackstop caps each process's writable memory where no cgroup
// counts it: the worker stops a sandbox whose resident memory passes
// Limits.Memory (see watch.go), and this is the hard stop between two of
// its looks, loose enough that a runtime reserving a little more than it
// touches (Go's race detector, V8) still starts.
func dataBackstop(memory int64) uint64 {
	return uint64(max(2*memory, memory+1<<30))
}

// runShim applies args and executes the tool; it returns only on failure.
func runShim(args []string) error {
	drop, probe := false, false
	for len(args) > 0 && args[0] != "--" {
		a := args[0]
		args = args[1:]
		switch a {
		case "drop":
			drop = true
			continue
		case "probe":
			probe = true
			continue
		}
		name, value, _ := strings.Cut(a, "=")
		res, ok := rlimitNames[name]
		soft, hard, ok2 := strings.Cut(value, ":")
		if !ok || !ok2 {
			return fmt.Errorf("bad argument %q", a)
		}
		var lim unix.Rlimit
		var err error
		if lim.Cur, err = strconv.ParseUint(soft, 10, 64); err == nil {
			lim.Max, err = strconv.ParseUint(hard, 10, 64)
		}
		if err != nil {
			return fmt.Errorf("bad argument %q", a)
		}
		if err := unix.Setrlimit(res, &lim); err != nil {
			return fmt.Errorf("setrlimit %s: %v", name, err)
		}
	}
	if drop {
		if err := dropRoot(); err != nil {
			return err
		}
	}
	if probe {
		return errProbed
	}
	if len(args) < 2 {
		return fmt.Errorf("no tool to run")
	}
	argv := args[1:]
	err := syscall.Exec(argv[0], argv, os.Environ())
	return fmt.Errorf("exec %s: %v", argv[0], err)
}

// dropRoot leaves root for SandboxUID: the bounding set emptied (so no
// capability can come back), no supplementary groups, the sandbox's gid
// and uid, then no capability at all.
func dropRoot() error {
	for c := 0; c < 64; c++ { // past the last one the kernel knows: EINVAL
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("dropping capability %d from the bounding set: %v", c, err)
		}
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %v", err)
	}
	if err := syscall.Setresgid(SandboxGID, SandboxGID, SandboxGID); err != nil {
		return fmt.Errorf("setresgid: %v", err)
	}
	if err := syscall.Setresuid(SandboxUID, SandboxUID, SandboxUID); err != nil {
		return fmt.Errorf("setresuid: %v", err)
	}
	// Leaving root cleared the permitted and effective sets; the
	// inheritable one is cleared here, which needs no capability.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %v", err)
	}
	if os.Getuid() != SandboxUID || os.Geteuid() != SandboxUID {
		return fmt.Errorf("still uid %d", os.Geteuid())
	}
	return nil
}
