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
)

// The host's soft memory limit (the Go runtime's GOMEMLIMIT): as the heap
// nears it the collector works harder, so a host under memory pressure
// slows down instead of being killed. Sessions have their own budgets
// (--session-memory); this is the process's.

// memoryLimitAuto takes a share of the memory the process may use: its
// container's limit, else the machine's memory.
const (
	memoryLimitAuto  = "auto"
	memoryLimitOff   = "off"
	memoryLimitShare = 0.8
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

// resolveMemoryLimit turns the flag's value into a limit. Under "auto" a
// GOMEMLIMIT the operator set is left as the runtime read it.
func resolveMemoryLimit(v string, lookupEnv func(string) (string, bool)) (memoryLimit, error) {
	switch v {
	case memoryLimitOff:
		return memoryLimit{bytes: math.MaxInt64, source: "off"}, nil
	case memoryLimitAuto:
		if env, ok := lookupEnv("GOMEMLIMIT"); ok && env != "" {
			return memoryLimit{bytes: debug.SetMemoryLimit(-1), source: "GOMEMLIMIT"}, nil
		}
		if n, ok := cgroupMemory(); ok {
			return memoryLimit{bytes: int64(float64(n) * memoryLimitShare), source: "container"}, nil
		}
		if n, ok := machineMemory(); ok {
			return memoryLimit{bytes: int64(float64(n) * memoryLimitShare), source: "machine"}, nil
		}
		return memoryLimit{bytes: math.MaxInt64, source: "unknown memory: none"}, nil
	}
	n, err := parseBytes(v)
	if err != nil || n == 0 {
		return memoryLimit{}, fmt.Errorf("%w: --memory-limit %q: want %s, %s or a size such as 2GiB", errUsage, v, memoryLimitAuto, memoryLimitOff)
	}
	return memoryLimit{bytes: n, source: "flag"}, nil
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

// cgroupMemory reads the memory limit of the process's cgroup (v2, then
// v1); none set reads as not found.
func cgroupMemory() (int64, bool) {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
		// v1 writes "no limit" as a number near the largest int64.
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0, false
		}
		return n, true
	}
	return 0, false
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
