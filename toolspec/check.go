package toolspec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// CheckCommands checks, on the machine where the processes will run, what
// validation cannot: that each process's directory exists and is a
// directory, that its command is found (in PATH when it has no slash,
// else relative to the directory) and is an executable file, and that
// every bind source exists. A worker calls it at start so a broken
// catalog fails there instead of at the first call. The first failure is
// a *FieldError wrapping ErrCommandNotFound or ErrInvalidValue.
func (c *Catalog) CheckCommands() error {
	for i, s := range c.Tools {
		tool := label(s.Name, "#"+strconv.Itoa(i))
		if s.Process != nil {
			if field, err := s.Process.checkHost(); err != nil {
				return fieldErr(tool, joinPath("process", field), err)
			}
		}
		if s.MCP != nil {
			if field, err := s.MCP.process().checkHost(); err != nil {
				return fieldErr(tool, joinPath("mcp", field), err)
			}
		}
	}
	return nil
}

// checkHost returns the field, relative to the process, of the first
// thing missing on this machine and why.
func (p *Process) checkHost() (string, error) {
	dir := p.Dir
	if dir == "" {
		dir = "."
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "dir", fmt.Errorf("%w: %q is not a directory", ErrInvalidValue, clip.String(dir, clip.Echo))
	}
	if len(p.Command) == 0 {
		return "command", fmt.Errorf("%w: empty command", ErrInvalidValue)
	}
	name := p.Command[0]
	if !strings.Contains(name, "/") {
		if _, err := exec.LookPath(name); err != nil {
			return "command[0]", fmt.Errorf("%w: %q is not an executable in PATH", ErrCommandNotFound, clip.String(name, clip.Echo))
		}
	} else {
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		fi, err := os.Stat(path)
		switch {
		case err != nil:
			return "command[0]", fmt.Errorf("%w: %q does not exist", ErrCommandNotFound, clip.String(path, clip.Echo))
		case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
			return "command[0]", fmt.Errorf("%w: %q is not an executable file", ErrCommandNotFound, clip.String(path, clip.Echo))
		}
	}
	return p.Contain.eachBind(func(src, _ string) error {
		if _, err := os.Stat(src); err != nil {
			return fmt.Errorf("%w: bind source %q does not exist", ErrInvalidValue, clip.String(src, clip.Echo))
		}
		return nil
	})
}
