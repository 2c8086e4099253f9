package main

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
)

// The host's memory budget: the Go runtime's soft limit (GOMEMLIMIT), so
// that as the heap nears it the collector works harder and a host under
// memory pressure slows down instead of being killed, and the host loop's
// process budget (hostloop.LoopConfig.MemoryBudget), near which it refuses
// new sessions and fails the one holding the most. Sessions have their
// own budgets (--session-memory); this is the process's.

// Under "auto" the budget is a share of the tightest limit the process is
// under: its cgroup's (v2 memory.max, v1 memory.limit_in_bytes), its
// address space (RLIMIT_AS) or the machine's memory.
const (
	memoryLimitAuto  = "auto"
	memoryLimitOff   = "off"
	memoryLimitShare = 0.8
	// addressSpaceShare is the share of an address-space limit the heap
	// may take: a Go process maps about a gigabyte beside its heap (the
	// arena index, stacks, the binary), and a heap never gives its address
	// space back. Measured under a 4 GiB RLIMIT_AS, a bare Go program died
	// with 2.8 GiB live; half of it (2 GiB) leaves room for the
	// collector's overshoot and a script's last allocation.
	addressSpaceShare = 0.5
)

// byteUnits are the suffixes GOMEMLIMIT takes.
var byteUnits = []struct {
	suffix string
	shift  uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

// parseBytes reads a size as GOMEMLIMIT writes it: an integer with an
// optional unit (B, KiB, MiB, GiB, TiB).
func parseBytes(s string) (int64, error) {
	num, shift := s, uint(0)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, shift = strings.TrimSuffix(s, u.suffix), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional unit (KiB, MiB, GiB, TiB)", s)
	}
	return n << shift, nil
}

// memoryLimit is what --memory-limit resolves to: bytes, or none.
type memoryLimit struct {
	bytes  int64 // math.MaxInt64 for none
	source string
}

// memorySource is one limit the process may be under, with the share of
// it the budget takes.
type memorySource struct {
	name  string
	share float64
	read  func() (int64, bool)
}

// memorySources are the limits auto looks at, the tightest winning.
var memorySources = []memorySource{
	{"cgroup v2 memory.max", memoryLimitShare, cgroupFile("/sys/fs/cgroup/memory.max")},
	{"cgroup v1 memory.limit_in_bytes", memoryLimitShare, cgroupFile("/sys/fs/cgroup/memory/memory.limit_in_bytes")},
	{"RLIMIT_AS", addressSpaceShare, addressSpaceLimit},
	{"machine memory", memoryLimitShare, machineMemory},
}

// resolveMemoryLimit turns the flag's value into a limit. Under "auto" a
// GOMEMLIMIT the operator set is kept as the runtime read it.
func resolveMemoryLimit(v string, lookupEnv func(string) (string, bool)) (memoryLimit, error) {
	return resolveMemoryLimitFrom(v, lookupEnv, memorySources)
}

func resolveMemoryLimitFrom(v string, lookupEnv func(string) (string, bool), sources []memorySource) (memoryLimit, error) {
	switch v {
	case memoryLimitOff:
		return memoryLimit{bytes: math.MaxInt64, source: "off"}, nil
	case memoryLimitAuto:
		if env, ok := lookupEnv("GOMEMLIMIT"); ok && env != "" {
			return memoryLimit{bytes: debug.SetMemoryLimit(-1), source: "GOMEMLIMIT"}, nil
		}
		best := memoryLimit{bytes: math.MaxInt64, source: "unknown memory: none"}
		for _, src := range sources {
			n, ok := src.read()
			if !ok {
				continue
			}
			if b := int64(float64(n) * src.share); b < best.bytes {
				best = memoryLimit{bytes: b, source: fmt.Sprintf("%.0f%% of %s (%s)", src.share*100, src.name, formatSize(n))}
			}
		}
		return best, nil
	}
	n, err := parseBytes(v)
	if err != nil || n == 0 {
		return memoryLimit{}, fmt.Errorf("%w: --memory-limit %q: want %s, %s or a size such as 2GiB", errUsage, v, memoryLimitAuto, memoryLimitOff)
	}
	return memoryLimit{bytes: n, source: "flag"}, nil
}

// budget is the host loop's process budget: the limit, or none.
func (m memoryLimit) budget() int64 {
	if m.bytes == math.MaxInt64 {
		return 0
	}
	return m.bytes
}

// formatSize writes n in the largest unit that keeps it readable.
func formatSize(n int64) string {
	for _, u := range byteUnits {
		if u.shift > 0 && n >= 1<<u.shift {
			return fmt.Sprintf("%.1f%s", float64(n)/float64(int64(1)<<u.shift), u.suffix)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// apply sets the limit on the runtime and says so.
func (m memoryLimit) apply(log *slog.Logger) {
	debug.SetMemoryLimit(m.bytes)
	if m.bytes == math.MaxInt64 {
		log.Info("memory limit", "limit", "none", "source", m.source)
		return
	}
	log.Info("memory limit", "limit_bytes", m.bytes, "source", m.source)
}

// cgroupFile reads a cgroup memory limit from path; none set (v2's
// "max", v1's number near the largest int64) reads as not found.
func cgroupFile(path string) func() (int64, bool) {
	return func() (int64, bool) {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, false
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0, false
		}
		return n, true
	}
}

// addressSpaceLimit reads the process's RLIMIT_AS; unlimited reads as
// not found.
func addressSpaceLimit() (int64, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err != nil || lim.Cur >= 1<<62 {
		return 0, false
	}
	return int64(lim.Cur), true
}

// machineMemory reads MemTotal from /proc/meminfo.
func machineMemory() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[0] == "MemTotal:" && fields[2] == "kB" {
			n, err := strconv.ParseInt(fields[1], 10, 64)
			return n << 10, err == nil && n > 0
		}
	}
	return 0, false
}
