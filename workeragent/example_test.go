package workeragent_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// A handler says how its call ended through what it returns; the agent
// reads the wrapped outcome with errors.As, so context can be added with
// fmt.Errorf.
func ExampleRateLimited() {
	err := fmt.Errorf("calling the mail API: %w",
		workeragent.RateLimited(300*time.Millisecond, errors.New("quota exhausted")))
	var rl *workeragent.RateLimitedError
	if errors.As(err, &rl) {
		fmt.Println(rl.After, rl.Err)
	}
	// Output: 300ms quota exhausted
}

// An agent serving one tool, with the host's side done by hand: seal an
// invocation, publish it to the tool's subject, read the sealed answer
// from the host's events subject.
func ExampleAgent() {
	dir, _ := os.MkdirTemp("", "workeragent-example")
	defer os.RemoveAll(dir)
	srv, err := server.NewServer(natstest.Options(dir))
	if err != nil {
		fmt.Println(err)
		return
	}
	srv.Start()
	defer srv.Shutdown()
	srv.ReadyForConnections(10 * time.Second)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	js, _ := jetstream.New(nc)
	key, _ := protocol.GenerateSessionKey(rand.Reader)
	journal, _ := idempotency.NewKV(ctx, js, idempotency.KVConfig{})
	agent, _ := workeragent.New(nc, workeragent.Config{WorkerID: "worker-1", Key: key, Journal: journal})
	// The definition the host registers too (a catalog entry).
	upper, err := toolspec.Spec{Name: "text.upper", Idempotent: true}.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = agent.HandleTool(upper, workeragent.HandlerFunc(
		func(_ context.Context, call *workeragent.Call) (workeragent.Output, error) {
			return workeragent.Result(strings.ToUpper(call.Input.Text)), nil
		}))
	done := make(chan error, 1)
	go func() { done <- agent.Run(ctx) }()
	<-agent.Ready()

	// The host's side.
	codec, _ := fabric.NewCodec(key)
	// A host reads its events subject and, for Idempotent tools, the
	// answer subjects below it (a durable consumer, in hostnats).
	events := make(chan *nats.Msg, 8)
	for _, subject := range fabric.HostEventsSubjects("host-1") {
		sub, _ := nc.ChanSubscribe(subject, events)
		defer sub.Unsubscribe()
	}
	inv := protocol.Invoke{
		RequestID: "req-1", Tool: "text.upper", Input: protocol.TextPayload("hello"),
		Attempt: 1, AttemptLimit: 1, IdempotencyKey: "session-1/call-1",
		Contract: &protocol.Contract{Digest: upper.Digest(), Idempotent: true},
	}
	data, _ := codec.SealInvoke(inv)
	subject, _ := fabric.InvokeSubject(inv.Tool)
	m := data
	m.Subject = subject
	m.Header.Set(fabric.HeaderMsgID, fabric.MsgID(inv.IdempotencyKey, inv.Attempt))
	m.Header.Set(fabric.HeaderHost, "host-1")
	if _, err := js.PublishMsg(ctx, m); err != nil {
		fmt.Println(err)
		return
	}
	var answer *nats.Msg
	select {
	case answer = <-events:
	case <-time.After(10 * time.Second):
		fmt.Println("no answer")
		return
	}
	reply, _, err := codec.OpenWorker(answer.Header, answer.Data)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reply.Result.Status, reply.Result.Payload.Text)

	stop()
	fmt.Println("run:", <-done)
	// Output:
	// succeeded HELLO
	// run: <nil>
}
