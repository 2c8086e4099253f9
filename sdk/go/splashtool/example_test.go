package splashtool_test

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/sdk/go/splashtool"
	"github.com/splashfabric/splashfabric/sdk/go/splashtool/splashtooltest"
)

// A tool that streams one chunk per word and answers in upper case, driven
// over in-memory pipes by splashtooltest.Host playing the worker. A real
// tool calls splashtool.Serve(handler) from main instead.
func ExampleServeConn() {
	handler := func(ctx context.Context, call *splashtool.Call) (splashtool.Output, error) {
		for _, w := range strings.Fields(call.Input.Text) {
			if err := call.Stream(w); err != nil {
				return splashtool.Output{}, err
			}
		}
		return splashtool.Text(strings.ToUpper(call.Input.Text)), nil
	}
	key, _ := protocol.ParseSessionKey(strings.Repeat("07", protocol.AuthTagBytes))
	toolIn, hostOut := io.Pipe()
	hostIn, toolOut := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- splashtool.ServeConn(context.Background(), toolIn, toolOut, "proc-1", key, handler)
		toolOut.Close()
	}()

	host, _ := splashtooltest.NewHost("proc-1", key, hostOut, hostIn)
	_ = host.Send(protocol.InvokeMessage(protocol.Invoke{
		RequestID: "c1", Tool: "text.upper", Input: protocol.TextPayload("hello tool"),
		Attempt: 1, AttemptLimit: 3, IdempotencyKey: "op-1",
	}))
	for {
		m, err := host.Next(context.Background())
		if err != nil {
			break
		}
		switch m.Kind {
		case protocol.KindChunk:
			fmt.Println("chunk", m.Chunk.Sequence, m.Chunk.Text)
		case protocol.KindResult:
			fmt.Println("result", m.Result.Status, m.Result.Payload.Text)
			_ = host.CloseInput() // the tool sees EOF and returns
		}
	}
	fmt.Println("served:", <-served)
	// Output:
	// chunk 1 hello
	// chunk 2 tool
	// result succeeded HELLO TOOL
	// served: <nil>
}
