package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

// envCatalog names the catalog file of dev, host and worker.
const envCatalog = "SPLASH_CATALOG"

// registerCatalog adds --catalog to a command that serves or calls tools.
func registerCatalog(fs *flagSet, p *string) {
	fs.stringVar(p, "catalog", envCatalog, "", "tool catalog `file` (YAML or JSON, docs/catalog.md; empty: the demo tools)")
}

// catalog is a loaded catalog: the file as read (for the processes'
// commands) and its compiled definitions.
type catalog struct {
	path string // "" for the built-in demo catalog
	file *toolspec.Catalog
	set  *toolspec.Set
}

// loadCatalog reads path, or the demo catalog when path is empty. A bad
// catalog is refused (errCatalog) naming the tool and field; nothing
// starts.
func loadCatalog(path string) (*catalog, error) {
	var (
		file *toolspec.Catalog
		err  error
	)
	if path == "" {
		file, err = toolspec.Parse(demotools.CatalogYAML, ".")
	} else {
		file, err = toolspec.Load(path)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: --catalog %s: %v", errCatalog, catalogName(path), err)
	}
	set, err := file.Compile()
	if err != nil {
		return nil, fmt.Errorf("%w: --catalog %s: %v", errCatalog, catalogName(path), err)
	}
	return &catalog{path: path, file: file, set: set}, nil
}

func catalogName(path string) string {
	if path == "" {
		return "(the demo catalog)"
	}
	return path
}

// serve picks the tools a worker serves: names, or every tool of the
// catalog when names is empty. Each must be in the catalog and be a
// process tool, a tool of an MCP server or one of the built-in demo
// tools; the processes' and servers' commands must exist here, and no
// sandbox may hold what p protects. Everything is checked before
// anything connects.
func (c *catalog) serve(names []string, p toolspec.Protected) ([]*toolspec.Tool, error) {
	if len(names) == 0 {
		names = c.set.Names()
	}
	var out []*toolspec.Tool
	var process []string
	for _, n := range names {
		t, ok := c.set.Lookup(n)
		if !ok {
			return nil, fmt.Errorf("%w: --tools: %q is not in the catalog %s (it has: %s)",
				errUsage, n, catalogName(c.path), strings.Join(c.set.Names(), ", "))
		}
		switch {
		case t.Spec().Process != nil || t.Spec().MCP != nil:
			process = append(process, n)
		case !slices.Contains(builtinTools(), n):
			return nil, fmt.Errorf("%w: --tools: %q has no process or MCP server in the catalog and no built-in handler (built in: %s)",
				errUsage, n, strings.Join(builtinTools(), ", "))
		}
		if !slices.ContainsFunc(out, func(o *toolspec.Tool) bool { return o.Name() == n }) {
			out = append(out, t)
		}
	}
	if len(process) > 0 {
		// Only the commands of the tools this worker runs need exist
		// here.
		sub := &toolspec.Catalog{}
		for _, s := range c.file.Tools {
			if slices.Contains(process, s.Name) {
				sub.Tools = append(sub.Tools, s)
			}
		}
		if err := sub.CheckCommands(); err != nil {
			return nil, fmt.Errorf("%w: --catalog %s: %v", errCatalog, catalogName(c.path), err)
		}
		if err := sub.CheckSandboxes(p); err != nil {
			return nil, fmt.Errorf("%w: --catalog %s: %w", errCatalog, catalogName(c.path), err)
		}
	}
	return out, nil
}

// builtinTools are the tools a worker can run without a process: the demo
// tools, the JetStream-backed ledger included.
func builtinTools() []string { return append(demotools.Names(), demotools.Ledger) }

// servePool picks the tools a worker of pool serves: names (each of the
// pool), or every tool of the pool; without a pool, as serve does.
func (c *catalog) servePool(pool string, names []string, p toolspec.Protected) ([]*toolspec.Tool, error) {
	if pool == "" {
		return c.serve(names, p)
	}
	if err := protocol.ValidateToolName(pool); err != nil {
		return nil, fmt.Errorf("%w: --pool %q: %v", errUsage, pool, err)
	}
	var of []string
	for _, n := range c.set.Names() {
		if t, _ := c.set.Lookup(n); t.Pool() == pool {
			of = append(of, n)
		}
	}
	if len(of) == 0 {
		return nil, fmt.Errorf("%w: --pool: no tool of the catalog %s is in pool %q", errUsage, catalogName(c.path), pool)
	}
	for _, n := range names {
		if !slices.Contains(of, n) {
			return nil, fmt.Errorf("%w: --tools: %q is not in pool %q (it has: %s)", errUsage, n, pool, strings.Join(of, ", "))
		}
	}
	if len(names) == 0 {
		names = of
	}
	return c.serve(names, p)
}

// commonPool is the pool every tool belongs to, or "" when they belong to
// several.
func commonPool(tools []*toolspec.Tool) string {
	pool := ""
	for i, t := range tools {
		if i > 0 && t.Pool() != pool {
			return ""
		}
		pool = t.Pool()
	}
	return pool
}
