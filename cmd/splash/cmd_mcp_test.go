package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

// mcpProgress collects the messages of progress notifications.
type mcpProgress struct {
	mu  sync.Mutex
	got []string
}

func (p *mcpProgress) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, req.Params.Message)
}

func (p *mcpProgress) messages() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got)
}

// bearerTransport sends a token with every request.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPAgainstDev is the docs' walk-through: `splash dev`, then an MCP
// client that starts `splash mcp` as its stdio server and uses the demo
// tools, and one that speaks to the host's /mcp over HTTP.
func TestMCPAgainstDev(t *testing.T) {
	const token = "mcp-test-token"
	dev := startSplash(t, "dev", "--log-format", "json", "--data-dir", t.TempDir(),
		"--api-addr", "127.0.0.1:0", "--nats-port", "-1", "--api-token", token, "--workers", "1")
	rec := dev.waitRecord(t, "dev ready")
	apiURL, _ := rec["api_url"].(string)

	clients := map[string]func(t *testing.T, opts *mcp.ClientOptions) (*mcp.ClientSession, error){
		"stdio": func(t *testing.T, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
			cmd := exec.Command(splashBinary(t), "mcp", "--log-format", "json")
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "SPLASH_") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, "SPLASH_API_URL="+apiURL, "SPLASH_API_TOKEN="+token)
			var stderr syncBuffer
			cmd.Stderr = &stderr
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, opts).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() {
				// Closing stdin ends `splash mcp`; Close waits for it.
				if err := cs.Close(); err != nil {
					t.Errorf("splash mcp did not exit cleanly: %v\n%s", err, stderr.String())
				}
			})
			return cs, nil
		},
		"http": func(t *testing.T, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
			return connectMCPHTTP(t, apiURL, token, opts)
		},
	}
	for name, connect := range clients {
		t.Run(name, func(t *testing.T) {
			var progress mcpProgress
			cs, err := connect(t, &mcp.ClientOptions{ProgressNotificationHandler: progress.handle})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			list, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			for _, want := range []string{demotools.Upper, demotools.Stream, demotools.Sleep, demotools.JSONSum} {
				if !slices.Contains(names, want) {
					t.Fatalf("tools %v lack %s", names, want)
				}
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: demotools.Upper, Arguments: map[string]any{"input": "hello"}})
			if err != nil || res.IsError || mcpText(res) != "HELLO" {
				t.Fatalf("demo.upper = %+v, %v", res, err)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: demotools.JSONSum, Arguments: map[string]any{"numbers": []int{1, 2, 3}}})
			if err != nil || res.IsError || mcpText(res) != `{"sum":6}` {
				t.Fatalf("demo.json.sum = %+v, %v", res, err)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: demotools.Flaky, Arguments: map[string]any{"input": "5"}})
			if err != nil || !res.IsError || !strings.Contains(mcpText(res), "demo.flaky failed") {
				t.Fatalf("demo.flaky past its attempts = %+v, %v", res, err)
			}

			params := &mcp.CallToolParams{Name: demotools.Stream, Arguments: map[string]any{"input": "3"}}
			params.SetProgressToken("stream")
			if res, err = cs.CallTool(ctx, params); err != nil || res.IsError {
				t.Fatalf("demo.stream = %+v, %v", res, err)
			}
			testwait.Until(t, 0, "three progress notifications", func() bool { return len(progress.messages()) == 3 })
			if got := strings.Join(progress.messages(), "|"); strings.Contains(got, demotools.Secret) || !strings.Contains(got, demotools.Redacted) {
				t.Fatalf("progress %q: the secret must arrive redacted", got)
			}

			// Cancelling the request cancels the operation: the call ends
			// early, and the host lists no live operation of demo.sleep.
			cctx, cancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: demotools.Sleep, Arguments: map[string]any{"input": "25s"}})
				errc <- err
			}()
			testwait.Until(t, 0, "demo.sleep running", func() bool { return liveOps(t, apiURL, token) > 0 })
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled call: %v", err)
			}
			testwait.Until(t, 10*time.Second, "demo.sleep cancelled", func() bool { return liveOps(t, apiURL, token) == 0 })
		})
	}

	t.Run("wrong token", func(t *testing.T) {
		if _, err := connectMCPHTTP(t, apiURL, "not-the-token", nil); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Fatalf("err = %v", err)
		}
	})
	if err := dev.stop(t); err != nil {
		t.Fatalf("dev exit: %v", err)
	}
}

func connectMCPHTTP(t *testing.T, apiURL, token string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: apiURL + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport(token)}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, opts).Connect(context.Background(), tr, nil)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, nil
}

// liveOps counts the host's live operations.
func liveOps(t *testing.T, apiURL, token string) int {
	t.Helper()
	c, err := apiclient.New(apiURL, token)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := c.Operations(context.Background())
	if err != nil {
		return -1
	}
	return len(ops)
}

func mcpText(r *mcp.CallToolResult) string {
	var s string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s += tc.Text
		}
	}
	return s
}
