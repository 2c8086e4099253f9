package demotools_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workeragent"
)

func ExampleNames() {
	for _, n := range demotools.Names() {
		fmt.Println(n)
	}
	// Output:
	// demo.echo
	// demo.upper
	// demo.sleep
	// demo.flaky
	// demo.ratelimited
	// demo.stream
	// demo.json.sum
}

func ExampleHandler() {
	h, err := demotools.Handler(demotools.Flaky)
	if err != nil {
		panic(err)
	}
	for attempt := uint32(1); attempt <= 3; attempt++ {
		out, err := h.HandleCall(context.Background(), &workeragent.Call{
			Tool: demotools.Flaky, Input: protocol.TextPayload("2"),
			Attempt: attempt, AttemptLimit: 3, Stream: &workeragent.ChunkWriter{},
		})
		fmt.Printf("attempt %d: %q %v\n", attempt, out.Payload().Text, err)
	}
	// Output:
	// attempt 1: "" retryable: demo failure on attempt 1 of the first 2
	// attempt 2: "" retryable: demo failure on attempt 2 of the first 2
	// attempt 3: "ok after 2" <nil>
}

func ExampleCatalog() {
	rt := host.NewRuntime(host.Config{})
	if err := demotools.Catalog(rt); err != nil {
		panic(err)
	}
	p, err := rt.StartJSON(demotools.JSONSum, []byte(`{"numbers":[1,2,3]}`))
	if err != nil {
		panic(err)
	}
	// A worker would run this invocation; here the answer is given inline.
	inv, _ := rt.ClaimNextExternalTool()
	fmt.Println(inv.Tool, inv.Input)
	if _, err := rt.CompleteExternalTool(inv.ID, host.Ok(`{"sum":6}`)); err != nil {
		panic(err)
	}
	s, _ := p.Settled()
	fmt.Println(s.Output)

	// The input schema refuses what the tool cannot read.
	_, err = rt.StartJSON(demotools.JSONSum, []byte(`{"numbers":"1,2,3"}`))
	fmt.Println(errors.Is(err, host.ErrInvalidInput))
	// Output:
	// demo.json.sum {"numbers":[1,2,3]}
	// {"sum":6}
	// true
}
