package protocol_test

import (
	"fmt"
	"strings"

	"github.com/splashfabric/splashfabric/protocol"
)

// A host asks a worker about an operation it claimed; the worker answers
// with an authenticated status bound to the exact request. Each side keeps
// its own SessionAuthenticator; only JSON lines cross the wire.
func ExampleSessionAuthenticator() {
	key := protocol.SessionKeyFromArray([protocol.AuthTagBytes]byte{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
		7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7})
	host, _ := protocol.NewSessionAuthenticator("worker-1", key, protocol.RoleHost)
	worker, _ := protocol.NewSessionAuthenticator("worker-1", key, protocol.RoleWorker)

	// Host: seal the request and write it as one line.
	req := protocol.OperationReconcileRequest{
		SessionID: "worker-1", RequestID: "reconcile-1", Tool: "text.remote", OperationKey: "op-7",
	}
	out, _ := host.Seal(protocol.ReconcileMessage(req))
	line, _ := out.ToJSONLine()

	// Worker: parse, open, answer.
	in, _ := protocol.ParseJSONLine(line)
	msg, _ := worker.Open(in)
	asked := msg.Reconcile
	fmt.Println("worker got", msg.Kind, asked.Tool, asked.OperationKey)
	res, _ := protocol.NewOperationReconcileResult(asked.SessionID, asked.RequestID, asked.Tool, asked.OperationKey,
		protocol.StatusSucceeded(protocol.TextPayload("done")))
	reply, _ := worker.Seal(protocol.ReconciledMessage(res))
	replyLine, _ := reply.ToJSONLine()

	// Host: parse, open, and check the answer is bound to its question.
	back, _ := protocol.ParseJSONLine(replyLine)
	answer, err := host.Open(back)
	if err != nil {
		fmt.Println("rejected:", err)
		return
	}
	fmt.Println("host got", answer.Reconciled.Status.State, answer.Reconciled.Status.Payload.Text,
		"answers:", answer.Reconciled.Answers(req) == nil)

	// A replay of the same reply is refused and changes nothing.
	_, err = host.Open(back)
	fmt.Println("replay:", err)
	sent, opened := host.Sequences()
	fmt.Println("host sent", sent, "opened", opened)
	// Output:
	// worker got reconcile_operation text.remote op-7
	// host got succeeded done answers: true
	// replay: protocol: out-of-order sequence: replayed seq 1, want 2
	// host sent 1 opened 1
}

// The fabric seals with a Signer and keeps its own replay window; the
// sequence scheme is the caller's (here: attempt in the high 32 bits).
func ExampleSigner() {
	key, _ := protocol.ParseSessionKey(strings.Repeat("07", protocol.AuthTagBytes))
	s := protocol.NewSigner(key)
	const attempt, k = 1, 1
	f, _ := s.Seal("req-1", protocol.RoleWorker, attempt<<32|k, protocol.ResultMessage(protocol.Result{
		RequestID: "req-1", Attempt: attempt, Status: protocol.ResultSucceeded, Payload: new(protocol.TextPayload("done")),
	}))
	m, err := s.Verify(f)
	fmt.Println(m.Kind, m.Result.Status, m.Result.Payload.Text, err)

	f.Sequence++ // any change to a covered field breaks the tag
	_, err = s.Verify(f)
	fmt.Println(err != nil)
	// Output:
	// result succeeded done <nil>
	// true
}

func ExampleParseJSONLine() {
	_, err := protocol.ParseJSONLine([]byte(`{"session_id":"s","role":"host","seq":1}`))
	fmt.Println(err)
	_, err = protocol.ParseJSONLineLimit([]byte(`{"session_id":"s"}`), 8)
	fmt.Println(err)
	// Output:
	// protocol: malformed frame: msg is not a JSON object
	// protocol: frame too large: 18 bytes, limit 8
}

func ExampleValidateToolName() {
	for _, name := range []string{"text.remote", "text..remote", "text.*"} {
		fmt.Println(name, protocol.ValidateToolName(name) == nil)
	}
	// Output:
	// text.remote true
	// text..remote false
	// text.* false
}

func ExampleNewOperationReconcileResult() {
	_, err := protocol.NewOperationReconcileResult("worker-1", "reconcile-1", "text.remote", "op-7",
		protocol.OperationStatus{State: protocol.OperationRunning, Payload: new(protocol.TextPayload("early"))})
	fmt.Println(err)
	// Output:
	// protocol: invalid message: running status with payload
}

func ExampleSessionKey_String() {
	key, _ := protocol.GenerateSessionKey(nil)
	fmt.Println(key, fmt.Sprintf("%#v", key))
	// Output:
	// SessionKey(redacted) protocol.SessionKey(redacted)
}
