package toolproc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The cgroup files a sandbox's cgroup is made with and read by, against a
// directory standing in for a cgroup v2 hierarchy: this machine may have
// none to delegate (the worker then uses rlimits, which the sandbox tests
// exercise).
func TestCgroupFiles(t *testing.T) {
	parent := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(parent, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cgroup.controllers", "cpuset cpu io memory pids\n")
	write("cgroup.subtree_control", "memory pids\n")
	if err := prepareCgroupParent(parent); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	lim := Limits{Memory: 64 << 20, Pids: 32}
	cg, err := newCgroup(parent, cgroupName("text.upper/1-abcd"), lim)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.f.Close()
	if want := filepath.Join(parent, "splash-text.upper_1-abcd"); cg.dir != want {
		t.Fatalf("cgroup %s, want %s", cg.dir, want)
	}
	for file, want := range map[string]string{"memory.max": "67108864", "pids.max": "32"} {
		b, err := os.ReadFile(filepath.Join(cg.dir, file))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %q", file, b, err, want)
		}
	}
	if r := cg.reason(); r != "" {
		t.Fatalf("reason %q before any event", r)
	}
	for _, tc := range []struct{ file, body, want string }{
		{"pids.events", "max 3\n", ReasonPidsLimit},
		{"memory.events", "low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n", ReasonMemoryLimit},
	} {
		if err := os.WriteFile(filepath.Join(cg.dir, tc.file), []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := cg.reason(); r != tc.want {
			t.Errorf("after %s: reason %q, want %q", tc.file, r, tc.want)
		}
	}
}

// A parent without the controllers is refused with the reason the worker
// logs.
func TestCgroupParentWithoutControllers(t *testing.T) {
	parent := t.TempDir()
	if err := os.WriteFile(filepath.Join(parent, "cgroup.controllers"), []byte("hugetlb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := prepareCgroupParent(parent)
	if err == nil || !strings.Contains(err.Error(), "no memory controller") {
		t.Fatalf("prepare: %v, want no memory controller", err)
	}
}
