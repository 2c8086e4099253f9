package toolproc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LimitMechanism says what enforces a sandbox's memory and pids limits.
// The per-process ones (open files, file size, CPU time) are rlimits
// either way.
type LimitMechanism string

// The mechanisms.
const (
	// LimitsCgroup: each sandbox runs in a cgroup v2 of its own under a
	// cgroup the worker may manage, with memory.max and pids.max; the
	// kernel enforces them and its events name the limit.
	LimitsCgroup LimitMechanism = "cgroup"
	// LimitsRlimit: the shim sets RLIMIT_NPROC (counted in the sandbox's
	// own user namespace) and a per-process RLIMIT_DATA backstop, and
	// the worker watches the sandbox's resident memory and tasks and
	// stops it past its limits.
	LimitsRlimit LimitMechanism = "rlimit"
)

var (
	cgroupMu    sync.Mutex
	cgroupFound = map[string][2]string{} // explicit -> parent, why
)

// cgroupParentFor is findCgroupParent, looked up once per explicit
// setting: every tool of a worker shares the answer.
func cgroupParentFor(explicit string) (string, string) {
	cgroupMu.Lock()
	defer cgroupMu.Unlock()
	if r, ok := cgroupFound[explicit]; ok {
		return r[0], r[1]
	}
	dir, why := findCgroupParent(explicit)
	cgroupFound[explicit] = [2]string{dir, why}
	return dir, why
}

// cgroupControllers are what a sandbox's cgroup needs.
var cgroupControllers = []string{"memory", "pids"}

// findCgroupParent returns the cgroup v2 directory under which this
// worker may make one cgroup per sandbox, or "" and why there is none.
// explicit, when set, is the operator's choice and must work; otherwise
// the worker's own cgroup is used where it may hold children with the
// controllers enabled (the root cgroup, as a root worker outside a
// container sees it). A cgroup with processes in it cannot, so a worker
// in an ordinary service or container cgroup uses rlimits unless given a
// delegated cgroup.
func findCgroupParent(explicit string) (string, string) {
	mount, err := cgroup2Mount()
	if err != nil {
		return "", err.Error()
	}
	dir := explicit
	if dir == "" {
		own, err := ownCgroup()
		if err != nil {
			return "", err.Error()
		}
		dir = filepath.Join(mount, own)
		if own != "/" {
			return "", fmt.Sprintf("the worker's cgroup %s holds its processes, so it cannot hold a sandbox's (give the worker a delegated cgroup)", dir)
		}
	} else if !under(filepath.Clean(dir), mount) {
		return "", fmt.Sprintf("%s is not under the cgroup v2 mount %s", dir, mount)
	}
	if err := prepareCgroupParent(dir); err != nil {
		return "", err.Error()
	}
	return dir, ""
}

// cgroup2Mount finds where the unified hierarchy is mounted.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	var found []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ... - fstype source super
		fields := strings.Fields(sc.Text())
		i := slices.Index(fields, "-")
		if i < 5 || i+1 >= len(fields) || fields[i+1] != "cgroup2" {
			continue
		}
		found = append(found, fields[4])
	}
	switch {
	case slices.Contains(found, "/sys/fs/cgroup"):
		return "/sys/fs/cgroup", nil
	case len(found) > 0:
		return found[0], nil
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted")
}

// ownCgroup is the worker's path in the unified hierarchy.
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return rest, nil
		}
	}
	return "", errors.New("the worker is in no cgroup v2")
}

// prepareCgroupParent checks that dir offers the controllers, enables
// them for its children, and that the worker may make a child there.
func prepareCgroupParent(dir string) error {
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("cgroup %s: %v", dir, err)
	}
	have := strings.Fields(string(avail))
	for _, c := range cgroupControllers {
		if !slices.Contains(have, c) {
			return fmt.Errorf("cgroup %s offers no %s controller (it has: %s)", dir, c, strings.Join(have, " "))
		}
	}
	enabled, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("cgroup %s: %v", dir, err)
	}
	on := strings.Fields(string(enabled))
	for _, c := range cgroupControllers {
		if slices.Contains(on, c) {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0); err != nil {
			return fmt.Errorf("cgroup %s: enabling %s for its children: %v", dir, c, err)
		}
	}
	probe := filepath.Join(dir, "splash-probe-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return fmt.Errorf("cgroup %s: the worker may not make a cgroup there: %v", dir, err)
	}
	_ = os.Remove(probe)
	return nil
}

// cgroup is one sandbox's cgroup.
type cgroup struct {
	dir string
	f   *os.File // the directory, for CLONE_INTO_CGROUP
}

// newCgroup makes name under parent with lim's memory and pids limits.
func newCgroup(parent, name string, lim Limits) (*cgroup, error) {
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: cgroup: %v", ErrStartFailed, err)
	}
	cg := &cgroup{dir: dir}
	for _, w := range []struct {
		file, value string
		optional    bool
	}{
		{"memory.max", strconv.FormatInt(lim.Memory, 10), false},
		// No swap: a sandbox past its memory is stopped, not paged out.
		{"memory.swap.max", "0", true},
		// An OOM kill ends the whole sandbox, not one of its processes.
		{"memory.oom.group", "1", true},
		{"pids.max", strconv.Itoa(lim.Pids), false},
	} {
		err := os.WriteFile(filepath.Join(dir, w.file), []byte(w.value), 0o644)
		if err != nil && !(w.optional && errors.Is(err, os.ErrNotExist)) {
			cg.remove()
			return nil, fmt.Errorf("%w: cgroup %s: %v", ErrStartFailed, w.file, err)
		}
	}
	f, err := os.Open(dir)
	if err != nil {
		cg.remove()
		return nil, fmt.Errorf("%w: cgroup: %v", ErrStartFailed, err)
	}
	cg.f = f
	return cg, nil
}

func (cg *cgroup) fd() int { return int(cg.f.Fd()) }

// reason reads the cgroup's events: a limit the kernel enforced since
// the sandbox started, or "".
func (cg *cgroup) reason() string {
	if eventCount(filepath.Join(cg.dir, "memory.events"), "oom_kill") > 0 || eventCount(filepath.Join(cg.dir, "memory.events"), "oom") > 0 {
		return ReasonMemoryLimit
	}
	if eventCount(filepath.Join(cg.dir, "pids.events"), "max") > 0 {
		return ReasonPidsLimit
	}
	return ""
}

// eventCount reads one counter of a cgroup events file; 0 when absent.
func eventCount(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// remove closes the cgroup and removes it once its last process is gone.
func (cg *cgroup) remove() {
	if cg.f != nil {
		cg.f.Close()
	}
	for i := 0; i < 50; i++ {
		err := os.Remove(cg.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		// A dying sandbox leaves its cgroup a moment after the reaper
		// saw bwrap go.
		time.Sleep(20 * time.Millisecond)
	}
}
