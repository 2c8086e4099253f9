package httpapi_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
)

// A client tells a session ended by the same states the loop ends it in.
func TestWireStatesAreTheLoops(t *testing.T) {
	for _, st := range []hostloop.SessionState{hostloop.SessionSuspended, hostloop.SessionCompleted, hostloop.SessionFailed, hostloop.SessionCancelled} {
		if got := (apiwire.Session{State: string(st)}).Terminal(); got != st.Terminal() {
			t.Errorf("state %q: the wire says terminal %v, the loop %v", st, got, st.Terminal())
		}
	}
}

// The client links the wire types and nothing of the host: no script
// engine, no loop.
func TestClientLinksNoHost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/splashfabric/splashfabric/apiclient").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case strings.Contains(dep, "goja"),
			strings.HasPrefix(dep, "github.com/splashfabric/splashfabric/host"),
			dep == "github.com/splashfabric/splashfabric/httpapi":
			t.Errorf("apiclient links %s", dep)
		}
	}
}
