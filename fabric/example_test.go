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
