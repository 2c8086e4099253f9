package workeragent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// An agent of a pool serves that pool's tools only: a definition naming
// another pool, or none, is refused at registration, and an illegal pool
// name at construction.
func TestAgentServesOnePool(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("w", e.srv.Connect())
	cfg.Pool = "demo"
	a, err := workeragent.New(e.nc, cfg)
	must(t, err)
	echo := workeragent.HandlerFunc(func(_ context.Context, c *workeragent.Call) (workeragent.Output, error) {
		return workeragent.Result(c.Input.Text), nil
	})
	other := tooltest.Tool(t, toolspec.Spec{Name: "demo.upper", Pool: "text"})
	if err := a.HandleTool(other, echo); !errors.Is(err, workeragent.ErrInvalidTool) {
		t.Fatalf("a tool of another pool: %v, want ErrInvalidTool", err)
	}
	// A definition that names no pool is a pool of its own.
	if err := a.HandleTool(tooltest.Text(t, "demo.plain"), echo); !errors.Is(err, workeragent.ErrInvalidTool) {
		t.Fatalf("a tool of its own pool: %v, want ErrInvalidTool", err)
	}
	must(t, a.HandleTool(tooltest.Tool(t, toolspec.Spec{Name: "demo.echo", Pool: "demo"}), echo))

	cfg.Pool = "not a name"
	if _, err := workeragent.New(e.nc, cfg); !errors.Is(err, workeragent.ErrInvalidConfig) {
		t.Fatalf("an illegal pool name: %v, want ErrInvalidConfig", err)
	}
}
