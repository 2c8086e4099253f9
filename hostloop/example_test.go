package hostloop_test

import (
	"context"
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/toolspec"
)

// A loop over the in-memory transport: the example plays the worker pool.
func Example() {
	tr := hostloop.NewMemTransport(16)
	// The definition every session registers, as the workers hold it.
	upper, err := toolspec.Spec{Name: "text.upper"}.Compile()
	if err != nil {
		panic(err)
	}
	l, err := hostloop.StartLoop(hostloop.LoopConfig{
		Transport: tr,
		HostID:    "h1",
		Catalog:   func(rt *host.Runtime) error { return rt.RegisterTool(upper) },
	})
	if err != nil {
		panic(err)
	}
	defer l.Stop()
	ctx := context.Background()
	s, err := l.Submit(ctx, hostloop.Submission{Source: `return await tool.start("text.upper", "hello")`})
	if err != nil {
		panic(err)
	}
	inv, _ := tr.Next(time.Minute) // what a worker would pull
	fmt.Println(inv.Tool, inv.Input.Text, inv.Attempt)
	tr.Succeed(inv, "HELLO")
	for {
		st, _, err := l.Status(ctx, s.ID)
		if err != nil {
			panic(err)
		}
		if st.State != hostloop.SessionSuspended {
			fmt.Println(st.State, st.Value)
			return
		}
		time.Sleep(time.Millisecond)
	}
	// Output:
	// text.upper hello 1
	// completed HELLO
}

// JSONPrefix cuts a text to what its JSON encoding can hold: escapes
// count at their encoded size, and runes are never split.
func ExampleJSONPrefix() {
	fmt.Printf("%q\n", hostloop.JSONPrefix(`a"b<c`, 4))
	fmt.Printf("%q\n", hostloop.JSONPrefix("héllo", 2))
	// Output:
	// "a\"b"
	// "h"
}
