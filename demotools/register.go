package demotools

import (
	"fmt"

	"github.com/splashfabric/splashfabric/workeragent"
)

// Registrar is where worker handlers are registered; *workeragent.Agent is
// one. Taking the interface lets a process register the demo tools next to
// its own adapters.
type Registrar interface {
	Handle(name string, h workeragent.Handler, opts ...workeragent.ToolOption) error
}

// Names lists the tools Register knows, in a fixed order. demo.ledger is
// not among them: it needs JetStream (RegisterLedger).
func Names() []string {
	names := make([]string, 0, len(specs))
	for _, s := range specs {
		if s.handler != nil {
			names = append(names, s.name)
		}
	}
	return names
}

// Handler returns the worker handler of the named tool, for running it in
// process or in tests.
func Handler(name string) (workeragent.Handler, error) {
	s, err := registrable(name)
	if err != nil {
		return nil, err
	}
	return s.handler, nil
}

// Register registers the named demo tools on r, or all of Names when none
// is named, each with the options that match its host policy (idempotent,
// cancellable, concurrency). Every name is checked before anything is
// registered, so an unknown one (ErrUnknownTool) or demo.ledger
// (ErrNeedsJetStream) leaves r untouched. A name given twice is
// registered once. An error from r itself stops registration there.
func Register(r Registrar, names ...string) error {
	if len(names) == 0 {
		names = Names()
	}
	todo := make([]spec, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		s, err := registrable(n)
		if err != nil {
			return err
		}
		if !seen[n] {
			seen[n] = true
			todo = append(todo, s)
		}
	}
	for _, s := range todo {
		if err := r.Handle(s.name, s.handler, s.options()...); err != nil {
			return fmt.Errorf("demotools: register %q: %w", s.name, err)
		}
	}
	return nil
}

func registrable(name string) (spec, error) {
	s, ok := lookup(name)
	switch {
	case !ok:
		return spec{}, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	case s.handler == nil:
		return spec{}, fmt.Errorf("%w: %q (use RegisterLedger)", ErrNeedsJetStream, name)
	}
	return s, nil
}

// The agent is the registrar every process passes.
var _ Registrar = (*workeragent.Agent)(nil)
