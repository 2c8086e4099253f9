package demotools_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// registry records registrations the way an agent would accept them.
type registry struct {
	names []string
	opts  map[string]int
	fail  error
}

func (r *registry) HandleTool(def *toolspec.Tool, h workeragent.Handler, opts ...workeragent.ToolOption) error {
	name := def.Name()
	if r.fail != nil {
		return r.fail
	}
	if h == nil {
		return workeragent.ErrInvalidTool
	}
	if r.opts == nil {
		r.opts = make(map[string]int)
	}
	r.names = append(r.names, name)
	r.opts[name] = len(opts)
	return nil
}

func TestRegister(t *testing.T) {
	refused := errors.New("refused")
	tests := []struct {
		name    string
		args    []string
		fail    error
		want    []string
		wantErr error
	}{
		{"all", nil, nil, demotools.Names(), nil},
		{"some", []string{demotools.Sleep, demotools.Echo}, nil, []string{demotools.Sleep, demotools.Echo}, nil},
		{"duplicate once", []string{demotools.Echo, demotools.Echo}, nil, []string{demotools.Echo}, nil},
		{"unknown changes nothing", []string{demotools.Echo, "demo.nope"}, nil, nil, demotools.ErrUnknownTool},
		{"ledger needs jetstream", []string{demotools.Echo, demotools.Ledger}, nil, nil, demotools.ErrNeedsJetStream},
		{"registrar error", []string{demotools.Echo}, refused, nil, refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &registry{fail: tt.fail}
			err := demotools.Register(r, tt.args...)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Register: %v, want %v", err, tt.wantErr)
			}
			if !slices.Equal(r.names, tt.want) {
				t.Fatalf("registered %q, want %q", r.names, tt.want)
			}
		})
	}
}

func TestRegisterOptions(t *testing.T) {
	r := &registry{}
	if err := demotools.Register(r); err != nil {
		t.Fatal(err)
	}
	// Concurrency only: the rest comes from the definition.
	for _, n := range demotools.Names() {
		if want := 1; r.opts[n] != want {
			t.Errorf("%s: %d options, want %d", n, r.opts[n], want)
		}
	}
}

func TestHandlerUnknown(t *testing.T) {
	for _, n := range []string{"", "demo", "demo.nope", demotools.Ledger} {
		if _, err := demotools.Handler(n); !errors.Is(err, demotools.ErrUnknownTool) && !errors.Is(err, demotools.ErrNeedsJetStream) {
			t.Errorf("Handler(%q): %v", n, err)
		}
	}
}
