package toolproc_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as an MCP server too: run with testMCPEnv set,
// TestMain hands over to runTestMCPServer, an MCP server built with the
// SDK whose tools misbehave on request:
//
//	echo {text}        answers text
//	sum {numbers}      answers {"sum": n} as structured content
//	steps {n}          sends n progress notifications, then answers "done"
//	sleep {ms}         reports "sleeping", waits ms; cancelled, answers "saw cancel"
//	hang               reports "hanging", never answers, cancelled or not
//	crash              exits 3
//	fail               answers an error result, "kaput"
//	grow               adds the tool "late" (tools/list_changed)
const testMCPEnv = "TOOLPROC_TEST_MCP"

func runTestMCPServer() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "toolproc-test", Version: "1"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return text(in.Text), nil, nil
	})
	type sumOut struct {
		Sum float64 `json:"sum"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "sum"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Numbers []float64 `json:"numbers"`
	}) (*mcp.CallToolResult, sumOut, error) {
		var out sumOut
		for _, n := range in.Numbers {
			out.Sum += n
		}
		return nil, out, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "steps"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		N int `json:"n"`
	}) (*mcp.CallToolResult, any, error) {
		for i := 1; i <= in.N; i++ {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: float64(in.N),
				Message: fmt.Sprintf("step %d/%d", i, in.N),
			})
		}
		return text("done"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		MS int `json:"ms"`
	}) (*mcp.CallToolResult, any, error) {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: req.Params.GetProgressToken(), Progress: 1, Message: "sleeping"})
		select {
		case <-time.After(time.Duration(in.MS) * time.Millisecond):
			return text("slept"), nil, nil
		case <-ctx.Done():
			return text("saw cancel"), nil, nil
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hang"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: req.Params.GetProgressToken(), Progress: 1, Message: "hanging"})
		select {}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "kaput"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "grow"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(s, &mcp.Tool{Name: "late"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text("late tool"), nil, nil
		})
		return text("grown"), nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcp server:", err)
	}
	return 0
}
