package workflow_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/workflow"
)

// A resumed session keeps the capabilities and tools it was submitted
// with, through the ledger's JSON: a replay refuses what the first run
// refused, and an empty grant stays empty rather than turning into the
// host's defaults.
func TestReplayKeepsTheSessionsGrants(t *testing.T) {
	const script = `
		let denied = "";
		try { await tool.start("text.slow", "x") } catch (e) { denied = e.message }
		return denied + " | " + await tool.start("text.remote", "a")`
	tests := []struct {
		name      string
		sub       workflow.Submitted
		wantJSON  []string
		wantTools []string
		wantFail  error // the replayed script's failure, if it fails
	}{
		{
			name:      "tools",
			sub:       workflow.Submitted{ToolGrants: []string{"text.remote"}},
			wantJSON:  []string{`"tool_grants":["text.remote"]`},
			wantTools: []string{"text.remote"},
		},
		{
			name:      "no tools",
			sub:       workflow.Submitted{ToolGrants: []string{}},
			wantJSON:  []string{`"tool_grants":[]`},
			wantTools: []string{},
			wantFail:  host.ErrToolNotGranted,
		},
		{
			name:     "no capabilities",
			sub:      workflow.Submitted{Grants: []string{}},
			wantJSON: []string{`"grants":[]`},
			wantFail: host.ErrCapabilityDenied,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := tt.sub
			sub.Source = script
			b, err := json.Marshal([]workflow.Entry{{At: t0, Submitted: &sub}})
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.wantJSON {
				if !strings.Contains(string(b), want) {
					t.Fatalf("ledger %s lacks %s", b, want)
				}
			}
			var entries []workflow.Entry
			if err := json.Unmarshal(b, &entries); err != nil {
				t.Fatal(err)
			}
			if got := entries[0].Submitted.ToolGrants; !slices.Equal(got, tt.wantTools) || (got == nil) != (tt.wantTools == nil) {
				t.Fatalf("read back tools = %#v, want %#v", got, tt.wantTools)
			}
			res, err := workflow.Restore(entries, workflow.ReplayConfig{Register: register(t)})
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantFail != nil {
				if r := res.Result(); r == nil || !r.Failed() || !errors.Is(r.Err, tt.wantFail) {
					t.Fatalf("replayed result = %+v, want a failure with %v", r, tt.wantFail)
				}
				return
			}
			if ops := res.Claim(); len(ops) != 1 || ops[0].Inv.CallIndex != 1 {
				t.Fatalf("claimed %d operations after the replay: the granted call was not made, or a refused start consumed budget", len(ops))
			}
		})
	}
	// A ledger written before tool grants existed holds none, and replays
	// with every tool, as it ran.
	var old []workflow.Entry
	if err := json.Unmarshal([]byte(`[{"at":"2030-01-02T03:04:05Z","submitted":{"source":"return 1","nonce":"00000000000000000000000000000000","seed":"`+strings.Repeat("00", 32)+`"}}]`), &old); err != nil {
		t.Fatal(err)
	}
	if old[0].Submitted.ToolGrants != nil || old[0].Submitted.Grants != nil {
		t.Fatalf("an old ledger reads as %+v", old[0].Submitted)
	}
}
