package hostnats_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
)

// A transport with pool rings opens each answer under the ring of the pool
// serving the tool it names, whose token its subject must carry, and hands
// the loop that tool; everything else is dropped and counted.
func TestTransportVerifiesAnswersUnderTheirPoolsRing(t *testing.T) {
	env := newEnv(t)
	poolOf := map[string]string{testTool: "text", "demo.sleep": "demo"}
	var mu sync.Mutex
	reasons := map[string]int{}
	tr := newTransport(t, env, "h1",
		hostnats.WithPoolKeys(map[string]protocol.Keys{"text": otherKey}, func(tool string) string { return poolOf[tool] }),
		hostnats.WithRejectHandler(func(reason, _ string, _ error) {
			mu.Lock()
			reasons[reason]++
			mu.Unlock()
		}))
	textCodec, sharedCodec := newCodec(t, otherKey), newCodec(t, testKey)
	n := 0
	publish := func(c *fabric.Codec, subject, tool, req string) {
		t.Helper()
		n++
		m, err := c.SealWorker(req, 1, 1, protocol.ResultMessage(validResult(req, 1)))
		if err != nil {
			t.Fatal(err)
		}
		m.Subject = subject
		if tool != "" {
			m.Header.Set(fabric.HeaderTool, tool)
		}
		m.Header.Set(fabric.HeaderMsgID, fmt.Sprint("m", n))
		if _, err := env.js.PublishMsg(testCtx(t), m); err != nil {
			t.Fatal(err)
		}
	}
	textSubject := fabric.EventsSubject("h1", testTool)
	publish(textCodec, textSubject, "", "r1")                                        // no tool named
	publish(textCodec, textSubject, "demo.sleep", "r2")                              // another tool than the subject's
	publish(sharedCodec, textSubject, testTool, "r3")                                // sealed under another ring
	publish(textCodec, fabric.EventsSubject("h1", "demo.sleep"), "demo.sleep", "r4") // the demo pool's subject, the text pool's ring
	publish(textCodec, textSubject, testTool, "r5")                                  // genuine
	// The stream delivers in publish order, so the first event the loop
	// gets is the genuine answer only if none of the others got through.
	ev := testwait.Receive(t, 0, "the genuine answer", tr.Events())
	if ev.Message.Result == nil || ev.Message.Result.RequestID != "r5" || ev.Tool != testTool {
		t.Fatalf("event %+v, want r5's answer for %s", ev, testTool)
	}
	testwait.Until(t, 0, "four refusals", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return reasons[hostnats.RejectWrongSubject] == 2 && reasons[hostnats.RejectUnknownKey] == 2
	})
}
