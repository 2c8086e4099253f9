package hostnats_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
)

// A transport with pool rings opens each answer under the ring of the pool
// serving the tool it names, whose token its subject must carry, and hands
// the loop that tool; everything else is dropped and counted.
func TestTransportVerifiesAnswersUnderTheirPoolsRing(t *testing.T) {
	env := fabrictest.NewEnv(t)
	poolOf := map[string]string{fabrictest.Tool: "text", "demo.sleep": "demo"}
	var mu sync.Mutex
	reasons := map[string]int{}
	tr := newTransport(t, env, "h1",
		hostnats.WithPoolKeys(map[string]protocol.Keys{"text": fabrictest.OtherKey}, func(tool string) string { return poolOf[tool] }),
		hostnats.WithRejectHandler(func(reason, _ string, _ error) {
			mu.Lock()
			reasons[reason]++
			mu.Unlock()
		}))
	textCodec, sharedCodec := fabrictest.NewCodec(t, fabrictest.OtherKey), fabrictest.NewCodec(t, fabrictest.Key)
	n := 0
	publish := func(c *fabric.Codec, subject, tool, req string) {
		t.Helper()
		n++
		m, err := c.SealWorker(req, 1, 1, protocol.ResultMessage(fabrictest.Result(req, 1)))
		if err != nil {
			t.Fatal(err)
		}
		m.Subject = subject
		if tool != "" {
			m.Header.Set(fabric.HeaderTool, tool)
		}
		m.Header.Set(fabric.HeaderMsgID, fmt.Sprint("m", n))
		if _, err := env.JS.PublishMsg(fabrictest.Ctx(t), m); err != nil {
			t.Fatal(err)
		}
	}
	textSubject := fabric.EventsSubject("h1", fabrictest.Tool)
	publish(textCodec, textSubject, "", "r1")                                        // no tool named
	publish(textCodec, textSubject, "demo.sleep", "r2")                              // another tool than the subject's
	publish(sharedCodec, textSubject, fabrictest.Tool, "r3")                         // sealed under another ring
	publish(textCodec, fabric.EventsSubject("h1", "demo.sleep"), "demo.sleep", "r4") // the demo pool's subject, the text pool's ring
	publish(textCodec, textSubject, fabrictest.Tool, "r5")                           // genuine
	// The stream delivers in publish order, so the first event the loop
	// gets is the genuine answer only if none of the others got through.
	ev := testwait.Receive(t, 0, "the genuine answer", tr.Events())
	if ev.Message.Result == nil || ev.Message.Result.RequestID != "r5" || ev.Tool != fabrictest.Tool {
		t.Fatalf("event %+v, want r5's answer for %s", ev, fabrictest.Tool)
	}
	testwait.Until(t, 0, "four refusals", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return reasons[hostnats.RejectWrongSubject] == 2 && reasons[hostnats.RejectUnknownKey] == 2
	})
}
