package mcpserver_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/splashfabric/splashfabric/mcpserver"
	"github.com/splashfabric/splashfabric/toolspec"
)

// upperRunner stands in for a host: it answers every session with the
// value a demo.upper call would have.
type upperRunner struct{}

func (upperRunner) Run(_ context.Context, sub mcpserver.Submission, chunk func(mcpserver.Chunk)) (mcpserver.Outcome, error) {
	chunk(mcpserver.Chunk{Tool: "demo.upper", Index: 1, Text: "working"})
	return mcpserver.Outcome{Session: "s-1", Value: "HELLO"}, nil
}

// Example serves one catalog tool over MCP and calls it with the SDK's
// client; in a host, the runner is a LoopRunner over the host's loop, and
// in `splash mcp` an APIRunner over the host's API.
func Example() {
	set, _ := toolspec.NewSet(mustCompile(toolspec.Spec{Name: "demo.upper", Description: "answers its input upper-cased"}))
	s, err := mcpserver.New(mcpserver.Config{Catalog: set, Runner: upperRunner{}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	ss, _ := s.MCP().Connect(ctx, serverEnd, nil)
	defer ss.Wait()
	progressed := make(chan string, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "example"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progressed <- req.Params.Message
		},
	})
	cs, err := client.Connect(ctx, clientEnd, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()

	tools, _ := cs.ListTools(ctx, nil)
	fmt.Println(tools.Tools[0].Name, "-", tools.Tools[0].Description)
	params := &mcp.CallToolParams{Name: "demo.upper", Arguments: map[string]any{"input": "hello"}}
	params.SetProgressToken("p")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		panic(err)
	}
	fmt.Println("progress:", <-progressed)
	fmt.Println("result:", res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// demo.upper - answers its input upper-cased
	// progress: working
	// result: HELLO
}

func mustCompile(s toolspec.Spec) *toolspec.Tool {
	t, err := s.Compile()
	if err != nil {
		panic(err)
	}
	return t
}
