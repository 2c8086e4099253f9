package toolproc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// limitPoll is how often the worker looks at a running sandbox: its
// private /tmp and /dev/shm, and, where rlimits enforce the limits, its
// resident memory and tasks; where a cgroup does, the cgroup's events.
const limitPoll = 100 * time.Millisecond

// sandboxRun is what the worker knows of one running sandbox.
type sandboxRun struct {
	lim Limits
	cg  *cgroup // nil where rlimits enforce the limits
	pid int     // bwrap's

	// Used by the watch goroutine only.
	initPid int      // the sandbox's pid 1, as the worker sees it
	procDir *os.File // the sandbox's own /proc
}

// watch looks at the sandbox every limitPoll until its process exits,
// and poisons the session with the limit's reason when the sandbox
// reaches one: the call ends with the reason, the process is stopped, and
// the next call gets a fresh one.
func (ss *session) watch(sb *sandboxRun) {
	defer sb.closeProc()
	t := time.NewTicker(limitPoll)
	defer t.Stop()
	for {
		select {
		case <-ss.exited:
			return
		case <-t.C:
		}
		if pe := sb.check(); pe != nil {
			ss.poison(pe)
			return
		}
	}
}

// check is one look; nil when the sandbox is within its limits.
func (sb *sandboxRun) check() *PoisonError {
	if sb.cg != nil {
		if r := sb.cg.reason(); r != "" {
			return poison(r, "the sandbox's cgroup reached its %s", limitName(r))
		}
	}
	if sb.initPid == 0 {
		sb.initPid = firstChild(sb.pid)
		if sb.initPid == 0 {
			return nil // bwrap has not forked yet
		}
	}
	root := "/proc/" + strconv.Itoa(sb.initPid) + "/root"
	for _, dir := range []string{"/tmp", "/dev/shm"} {
		var st unix.Statfs_t
		if unix.Statfs(root+dir, &st) == nil && st.Blocks > 0 && st.Bavail == 0 {
			return poison(ReasonTmpFull, "its %s reached %d bytes", dir, sb.lim.TmpSize)
		}
	}
	if sb.cg != nil {
		return nil
	}
	rss, tasks := sb.usage(root)
	switch {
	case rss >= sb.lim.Memory:
		return poison(ReasonMemoryLimit, "resident memory %d bytes, limit %d", rss, sb.lim.Memory)
	case tasks >= int64(sb.lim.Pids):
		return poison(ReasonPidsLimit, "%d tasks, limit %d", tasks, sb.lim.Pids)
	}
	return nil
}

// usage sums the resident memory and the tasks of every process in the
// sandbox, read from the sandbox's own /proc, which lists exactly its
// processes.
func (sb *sandboxRun) usage(root string) (rss, tasks int64) {
	if sb.procDir == nil {
		f, err := os.Open(root + "/proc")
		if err != nil {
			return 0, 0
		}
		sb.procDir = f
	}
	if _, err := sb.procDir.Seek(0, 0); err != nil {
		return 0, 0
	}
	names, _ := sb.procDir.Readdirnames(-1)
	page := int64(os.Getpagesize())
	dir := sb.procDir.Name() + "/"
	for _, n := range names {
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		if b, err := os.ReadFile(dir + n + "/statm"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 1 {
				pages, _ := strconv.ParseInt(f[1], 10, 64)
				rss += pages * page
			}
		}
		if b, err := os.ReadFile(dir + n + "/stat"); err == nil {
			tasks += statThreads(b)
		}
	}
	return rss, tasks
}

func (sb *sandboxRun) closeProc() {
	if sb.procDir != nil {
		sb.procDir.Close()
	}
}

// statThreads reads num_threads from /proc/<pid>/stat. The command name
// comes first, in parentheses, and may hold anything, so fields are
// counted from the last ')'.
func statThreads(stat []byte) int64 {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	// state is field 3 of stat, num_threads field 20.
	if len(f) < 18 {
		return 0
	}
	n, _ := strconv.ParseInt(f[17], 10, 64)
	return n
}

// firstChild is a child of pid, or 0: bwrap's only child is the
// sandbox's pid 1.
func firstChild(pid int) int {
	if c := children(pid); len(c) > 0 {
		return c[0]
	}
	return 0
}

// children are the children of pid's main thread, which for bwrap and
// the sandbox's pid 1 (single-threaded both) are all of them.
func children(pid int) []int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// exitReason names the limit that ended a sandbox whose bwrap exited as
// st says, or "": the cgroup's events; bwrap's exit code, which is 128
// plus the signal that killed the tool (SIGXCPU, SIGXFSZ, or SIGKILL past
// the CPU limit); the largest resident memory of any of its processes
// where rlimits hold memory.
func (sb *sandboxRun) exitReason(st *os.ProcessState) string {
	if sb.cg != nil {
		if r := sb.cg.reason(); r != "" {
			return r
		}
	}
	if st == nil {
		return ""
	}
	code := st.ExitCode()
	var sig syscall.Signal
	if code > 128 {
		sig = syscall.Signal(code - 128)
	}
	var cpu time.Duration
	var maxRSS int64
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok && ru != nil {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		maxRSS = ru.Maxrss << 10
	}
	switch {
	case sig == syscall.SIGXCPU:
		return ReasonCPULimit
	case sig == syscall.SIGKILL && sb.lim.CPUSeconds > 0 && cpu >= time.Duration(sb.lim.CPUSeconds)*time.Second:
		return ReasonCPULimit
	case sig == syscall.SIGXFSZ:
		return ReasonFileSizeLimit
	case code != 0 && sb.cg == nil && maxRSS >= sb.lim.Memory:
		return ReasonMemoryLimit
	}
	return ""
}

// limitName is how a reason names its limit in a message.
func limitName(reason string) string {
	switch reason {
	case ReasonMemoryLimit:
		return "memory limit"
	case ReasonPidsLimit:
		return "pids limit"
	}
	return reason
}
