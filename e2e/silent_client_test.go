package e2e_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

// A worker cut off the network keeps its pull requests at the server
// until the server drops its connection, and meanwhile takes invocations
// it never receives, each back only after the ack wait. Dropped within
// the ack wait, it cannot take a redelivered one again, so a call is
// delayed by one ack wait at most (TestScenarioPartitionWorker runs the
// real cut). The deployment's PING settings bound the drop: the longest
// it can take is one interval for the timer's phase, one more delayed by
// the client's last word, and one per PING allowed out.
func TestNATSConfigDropsASilentClientWithinTheAckWait(t *testing.T) {
	srv := startConfiguredNode(t, demoPools(t))
	opts, err := server.ProcessConfigFile(filepath.Join(repoRoot(t), "deploy", "nats", "splash.conf"))
	if err != nil {
		t.Fatalf("deploy/nats/splash.conf: %v", err)
	}
	ackWait := composeAckWait(t)
	longest := opts.PingInterval * time.Duration(opts.MaxPingsOut+2)
	if longest >= ackWait {
		t.Fatalf("a silent client may keep its pull requests %v (ping_interval %v, ping_max %d); the ack wait is %v",
			longest, opts.PingInterval, opts.MaxPingsOut, ackWait)
	}

	p := srv.StartCutProxy(t)
	nc := p.Connect(t, nats.UserInfo("ops", testPasswords["SPLASH_NATS_OPS_PASSWORD"]), nats.CustomInboxPrefix(fabric.InboxPrefix("ops")))
	cid, err := nc.GetClientID()
	if err != nil {
		t.Fatal(err)
	}
	p.Partition()
	testwait.Until(t, 3*longest, "the partitioned client dropped as stale", func() bool {
		cz, err := srv.Connz(&server.ConnzOptions{State: server.ConnClosed, CID: cid})
		return err == nil && len(cz.Conns) == 1 && cz.Conns[0].Reason == server.StaleConnection.String()
	})
}

// composeAckWait is the ack wait docker-compose.yml gives host and
// workers.
func composeAckWait(t *testing.T) time.Duration {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*SPLASH_ACK_WAIT:\s*"?([0-9a-z.]+)"?\s*$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("docker-compose.yml sets no SPLASH_ACK_WAIT")
	}
	d, err := time.ParseDuration(string(m[1]))
	if err != nil {
		t.Fatalf("docker-compose.yml: SPLASH_ACK_WAIT: %v", err)
	}
	return d
}
