package workeragent_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// hostOnly are the packages a worker binary must not link: the script
// engine and the host that runs it. A worker that pulled one in would pay
// its init and binary size for nothing, and a split along that import
// (fabric the shared contract, hostnats the host's side) would have
// quietly come undone.
var hostOnly = []string{
	"github.com/dop251/goja",
	"github.com/splashfabric/splashfabric/host",
	"github.com/splashfabric/splashfabric/hostloop",
	"github.com/splashfabric/splashfabric/hostnats",
	"github.com/splashfabric/splashfabric/workflow",
}

// TestWorkerLinksNoHost lists what the worker library and the wire
// contract it shares with the host link (go list -deps, tests excluded,
// from the module cache only: GOPROXY=off) and refuses any host-only
// package or a package beneath one.
func TestWorkerLinksNoHost(t *testing.T) {
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		t.Skipf("no go command beside the test's GOROOT (%v); the link check needs one", err)
	}
	for _, pkg := range []string{
		"github.com/splashfabric/splashfabric/workeragent",
		"github.com/splashfabric/splashfabric/fabric",
	} {
		t.Run(pkg, func(t *testing.T) {
			cmd := exec.Command(goCmd, "list", "-deps", "-f", "{{.ImportPath}}", pkg)
			cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly")
			out, err := cmd.Output()
			if err != nil {
				var exitErr *exec.ExitError
				if errors.As(err, &exitErr) {
					t.Fatalf("go list -deps %s: %v\n%s", pkg, err, exitErr.Stderr)
				}
				t.Skipf("go command unavailable: %v", err)
			}
			deps := strings.Fields(string(out))
			if len(deps) == 0 {
				t.Fatalf("go list -deps %s listed nothing", pkg)
			}
			for _, dep := range deps {
				for _, bad := range hostOnly {
					if dep == bad || strings.HasPrefix(dep, bad+"/") {
						t.Errorf("%s links %s", pkg, dep)
					}
				}
			}
		})
	}
}
