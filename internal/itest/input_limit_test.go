package itest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// The reproduction: tool.start("demo.echo", "e".repeat(1153433))
// was never published and never failed. A host that bounds inputs by what
// its streams carry refuses it at the start, before it takes any budget;
// an input at the bound is published and answered.
func TestToolInputBoundedByWhatTheStreamsCarry(t *testing.T) {
	c := newCluster(t, options{tools: []toolspec.Spec{tool("it.len")}, boundInputs: true})
	c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.len"), workeragent.HandlerFunc(func(_ context.Context, call *workeragent.Call) (workeragent.Output, error) {
			return workeragent.Result(strconv.Itoa(len(call.Input.Text))), nil
		})))
	})
	limit := c.fcfg.MaxToolInputBytes(c.hostNC.MaxPayload())
	if limit <= 0 || limit > int(c.fcfg.MaxMsgSize) {
		t.Fatalf("input bound %d out of range", limit)
	}

	// At the bound: a JSON string of limit-2 plain bytes.
	id := c.submit(sprintf(`await tool.start("it.len", "e".repeat(%d))`, limit-2))
	wantCompleted(t, c.wait(id, 0), sprintf("%d", limit-2))

	published := c.streamSeq(fabric.StreamInvoke)
	id = c.submit(`
		let refused = "";
		try { await tool.start("it.len", "e".repeat(1153433)) } catch (e) { refused = e.message }
		refused`)
	s := c.wait(id, 0)
	if s.State != hostloop.SessionCompleted || !strings.Contains(s.Value, "tool input too large") {
		t.Fatalf("session %+v, want the script to have caught the refusal", s)
	}
	// Uncaught, it fails the session with the typed reason.
	id = c.submit(`await tool.start("it.len", "e".repeat(1153433))`)
	if s := c.wait(id, 0); s.State != hostloop.SessionFailed || !errors.Is(s.Err, host.ErrInputTooLarge) {
		t.Fatalf("session %+v, want failed with ErrInputTooLarge", s)
	}
	if got := c.streamSeq(fabric.StreamInvoke); got != published {
		t.Fatalf("the invocation stream took %d messages for refused inputs", got-published)
	}
}

// Without the bound, an invocation the server refuses as too large fails
// its operation (counted as a rejected publish) instead of being published
// again for ever.
func TestInvocationTooLargeFailsItsOperation(t *testing.T) {
	c := newCluster(t, options{tools: []toolspec.Spec{tool("it.echo")}})
	c.startWorker("w1", func(a *workeragent.Agent) { must(t, a.HandleTool(c.tool("it.echo"), workeragent.HandlerFunc(echo))) })
	id := c.submit(`
		let failed = "";
		try { await tool.start("it.echo", "e".repeat(1153433)) } catch (e) { failed = e.message }
		failed`)
	s := c.wait(id, 0)
	if s.State != hostloop.SessionCompleted || !strings.Contains(s.Value, "not dispatched") || !strings.Contains(s.Value, "larger than the transport carries") {
		t.Fatalf("session %+v, want the call failed as not dispatched", s)
	}
	testwait.Until(t, 0, "the refused publish to be reported", func() bool { return c.obs.rejections("publish") >= 1 })
}
