package workeragent

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
)

// TestPullerStatuses sends each status the server can put on a pull inbox
// to a tool's inbox (window 4, so the agent asks again once 2 are free)
// and reads the pull requests that follow: a request that ended owing
// messages gives them back, a leadership change forgets every request,
// and a refusal is not answered with a request at once (the watch asks
// after two silent heartbeats), so a refusing server cannot drive a loop.
// Each case ends with a leadership change, whose request of the whole
// window marks where the case's own requests end.
func TestPullerStatuses(t *testing.T) {
	srv := natstest.Start(t)
	nc, observer := srv.Connect(), srv.Connect()
	key, err := protocol.GenerateSessionKey(rand.Reader)
	must(t, err)
	a, err := New(nc, Config{
		WorkerID: "w1", Key: key, Fabric: fabric.DefaultConfig(), Journal: idempotency.NewMemory(nil),
		LeaseDuration: time.Second, HeartbeatInterval: 200 * time.Millisecond, DrainGrace: time.Second,
	})
	must(t, err)
	must(t, a.HandleTool(tooltest.Text(t, "echo"), HandlerFunc(func(context.Context, *Call) (Output, error) { return Result("ok"), nil }), Concurrency(4)))

	requests := make(chan int, 16)
	sub, err := observer.Subscribe("$JS.API.CONSUMER.MSG.NEXT."+fabric.StreamInvoke+"."+fabric.ConsumerName("echo"), func(m *nats.Msg) {
		var req struct{ Batch int }
		if err := json.Unmarshal(m.Data, &req); err != nil {
			t.Errorf("pull request %q: %v", m.Data, err)
		}
		requests <- req.Batch
	})
	must(t, err)
	must(t, observer.Flush())
	defer func() { _ = sub.Unsubscribe() }()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := testwait.Receive(t, 0, "Run to return", done); err != nil {
			t.Error(err)
		}
	}()
	testwait.Receive(t, 0, "the agent to start", a.Ready())
	if got := testwait.Receive(t, 0, "the first request", requests); got != 4 {
		t.Fatalf("first request for %d, want 4", got)
	}
	inbox := a.tools["echo"].pull.Inbox()

	status := func(code, desc, pending string) *nats.Msg {
		m := nats.NewMsg(inbox)
		m.Header.Set("Status", code)
		m.Header.Set("Description", desc)
		if pending != "" {
			m.Header.Set("Nats-Pending-Messages", pending)
		}
		return m
	}
	leadership := status("409", "Leadership Change", "")
	for _, tc := range []struct {
		name string
		msg  *nats.Msg
		want []int // the requests that follow, before the leadership change's
	}{
		{"idle heartbeat", status("100", "Idle Heartbeat", ""), nil},
		{"expired owing the window", status("408", "Request Timeout", "4"), []int{4}},
		{"expired owing less than half", status("408", "Request Timeout", "1"), nil},
		{"batch completed owing half", status("409", "Batch Completed", "2"), []int{2}},
		{"leadership change", status("409", "Leadership Change", ""), []int{4}},
		{"consumer deleted", status("409", "Consumer Deleted", ""), nil},
		{"no responders", status("503", "", ""), nil},
		{"bad request", status("400", "Bad Request", ""), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			must(t, observer.PublishMsg(tc.msg))
			must(t, observer.PublishMsg(leadership))
			must(t, observer.Flush())
			var got []int
			for {
				n := testwait.Receive(t, 0, "a pull request", requests)
				if len(got) == len(tc.want) {
					if n != 4 {
						t.Fatalf("requests %v then %d, want %v then the leadership change's 4", got, n, tc.want)
					}
					break
				}
				got = append(got, n)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("requests %v, want %v", got, tc.want)
				}
			}
		})
	}
	if n := a.Stats().PullRestarts; n != 0 {
		t.Errorf("%d restarts for silence, want 0", n)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
