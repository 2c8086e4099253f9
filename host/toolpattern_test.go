package host

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/toolspec"
)

func TestToolPatternMatch(t *testing.T) {
	tests := []struct {
		pattern, tool string
		want          bool
	}{
		{"demo.upper", "demo.upper", true},
		{"demo.upper", "demo.uppers", false},
		{"demo.upper", "demo", false},
		{"demo.upper", "demo.upper.x", false},
		{"demo.*", "demo.upper", true},
		{"demo.*", "demo.json.sum", false},
		{"demo.*", "demo", false},
		{"demo.*", "text.upper", false},
		{"demo.>", "demo.upper", true},
		{"demo.>", "demo.json.sum", true},
		{"demo.>", "demo", false},
		{"*.upper", "demo.upper", true},
		{"*.upper", "demo.lower", false},
		{"*", "echo", true},
		{"*", "demo.echo", false},
		{">", "echo", true},
		{">", "demo.json.sum", true},
		{">", "", false},
		{"demo.*.sum", "demo.json.sum", true},
		{"demo.*.sum", "demo.sum", false},
		// Names no tool can have never match a segment.
		{"demo.*", "demo.", false},
		{"demo.>", "demo.", false},
		{"*.echo", ".echo", false},
	}
	for _, tt := range tests {
		p, err := ParseToolPattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Match(tt.tool); got != tt.want {
			t.Errorf("%q.Match(%q) = %v, want %v", tt.pattern, tt.tool, got, tt.want)
		}
	}
}

func TestParseToolPatternRefusesMalformed(t *testing.T) {
	for _, s := range []string{
		"", "demo.", ".demo", "demo..upper", "demo.>.x", ">.demo", "demo.up per",
		"demo.**", "demo.up*", "demo.>>", "demo/upper", strings.Repeat("a", 129),
	} {
		if _, err := ParseToolPattern(s); !errors.Is(err, ErrInvalidToolPattern) {
			t.Errorf("ParseToolPattern(%q) = %v, want ErrInvalidToolPattern", s, err)
		}
	}
	if _, err := ParseToolPatterns([]string{"demo.*", "bad."}); !errors.Is(err, ErrInvalidToolPattern) || !strings.Contains(err.Error(), "pattern 1") {
		t.Errorf("ParseToolPatterns = %v, want ErrInvalidToolPattern naming pattern 1", err)
	}
}

func TestToolPatternCovers(t *testing.T) {
	tests := []struct {
		outer, inner string
		want         bool
	}{
		{"demo.upper", "demo.upper", true},
		{"demo.upper", "demo.lower", false},
		{"demo.*", "demo.upper", true},
		{"demo.*", "demo.*", true},
		{"demo.*", "demo.>", false},
		{"demo.*", "demo.json.sum", false},
		{"demo.>", "demo.*", true},
		{"demo.>", "demo.json.*", true},
		{"demo.>", "demo.>", true},
		{"demo.>", "demo", false},
		{"demo.upper", "demo.*", false},
		{">", ">", true},
		{">", "demo.*", true},
		{"*", ">", false},
		{"*.upper", "demo.upper", true},
		{"*.upper", "*.*", false},
		{"demo.*.sum", "demo.json.sum", true},
		{"demo.*.sum", "demo.json.>", false},
	}
	for _, tt := range tests {
		outer, err := ParseToolPattern(tt.outer)
		must(t, err)
		inner, err := ParseToolPattern(tt.inner)
		must(t, err)
		if got := outer.Covers(inner); got != tt.want {
			t.Errorf("%q.Covers(%q) = %v, want %v", tt.outer, tt.inner, got, tt.want)
		}
	}
	// Covers agrees with Match: whatever inner matches, outer matches.
	names := []string{"demo", "demo.upper", "demo.lower", "demo.json.sum", "text.upper", "a.b.c.d"}
	for _, tt := range tests {
		if !tt.want {
			continue
		}
		outer, _ := ParseToolPattern(tt.outer)
		inner, _ := ParseToolPattern(tt.inner)
		for _, n := range names {
			if inner.Match(n) && !outer.Match(n) {
				t.Errorf("%q covers %q, yet matches %q only through the inner", tt.outer, tt.inner, n)
			}
		}
	}
}

func TestToolPatternsNilIsEveryToolEmptyIsNone(t *testing.T) {
	all, err := ParseToolPatterns(nil)
	must(t, err)
	none, err := ParseToolPatterns([]string{})
	must(t, err)
	if !all.Match("any.tool") || !all.All() {
		t.Error("nil patterns do not match every tool")
	}
	if none.Match("any.tool") || none.All() {
		t.Error("an empty list of patterns matches a tool")
	}
	p, _ := ParseToolPattern("demo.*")
	if !all.Covers(p) || none.Covers(p) {
		t.Error("Covers disagrees with every tool and none")
	}
}

// A tool outside the session's patterns is refused, whether it is
// started, called, external, local or not registered at all, before it
// consumes a tool call or a pending slot; the next granted call still
// has the whole budget.
func TestUngrantedToolIsRefusedBeforeBudget(t *testing.T) {
	r, _ := newTestRuntime(t, Config{ToolCallBudget: 1, MaxPending: 1, Tools: []string{"text.*"}})
	register(t, r, toolspec.Spec{Name: "text.remote"})
	register(t, r, toolspec.Spec{Name: "secret.remote"})
	register(t, r, toolspec.Spec{Name: "secret.json", Format: toolspec.FormatJSON})
	must(t, r.RegisterLocalTool(NewToolPolicy("secret.local"), func(in string) (string, error) { return in, nil }))
	refusals := []struct {
		name string
		call func() error
	}{
		{"start external", func() error { _, err := r.Start("secret.remote", "x"); return err }},
		{"start json", func() error { _, err := r.StartJSON("secret.json", json.RawMessage(`{}`)); return err }},
		{"start local", func() error { _, err := r.Start("secret.local", "x"); return err }},
		{"call local", func() error { _, err := r.Call("secret.local", "x"); return err }},
		{"call external", func() error { _, err := r.Call("secret.remote", "x"); return err }},
		{"unknown tool", func() error { _, err := r.Start("nowhere.tool", "x"); return err }},
		{"nested name", func() error { _, err := r.Start("text.remote.deeper", "x"); return err }},
	}
	for _, c := range refusals {
		err := c.call()
		if !errors.Is(err, ErrToolNotGranted) || !errors.Is(err, ErrCapabilityDenied) {
			t.Fatalf("%s: err = %v, want ErrToolNotGranted and ErrCapabilityDenied", c.name, err)
		}
	}
	if r.CallsUsed() != 0 || r.Pending() != 0 || r.LocalPending() {
		t.Fatalf("refusals consumed: calls %d, pending %d", r.CallsUsed(), r.Pending())
	}
	if _, ok := r.ClaimNextExternalTool(); ok {
		t.Fatal("a refused start was queued")
	}
	start(t, r, "text.remote", "x")
	want := make([]string, len(refusals))
	for i := range want {
		want[i] = "denied"
	}
	wantOutcomes(t, r, 0, append(want, "started")...)
	if got := r.ToolGrants(); len(got) != 1 || got[0] != "text.*" {
		t.Fatalf("ToolGrants = %q", got)
	}
}

func TestToolGrantsOfARuntime(t *testing.T) {
	tests := []struct {
		name    string
		tools   []string
		tool    string
		wantErr error
	}{
		{"nil grants every tool", nil, "secret.remote", nil},
		{"empty grants none", []string{}, "text.remote", ErrToolNotGranted},
		{"exact name", []string{"secret.remote"}, "secret.remote", nil},
		{"one of several", []string{"text.*", "secret.remote"}, "secret.remote", nil},
		{"everything", []string{">"}, "secret.remote", nil},
		// A malformed list fails closed: it grants nothing at all.
		{"malformed grants none", []string{">", "text."}, "text.remote", ErrToolNotGranted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newTestRuntime(t, Config{Tools: tt.tools})
			register(t, r, toolspec.Spec{Name: "text.remote"})
			register(t, r, toolspec.Spec{Name: "secret.remote"})
			_, err := r.Start(tt.tool, "x")
			if tt.wantErr == nil {
				must(t, err)
				return
			}
			wantErr(t, err, tt.wantErr)
		})
	}
}

// In a script the refusal is an Error the script may catch, like an
// ungranted capability's; the budget it would have used is still there.
func TestScriptCallOutsideItsToolsIsRefusedBeforeBudget(t *testing.T) {
	r := scriptRuntime(t, Config{ToolCallBudget: 1, Tools: []string{"text.remote"}})
	register(t, r, toolspec.Spec{Name: "secret.remote"})
	res := evalScript(t, r, `
		let denied = "";
		try { await tool.start("secret.remote", "x") } catch (e) { denied = e.message }
		assert(denied.includes("tool not granted"), "not denied: " + denied);
		await tool.start("text.remote", "release")`)
	wantScriptSuspended(t, res)
	inv := claimForScript(t, r)
	if inv.Tool != "text.remote" {
		t.Fatalf("claimed %s", inv.Tool)
	}
	wantScriptCompleted(t, completeForScript(t, r, inv.ID, Ok("done")), "done")

	r = scriptRuntime(t, Config{Tools: []string{"text.remote"}})
	res = evalScript(t, r, `await tool.call("secret.local", "x")`)
	se := wantScriptFailed(t, res, "tool not granted")
	if !errors.Is(se, ErrToolNotGranted) {
		t.Fatalf("ScriptError %v does not unwrap to ErrToolNotGranted", se)
	}
}
