package toolproc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
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

	// The most the watch has seen, for the reaper: bwrap reports how
	// its tool ended but not what it used (it does not wait for its
	// children in a way that carries their usage up).
	peakRSS atomic.Int64 // resident bytes of the sandbox
	peakCPU atomic.Int64 // CPU time of one process, in clock ticks
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
	if sb.procDir == nil && !sandboxProc(root) {
		// bwrap's child has not moved into the sandbox's root yet: what
		// its root shows now is the worker's own (its /tmp, every process
		// of the machine), which is no measure of the tool.
		return nil
	}
	for _, dir := range []string{"/tmp", "/dev/shm"} {
		var st unix.Statfs_t
		if unix.Statfs(root+dir, &st) == nil && st.Blocks > 0 && st.Bavail == 0 {
			return poison(ReasonTmpFull, "its %s reached %d bytes", dir, sb.lim.TmpSize)
		}
	}
	u := sb.usage(root)
	if u.rss > sb.peakRSS.Load() {
		sb.peakRSS.Store(u.rss)
	}
	if u.cpu > sb.peakCPU.Load() {
		sb.peakCPU.Store(u.cpu)
	}
	switch {
	case sb.lim.CPUSeconds > 0 && u.cpu >= int64(sb.lim.CPUSeconds)*clockTicks:
		// Go runtimes ignore SIGXCPU, so RLIMIT_CPU's soft limit would
		// only be met by its hard one: the worker stops the tool here.
		return poison(ReasonCPULimit, "a process used %d s of CPU, limit %d", u.cpu/clockTicks, sb.lim.CPUSeconds)
	case sb.cg != nil:
	case u.rss >= sb.lim.Memory:
		return poison(ReasonMemoryLimit, "resident memory %d bytes, limit %d", u.rss, sb.lim.Memory)
	case u.tasks >= int64(sb.lim.Pids):
		return poison(ReasonPidsLimit, "%d tasks, limit %d", u.tasks, sb.lim.Pids)
	}
	return nil
}

// sandboxProc reports whether root holds the sandbox's own /proc: a proc
// filesystem mounted, and not the one the worker sees (another pid
// namespace's is another mount).
func sandboxProc(root string) bool {
	var st unix.Statfs_t
	if unix.Statfs(root+"/proc", &st) != nil || st.Type != unix.PROC_SUPER_MAGIC {
		return false
	}
	inside, err1 := os.Stat(root + "/proc")
	outside, err2 := os.Stat("/proc")
	return err1 == nil && err2 == nil && !os.SameFile(inside, outside)
}

// clockTicks is USER_HZ, the unit of CPU times in /proc, which Linux
// fixes at 100 on every architecture it exports it to user space.
const clockTicks = 100

// sandboxUsage is one look at a sandbox's processes.
type sandboxUsage struct {
	rss   int64 // resident bytes, summed
	tasks int64 // processes and threads, summed
	cpu   int64 // CPU ticks of the busiest process
}

// usage sums the resident memory and the tasks of every process in the
// sandbox, read from the sandbox's own /proc, which lists exactly its
// processes.
func (sb *sandboxRun) usage(root string) (u sandboxUsage) {
	if sb.procDir == nil {
		f, err := os.Open(root + "/proc")
		if err != nil {
			return u
		}
		sb.procDir = f
	}
	if _, err := sb.procDir.Seek(0, 0); err != nil {
		return u
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
				u.rss += pages * page
			}
		}
		if b, err := os.ReadFile(dir + n + "/stat"); err == nil {
			threads, cpu := statFields(b)
			u.tasks += threads
			u.cpu = max(u.cpu, cpu)
		}
	}
	return u
}

func (sb *sandboxRun) closeProc() {
	if sb.procDir != nil {
		sb.procDir.Close()
	}
}

// statFields reads num_threads and the CPU time (utime plus stime, in
// clock ticks) from /proc/<pid>/stat. The command name comes first, in
// parentheses, and may hold anything, so fields are counted from the
// last ')'.
func statFields(stat []byte) (threads, cpu int64) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state): utime is field 14, stime 15,
	// num_threads 20.
	if len(f) < 18 {
		return 0, 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	threads, _ = strconv.ParseInt(f[17], 10, 64)
	return threads, utime + stime
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
// plus the signal that killed the tool (SIGXCPU, SIGXFSZ, or RLIMIT_CPU's
// SIGKILL); the peaks the watch saw, for a process that died of its
// memory backstop between two looks.
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
	switch {
	case sig == syscall.SIGXCPU:
		return ReasonCPULimit
	case sig == syscall.SIGKILL && sb.lim.CPUSeconds > 0 && sb.peakCPU.Load() >= int64(sb.lim.CPUSeconds)*clockTicks:
		return ReasonCPULimit
	case sig == syscall.SIGXFSZ:
		return ReasonFileSizeLimit
	case code != 0 && sb.cg == nil && sb.peakRSS.Load() >= sb.lim.Memory*9/10:
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
