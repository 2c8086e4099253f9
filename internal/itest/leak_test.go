package itest

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// Scenario 11: once a cluster's cleanups ran, none of its goroutines (the
// loop, the transport's watcher and consumers, the agents, the server)
// remain. TestMain checks the same after every test.
func TestNoGoroutineOutlivesTeardown(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Run("cluster", func(t *testing.T) {
		c := newCluster(t, options{tools: []toolspec.Spec{tool("it.leak")}})
		c.startWorker("w1", func(a *workeragent.Agent) { must(t, a.HandleTool(c.tool("it.leak"), workeragent.HandlerFunc(echo))) })
		c.startWorker("w2", func(a *workeragent.Agent) { must(t, a.HandleTool(c.tool("it.leak"), workeragent.HandlerFunc(echo))) })
		wantCompleted(t, c.wait(c.submit(sequentialScript("it.leak", 10)), 0), sumTo(10))
	})
	goleak.VerifyNone(t, before)
}
