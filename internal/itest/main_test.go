package itest

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Every test tears its cluster down through t.Cleanup; VerifyTestMain
// fails the run if any goroutine outlives them. Run with itestToolEnv set,
// the test binary is instead the Go tool of the process-tool tests.
func TestMain(m *testing.M) {
	if os.Getenv(itestToolEnv) != "" {
		os.Exit(runItestTool())
	}
	if os.Getenv(itestMCPEnv) != "" {
		os.Exit(runItestMCPServer())
	}
	goleak.VerifyTestMain(m)
}
