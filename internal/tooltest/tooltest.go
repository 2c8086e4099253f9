// Package tooltest builds tool definitions for tests: a test declares its
// tools as toolspec.Spec values, as a catalog would, and registers the
// compiled definitions on both sides (host.Runtime.RegisterTool,
// workeragent.Agent.HandleTool), so the two agree by construction and
// every invocation carries the same digest a production host would send.
//
// It imports neither host nor workeragent, so the internal tests of those
// packages can use it too.
package tooltest

import "github.com/splashfabric/splashfabric/toolspec"

// TB is the part of testing.TB the helpers use; *testing.T and
// *testing.B satisfy it.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Tool compiles s, or fails the test with the field the definition got
// wrong. A test that means to see a definition refused calls
// s.Compile itself.
func Tool(tb TB, s toolspec.Spec) *toolspec.Tool {
	tb.Helper()
	t, err := s.Compile()
	if err != nil {
		tb.Fatalf("tooltest: %v", err)
		return nil
	}
	return t
}

// Text is Tool for the commonest definition in a test: a text tool named
// name, with every default (one attempt, no deadline, not idempotent,
// not cancellable).
func Text(tb TB, name string) *toolspec.Tool {
	tb.Helper()
	return Tool(tb, toolspec.Spec{Name: name})
}

// Set compiles specs into one set, as a catalog holds them, or fails the
// test.
func Set(tb TB, specs ...toolspec.Spec) *toolspec.Set {
	tb.Helper()
	tools := make([]*toolspec.Tool, len(specs))
	for i, s := range specs {
		tools[i] = Tool(tb, s)
	}
	set, err := toolspec.NewSet(tools...)
	if err != nil {
		tb.Fatalf("tooltest: %v", err)
		return nil
	}
	return set
}

// Lookup returns the tool of set named name, or fails the test: how a
// test hands a worker the definition its host registered.
func Lookup(tb TB, set *toolspec.Set, name string) *toolspec.Tool {
	tb.Helper()
	t, ok := set.Lookup(name)
	if !ok {
		tb.Fatalf("tooltest: no tool %q among %q", name, set.Names())
		return nil
	}
	return t
}

// Registry is what registers a catalog's tools: a *host.Runtime.
type Registry interface {
	RegisterTools(*toolspec.Set) error
}

// Catalog compiles specs once, in the test's goroutine, and returns a
// function registering them on a registry: what hostloop.LoopConfig's
// Catalog wants, as tooltest.Catalog[*host.Runtime](t, specs...).
func Catalog[R Registry](tb TB, specs ...toolspec.Spec) func(R) error {
	tb.Helper()
	set := Set(tb, specs...)
	return func(r R) error { return r.RegisterTools(set) }
}
