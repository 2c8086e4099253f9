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
	goleak.VerifyTestMain(m,
		// nats.go starts this goroutine with a JetStream context's first
		// async publish and, once the context's publisher is cleaned up,
		// it can be left receiving from a nil channel for good (nats.go
		// v1.55.0, jetstream/publish.go; see hostnats' TestMain). It is
		// nats.go's, one per context at most.
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"))
}
