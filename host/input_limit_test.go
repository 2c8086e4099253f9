package host

import (
	"errors"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/internal/tooltest"

	"github.com/splashfabric/splashfabric/toolspec"
)

func TestToolInputOverTheLimitIsRefusedBeforeBudget(t *testing.T) {
	const limit = 1000
	tests := []struct {
		name    string
		json    bool
		input   string
		wantErr error
	}{
		{"text at the limit", false, strings.Repeat("e", limit-2), nil},
		{"text one over", false, strings.Repeat("e", limit-1), ErrInputTooLarge},
		{"quotes count twice", false, strings.Repeat(`"`, (limit-2)/2+1), ErrInputTooLarge},
		{"control bytes count six", false, strings.Repeat("\x01", (limit-2)/6+1), ErrInputTooLarge},
		{"invalid UTF-8 counts six", false, strings.Repeat("\xff", (limit-2)/6+1), ErrInputTooLarge},
		{"multibyte runes count their bytes", false, strings.Repeat("é", (limit-2)/2), nil},
		{"JSON at the limit", true, `"` + strings.Repeat("e", limit-2) + `"`, nil},
		{"JSON one over", true, `"` + strings.Repeat("e", limit-1) + `"`, ErrInputTooLarge},
		{"JSON escapes HTML at its worst", true, `"` + strings.Repeat("<", limit/6+1) + `"`, ErrInputTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newTestRuntime(t, Config{MaxInputBytes: limit, ToolCallBudget: 1})
			must(t, r.RegisterTool(tooltest.Text(t, "text.remote")))
			must(t, r.RegisterTool(tooltest.Tool(t, toolspec.Spec{Name: "json.remote", Format: toolspec.FormatJSON})))
			var err error
			if tt.json {
				_, err = r.StartJSON("json.remote", []byte(tt.input))
			} else {
				_, err = r.Start("text.remote", tt.input)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("start: %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil {
				return
			}
			if r.CallsUsed() != 0 || r.Pending() != 0 {
				t.Fatalf("a refused start used %d calls and holds %d pending", r.CallsUsed(), r.Pending())
			}
			if ev := r.DrainAudit(); len(ev) != 1 || ev[0].Outcome != AuditDenied {
				t.Fatalf("audit %+v, want one denial", ev)
			}
			// The budget of one call is still whole.
			if _, err := r.Start("text.remote", "x"); err != nil {
				t.Fatalf("a start after the refusal: %v", err)
			}
		})
	}
}

func TestToolInputLimitSparesLocalTools(t *testing.T) {
	r, _ := newTestRuntime(t, Config{MaxInputBytes: 10})
	must(t, r.RegisterLocalTool(NewToolPolicy("local.len"), func(in string) (string, error) { return in, nil }))
	if _, err := r.Start("local.len", strings.Repeat("x", 100)); err != nil {
		t.Fatalf("a local tool's input is not carried by a transport: %v", err)
	}
}

func TestScriptSeesInputTooLarge(t *testing.T) {
	r := scriptRuntime(t, Config{MaxInputBytes: 1 << 10})
	res := evalScript(t, r, `
		let refused = "";
		try { await tool.start("text.remote", "e".repeat(2000)) } catch (e) { refused = e.message }
		refused`)
	if !res.Completed() || !strings.Contains(res.Value, "tool input too large") {
		t.Fatalf("result %+v, want the refusal's message", res)
	}
	res = evalScript(t, r, `await tool.start("text.remote", "e".repeat(2000))`)
	if se := wantScriptFailed(t, res, "too large"); !errors.Is(se, ErrInputTooLarge) {
		t.Fatalf("uncaught refusal %v does not unwrap to ErrInputTooLarge", se)
	}
}
