package toolspec

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Protected names what no sandbox of a worker may hold: its home and its
// secrets. A worker fills it from its own settings (data directory, key
// file, credential files) and checks its catalog with
// Catalog.CheckSandboxes before it runs a tool.
type Protected struct {
	// Home is the worker's home directory: no sandbox may bind it or a
	// directory that holds it (a directory inside it is the tool's
	// business, as long as it holds no secret).
	Home string
	// Secrets are files and directories of the worker: no sandbox may
	// bind one, anything inside one, or a directory that holds one.
	Secrets []string
}

// Check returns nil when path may be bound into a sandbox, and an error
// wrapping ErrUnsafeBind when it may not: it is the whole file system,
// the worker's home or a directory above it, or it overlaps a secret. Symbolic links are resolved on both sides first, so
// a link cannot smuggle a secret in.
func (p Protected) Check(path string) error {
	real := resolvePath(path)
	if real == "/" {
		return fmt.Errorf("%w: %q is the whole file system", ErrUnsafeBind, clip.String(path, clip.Echo))
	}
	if p.Home != "" {
		if home := resolvePath(p.Home); home != "/" && within(home, real) {
			return fmt.Errorf("%w: %q holds the worker's home %q", ErrUnsafeBind, clip.String(path, clip.Echo), clip.String(home, clip.Echo))
		}
	}
	for _, s := range p.Secrets {
		if s == "" {
			continue
		}
		secret := resolvePath(s)
		switch {
		case within(secret, real):
			return fmt.Errorf("%w: %q holds the worker's %q", ErrUnsafeBind, clip.String(path, clip.Echo), clip.String(secret, clip.Echo))
		case within(real, secret):
			return fmt.Errorf("%w: %q is inside the worker's %q", ErrUnsafeBind, clip.String(path, clip.Echo), clip.String(secret, clip.Echo))
		}
	}
	return nil
}

// resolvePath is path made absolute and clean, its symbolic links
// followed as far as it exists.
func resolvePath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	// The part that does not exist yet has no links to follow; the
	// part that does may.
	dir, base := filepath.Split(abs)
	if dir != "/" && dir != "" {
		return filepath.Join(resolvePath(strings.TrimSuffix(dir, "/")), base)
	}
	return abs
}

// within reports whether p is dir or lies under it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// CheckSandboxes checks, on the machine where the processes will run,
// that no contained process or MCP server of c would see what p
// protects: neither its directory (bound read-only into its sandbox) nor
// any bind source. The first failure is a *FieldError wrapping
// ErrUnsafeBind.
func (c *Catalog) CheckSandboxes(p Protected) error {
	for i, s := range c.Tools {
		tool := label(s.Name, "#"+strconv.Itoa(i))
		for _, run := range []struct {
			field string
			proc  *Process
		}{{"process", s.Process}, {"mcp", mcpProcess(s.MCP)}} {
			if run.proc == nil {
				continue
			}
			if field, err := run.proc.checkProtected(p); err != nil {
				return fieldErr(tool, joinPath(run.field, field), err)
			}
		}
	}
	return nil
}

func mcpProcess(m *MCP) *Process {
	if m == nil {
		return nil
	}
	return m.process()
}

// checkProtected returns the field, relative to the process, of the first
// path its sandbox would bind that p protects.
func (pr *Process) checkProtected(p Protected) (string, error) {
	if !pr.Contain.Enabled() {
		return "", nil
	}
	if pr.Dir != "" {
		if err := p.Check(pr.Dir); err != nil {
			return "dir", fmt.Errorf("%w (the tool's directory is bound into its sandbox: give it one of its own)", err)
		}
	}
	if pr.Contain == nil {
		return "", nil
	}
	for _, binds := range []struct {
		field string
		list  []string
	}{{"ro_binds", pr.Contain.ROBinds}, {"rw_binds", pr.Contain.RWBinds}} {
		for i, b := range binds.list {
			src, _, err := parseBind(b)
			if err == nil {
				err = p.Check(src)
			}
			if err != nil {
				return "contain." + binds.field + "[" + strconv.Itoa(i) + "]", err
			}
		}
	}
	return "", nil
}

// HomeDir is the home a worker protects: $HOME, or the user's home from
// the system when it is unset; "" when neither is known.
func HomeDir() string {
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return ""
}
