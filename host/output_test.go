package host

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/toolspec"
)

const sumSchema = `{"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"],"additionalProperties":false}`

func TestCompletionOutputChecks(t *testing.T) {
	tests := []struct {
		name       string
		json       bool
		limit      int
		output     string
		wantReason string // empty: succeeds
	}{
		{"text within limit", false, 4, "done", ""},
		{"text over limit", false, 3, "done", "output is 4 bytes, limit 3"},
		{"json over limit", true, 5, `{"sum":3}`, "output is 9 bytes, limit 5"},
		{"json envelope invalid", true, 0, `{"sum":`, "not one JSON value"},
		{"json two values", true, 0, `{} {}`, "not one JSON value"},
		{"json contract ok", true, 0, `{"sum":3}`, ""},
		{"json contract type", true, 0, `{"sum":"3"}`, "does not match the output schema"},
		{"json contract missing", true, 0, `{}`, "does not match the output schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newTestRuntime(t, Config{})
			spec := toolspec.Spec{Name: "tool.remote", MaxOutputBytes: tt.limit}
			var pr *Promise
			var err error
			if tt.json {
				spec.Format, spec.OutputSchema = toolspec.FormatJSON, json.RawMessage(sumSchema)
				register(t, r, spec)
				pr, err = r.StartJSON("tool.remote", json.RawMessage(`{"a":1}`))
			} else {
				register(t, r, spec)
				pr, err = r.Start("tool.remote", "x")
			}
			must(t, err)
			_, err = r.CompleteExternalTool(claim(t, r).ID, Ok(tt.output))
			must(t, err)
			s := settled(t, pr)
			if tt.wantReason == "" {
				if s.Err != nil || s.Output != tt.output {
					t.Fatalf("settlement %+v", s)
				}
				return
			}
			var te *ToolError
			if !errors.As(s.Err, &te) || te.Kind != ToolInvalidOutput || !strings.Contains(te.Reason, tt.wantReason) {
				t.Fatalf("settlement %+v, want reason %q", s, tt.wantReason)
			}
			wantErr(t, s.Err, ErrInvalidOutput)
			ev := r.Audit()
			if last := ev[len(ev)-1]; last.Outcome != AuditFailed || !strings.Contains(last.Detail, tt.wantReason) {
				t.Fatalf("audit %+v", last)
			}
		})
	}
}

func TestInputSchemaCheckedAtStart(t *testing.T) {
	r, _ := newTestRuntime(t, Config{ToolCallBudget: 1})
	register(t, r, toolspec.Spec{Name: "json.sum", Format: toolspec.FormatJSON, InputSchema: json.RawMessage(sumSchema)})
	_, err := r.StartJSON("json.sum", json.RawMessage(`{"sum":"x"}`))
	wantErr(t, err, ErrInvalidInput)
	_, err = r.StartJSON("json.sum", json.RawMessage(`{"sum":1}`))
	must(t, err)
}

// TestRegisterRejectsBadPolicy covers the runtime's own refusals. A
// definition out of toolspec's bounds (a negative attempt count, a zero
// stream bound, a broken schema) never reaches it: Spec.Compile refuses
// it first (toolspec's TestCompileRefusesBadDefinitions).
func TestRegisterRejectsBadPolicy(t *testing.T) {
	echo := func(s string) (string, error) { return s, nil }
	tests := []struct {
		name    string
		reg     func(r *Runtime) error
		wantErr error
	}{
		{"bad name", func(r *Runtime) error { return r.RegisterLocalTool(NewToolPolicy("bad name"), echo) }, ErrInvalidToolName},
		{"empty name", func(r *Runtime) error { return r.RegisterLocalTool(NewToolPolicy(""), echo) }, ErrInvalidToolName},
		{"duplicate", func(r *Runtime) error { return r.RegisterTool(tooltest.Text(t, "text.taken")) }, ErrDuplicateTool},
		{"duplicate local", func(r *Runtime) error { return r.RegisterLocalTool(NewToolPolicy("text.taken"), echo) }, ErrDuplicateTool},
		{"nil definition", func(r *Runtime) error { return r.RegisterTool(nil) }, ErrInvalidInput},
		{"negative attempts", func(r *Runtime) error { return r.RegisterLocalTool(NewToolPolicy("a").WithMaxAttempts(-1), echo) }, ErrInvalidInput},
		{"negative deadline", func(r *Runtime) error {
			return r.RegisterLocalTool(NewToolPolicy("a").WithDeadline(-time.Second), echo)
		}, ErrInvalidInput},
		{"negative output limit", func(r *Runtime) error { return r.RegisterLocalTool(NewToolPolicy("a").WithOutputLimit(-1), echo) }, ErrInvalidInput},
		{"local stream", func(r *Runtime) error {
			return r.RegisterLocalTool(NewToolPolicy("a").WithStream(NewToolStreamPolicy(1, 1, 1, 1)), echo)
		}, ErrInvalidInput},
		{"zero stream bound", func(r *Runtime) error {
			return r.RegisterLocalTool(NewToolPolicy("a").WithStream(NewToolStreamPolicy(1, 0, 1, 1)), echo)
		}, ErrInvalidInput},
		{"nil handler", func(r *Runtime) error { return r.RegisterLocalTool(NewToolPolicy("a"), nil) }, ErrInvalidInput},
		{"nil JSON handler", func(r *Runtime) error { return r.RegisterLocalJSONTool(NewToolPolicy("a"), nil) }, ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newTestRuntime(t, Config{})
			register(t, r, toolspec.Spec{Name: "text.taken"})
			before := snapshot(r)
			wantErr(t, tt.reg(r), tt.wantErr)
			if snapshot(r) != before {
				t.Fatal("refused registration changed state")
			}
		})
	}
}
