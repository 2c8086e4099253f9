package demotools

import (
	_ "embed"
	"fmt"
	"sync"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/toolspec"
)

// CatalogYAML is the demo catalog as a file: every demo tool's definition
// (catalog.yaml beside this file). It is what processes use when they are
// given no catalog, and an example of the format.
//
//go:embed catalog.yaml
var CatalogYAML []byte

// Definitions returns the demo catalog, compiled once per process.
func Definitions() *toolspec.Set { return definitions() }

var definitions = sync.OnceValue(func() *toolspec.Set {
	cat, err := toolspec.Parse(CatalogYAML, ".")
	if err != nil {
		panic(fmt.Sprintf("demotools: the embedded catalog does not parse: %v", err))
	}
	set, err := cat.Compile()
	if err != nil {
		panic(fmt.Sprintf("demotools: the embedded catalog does not compile: %v", err))
	}
	return set
})

// Definition returns one demo tool's definition.
func Definition(name string) (*toolspec.Tool, error) {
	t, ok := Definitions().Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	return t, nil
}

// Catalog registers every demo tool, demo.ledger included, on rt from the
// demo catalog's definitions. It has the shape hostloop.LoopConfig.Catalog
// expects.
func Catalog(rt *host.Runtime) error {
	if err := rt.RegisterTools(Definitions()); err != nil {
		return fmt.Errorf("demotools: catalog: %w", err)
	}
	return nil
}
