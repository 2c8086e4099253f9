package demotools

import (
	"fmt"

	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// Registrar is where worker handlers are registered; *workeragent.Agent is
// one. Taking the interface lets a process register the demo tools next to
// its own adapters.
type Registrar interface {
	HandleTool(t *toolspec.Tool, h workeragent.Handler, opts ...workeragent.ToolOption) error
}

// Names lists the tools Register knows, in a fixed order. demo.ledger is
// not among them: it needs JetStream (RegisterLedger).
func Names() []string {
	names := make([]string, 0, len(builtins))
	for _, b := range builtins {
		if b.handler != nil {
			names = append(names, b.name)
		}
	}
	return names
}

// Handler returns the worker handler of the named tool, for running it in
// process or in tests.
func Handler(name string) (workeragent.Handler, error) {
	b, err := registrable(name)
	if err != nil {
		return nil, err
	}
	return b.handler, nil
}

// Concurrency returns how many calls of the named tool an agent runs at
// once by default.
func Concurrency(name string) (int, bool) {
	b, ok := lookup(name)
	return b.concurrency, ok
}

// Register registers the named demo tools on r, or all of Names when none
// is named, each under its definition from the demo catalog and with its
// default concurrency. Every name is checked before anything is
// registered, so an unknown one (ErrUnknownTool) or demo.ledger
// (ErrNeedsJetStream) leaves r untouched. A name given twice is
// registered once. An error from r itself stops registration there.
func Register(r Registrar, names ...string) error {
	return RegisterFrom(r, Definitions(), names...)
}

// RegisterFrom is Register with the definitions of set, a catalog that
// lists demo tools under its own terms (another deadline, say): the host
// that reads the same catalog then calls them under the same contract.
func RegisterFrom(r Registrar, set *toolspec.Set, names ...string) error {
	if len(names) == 0 {
		names = Names()
	}
	type todo struct {
		b   builtin
		def *toolspec.Tool
	}
	var list []todo
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		b, err := registrable(n)
		if err != nil {
			return err
		}
		def, ok := set.Lookup(n)
		if !ok {
			return fmt.Errorf("%w: %q is not in the catalog", ErrUnknownTool, n)
		}
		if !seen[n] {
			seen[n] = true
			list = append(list, todo{b, def})
		}
	}
	for _, d := range list {
		if err := r.HandleTool(d.def, d.b.handler, workeragent.Concurrency(d.b.concurrency)); err != nil {
			return fmt.Errorf("demotools: register %q: %w", d.b.name, err)
		}
	}
	return nil
}

func registrable(name string) (builtin, error) {
	b, ok := lookup(name)
	switch {
	case !ok:
		return builtin{}, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	case b.handler == nil:
		return builtin{}, fmt.Errorf("%w: %q (use RegisterLedger)", ErrNeedsJetStream, name)
	}
	return b, nil
}

// The agent is the registrar every process passes.
var _ Registrar = (*workeragent.Agent)(nil)
