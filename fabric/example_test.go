package fabric_test

import (
	"fmt"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/protocol"
)

func ExampleInvokeSubject() {
	subject, err := fabric.InvokeSubject("text.remote")
	fmt.Println(subject, err)
	_, err = fabric.InvokeSubject("text.*")
	fmt.Println(err != nil)
	fmt.Println(fabric.ConsumerName("text.remote"))
	fmt.Println(fabric.MsgID("op-key", 2))
	// Output:
	// splash.invoke.text.remote <nil>
	// true
	// pool_text_remote
	// op-key/2
}

func ExampleCodec() {
	key := protocol.SessionKeyFromArray([protocol.AuthTagBytes]byte{1})
	codec, err := fabric.NewCodec(key)
	if err != nil {
		panic(err)
	}
	inv := protocol.Invoke{
		RequestID: "req-1", Tool: "echo", Input: protocol.TextPayload("hi"),
		Attempt: 1, AttemptLimit: 3, IdempotencyKey: "k",
	}
	// Host side.
	data, _ := codec.SealInvoke(inv)
	// Worker side.
	got, err := codec.OpenInvoke(data.Header, data.Data)
	fmt.Println(got.Input.Text, err)
	p := protocol.TextPayload("HI")
	reply, _ := codec.SealWorker(got.RequestID, got.Attempt, 1, protocol.ResultMessage(protocol.Result{
		RequestID: got.RequestID, Attempt: got.Attempt, Status: protocol.ResultSucceeded, Payload: &p,
	}))
	// Host side again.
	msg, seq, err := codec.OpenWorker(reply.Header, reply.Data)
	fmt.Println(msg.Result.Payload.Text, seq == fabric.WorkerSeq(1, 1), err)
	// A frame sealed by the host cannot pass as a worker's.
	_, _, err = codec.OpenWorker(data.Header, data.Data)
	fmt.Println(err != nil)
	// Output:
	// hi <nil>
	// HI true <nil>
	// true
}

// A host holds every pool's ring and seals each tool's frames under the
// ring of the pool that serves it; a frame sealed by another pool does
// not open there.
func ExamplePoolCodecs() {
	host := protocol.SessionKeyFromArray([protocol.AuthTagBytes]byte{1})
	text := protocol.SessionKeyFromArray([protocol.AuthTagBytes]byte{2})
	demo := protocol.SessionKeyFromArray([protocol.AuthTagBytes]byte{3})
	pools, err := fabric.NewPoolCodecs(host, map[string]protocol.Keys{"text": text, "demo": demo}, func(tool string) string {
		if tool == "demo.upper" {
			return "text"
		}
		return "demo"
	})
	if err != nil {
		panic(err)
	}
	textWorker, _ := fabric.NewCodec(text)
	demoWorker, _ := fabric.NewCodec(demo)
	p := protocol.TextPayload("HI")
	answer := protocol.ResultMessage(protocol.Result{RequestID: "r1", Attempt: 1, Status: protocol.ResultSucceeded, Payload: &p})
	for _, w := range []struct {
		name  string
		codec *fabric.Codec
	}{{"text", textWorker}, {"demo", demoWorker}} {
		m, _ := w.codec.SealWorker("r1", 1, 1, answer)
		_, _, err := pools.ForTool("demo.upper").OpenWorker(m.Header, m.Data)
		fmt.Printf("a demo.upper answer sealed by pool %s: accepted %v\n", w.name, err == nil)
	}
	// Output:
	// a demo.upper answer sealed by pool text: accepted true
	// a demo.upper answer sealed by pool demo: accepted false
}
