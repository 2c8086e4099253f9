package hostnats_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// nats.go starts this goroutine with a JetStream context's first
		// async publish, and it reads the context's status channel only
		// once it runs; CleanupPublisher (HostTransport.Close,
		// SessionArchive.Close) nils that channel, so a Close right after
		// the first publish can leave it receiving from nil for good
		// (nats.go v1.55.0, jetstream/publish.go). It is nats.go's, one
		// per context at most, and seen in about 1 run in 25 here.
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"))
}
