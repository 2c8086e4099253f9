package fabric_test

import (
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/protocol"
)

func TestInvokeSubject(t *testing.T) {
	tests := []struct {
		tool    string
		want    string
		wantErr error
	}{
		{"echo", "splash.invoke.echo", nil},
		{"text.remote", "splash.invoke.text.remote", nil},
		{"a-b_c.D9", "splash.invoke.a-b_c.D9", nil},
		{"", "", protocol.ErrInvalidToolName},
		{"a..b", "", protocol.ErrInvalidToolName},
		{".a", "", protocol.ErrInvalidToolName},
		{"a.", "", protocol.ErrInvalidToolName},
		{"a.*", "", protocol.ErrInvalidToolName},
		{"a.>", "", protocol.ErrInvalidToolName},
		{"a b", "", protocol.ErrInvalidToolName},
		{"tab\t", "", protocol.ErrInvalidToolName},
		{"é", "", protocol.ErrInvalidToolName},
		{strings.Repeat("x", 129), "", protocol.ErrInvalidToolName},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			got, err := fabric.InvokeSubject(tt.tool)
			fabrictest.WantErrIs(t, err, tt.wantErr)
			if got != tt.want {
				t.Fatalf("InvokeSubject(%q) = %q, want %q", tt.tool, got, tt.want)
			}
		})
	}
}

func TestConsumerNameIsInjectiveAndLegal(t *testing.T) {
	tools := []string{"a.b", "a_b", "a.b_", "a_.b", "a._b", "ab", "a-b", "text.remote", strings.Repeat("_", 128)}
	seen := map[string]string{}
	for _, tool := range tools {
		name := fabric.ConsumerName(tool)
		if other, ok := seen[name]; ok {
			t.Fatalf("ConsumerName(%q) = ConsumerName(%q) = %q", tool, other, name)
		}
		seen[name] = tool
		if strings.ContainsAny(name, ".*> \t") || len(name) > 255 {
			t.Fatalf("ConsumerName(%q) = %q is not a legal durable name", tool, name)
		}
	}
	if got := fabric.ConsumerName("text.remote"); got != "pool_text_remote" {
		t.Fatalf("ConsumerName(text.remote) = %q", got)
	}
}

func TestValidateHostID(t *testing.T) {
	tests := []struct {
		id      string
		wantErr error
	}{
		{"host-1", nil},
		{"H_2", nil},
		{strings.Repeat("h", fabric.MaxHostIDBytes), nil},
		{"", fabric.ErrInvalidHostID},
		{"a.b", fabric.ErrInvalidHostID},
		{"a*", fabric.ErrInvalidHostID},
		{">", fabric.ErrInvalidHostID},
		{"a b", fabric.ErrInvalidHostID},
		{strings.Repeat("h", fabric.MaxHostIDBytes+1), fabric.ErrInvalidHostID},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			fabrictest.WantErrIs(t, fabric.ValidateHostID(tt.id), tt.wantErr)
		})
	}
}

func TestSequenceScheme(t *testing.T) {
	for attempt := uint32(1); attempt < 5; attempt++ {
		inv, cancel := fabric.InvokeSeq(attempt), fabric.CancelSeq(attempt)
		if cancel != inv+1 || (attempt > 1 && inv != fabric.CancelSeq(attempt-1)+1) {
			t.Fatalf("attempt %d: invoke %d cancel %d", attempt, inv, cancel)
		}
		a, k := fabric.SplitWorkerSeq(fabric.WorkerSeq(attempt, 7))
		if a != attempt || k != 7 {
			t.Fatalf("SplitWorkerSeq(WorkerSeq(%d, 7)) = %d, %d", attempt, a, k)
		}
		if fabric.WorkerSeq(attempt+1, 1) <= fabric.WorkerSeq(attempt, ^uint32(0)) {
			t.Fatalf("attempt %d+1 does not follow attempt %d", attempt, attempt)
		}
	}
}
