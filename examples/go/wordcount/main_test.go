package main

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/sdk/go/splashtool"
	"github.com/splashfabric/splashfabric/sdk/go/splashtool/splashtooltest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCount(t *testing.T) {
	key := protocol.SessionKeyFromArray([protocol.AuthTagBytes]byte{42})
	toolIn, hostOut := io.Pipe()
	hostIn, toolOut := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- splashtool.ServeConn(context.Background(), toolIn, toolOut, "wc-1", key, count,
			splashtool.Cancellable(true))
		toolIn.Close()
		toolOut.Close()
	}()
	host, err := splashtooltest.NewHost("wc-1", key, hostOut, hostIn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	inv := protocol.Invoke{RequestID: "c1", Tool: "text.wordcount", Input: protocol.TextPayload("a b A\nc"),
		Attempt: 1, AttemptLimit: 1, IdempotencyKey: "op-1"}
	if err := host.Send(protocol.InvokeMessage(inv)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		m, err := host.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Kind == protocol.KindChunk {
			got = append(got, m.Chunk.Text)
			continue
		}
		if m.Kind != protocol.KindResult || m.Result.Status != protocol.ResultSucceeded {
			t.Fatalf("got %s %+v", m.Kind, m.Result)
		}
		var out struct{ Words, Distinct int }
		if err := json.Unmarshal(m.Result.Payload.JSON, &out); err != nil || out.Words != 4 || out.Distinct != 3 {
			t.Fatalf("payload %s: %v", m.Result.Payload.JSON, err)
		}
		break
	}
	if len(got) != 2 || got[0] != "line 1: 3 words" || got[1] != "line 2: 1 words" {
		t.Fatalf("chunks %q", got)
	}

	inv.RequestID, inv.Input = "c2", protocol.JSONPayload(json.RawMessage(`{}`))
	if err := host.Send(protocol.InvokeMessage(inv)); err != nil {
		t.Fatal(err)
	}
	if m, err := host.Next(ctx); err != nil || m.Result == nil || m.Result.Status != protocol.ResultFailed {
		t.Fatalf("JSON input: %+v, %v", m, err)
	}

	_ = host.CloseInput()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	<-host.Done()
}
