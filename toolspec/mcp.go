package toolspec

import (
	"fmt"
	"strings"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// MaxMCPToolNameBytes bounds MCP.Tool, as the Model Context Protocol
// bounds tool names.
const MaxMCPToolNameBytes = 128

// MCP makes the worker agent serve the tool from a Model Context Protocol
// server that it runs as a child process speaking MCP over stdio. Like
// Process it says how the tool runs, not what it does, so it is not part
// of the digest. Worker only.
//
// Entries whose servers are written alike (command, dir, env, contain,
// limits and cancel_grace) share one server process: an MCP server usually offers several
// tools.
type MCP struct {
	// Command is the server's argv, with the rules of Process.Command.
	Command []string `json:"command"`
	// Dir is the working directory, resolved like Process.Dir.
	Dir string `json:"dir,omitempty"`
	// Env is the server's whole environment, with the rules of
	// Process.Env.
	Env []string `json:"env,omitempty"`
	// Concurrency bounds this tool's calls in flight, 1 to
	// MaxConcurrency; 0 means 1.
	Concurrency int `json:"concurrency,omitempty"`
	// Contain is the server's sandbox, as Process.Contain.
	Contain *Contain `json:"contain,omitempty"`
	// Limits bounds the server's sandbox, as Process.Limits.
	Limits *Limits `json:"limits,omitempty"`
	// CancelGrace is as Process.CancelGrace.
	CancelGrace Duration `json:"cancel_grace,omitempty"`
	// Tool is the server's name of the tool, as its tools/list reports
	// it; empty means the last dot-separated token of the entry's name
	// ("files.read_file" calls "read_file").
	Tool string `json:"tool,omitempty"`
}

// ServerTool returns the name the server knows the tool by: MCP.Tool, or
// the last token of name.
func (m *MCP) ServerTool(name string) string {
	if m.Tool != "" {
		return m.Tool
	}
	return name[strings.LastIndexByte(name, '.')+1:]
}

// process returns the part of m that runs like a process, so the two are
// checked by the same rules.
func (m *MCP) process() *Process {
	return &Process{Command: m.Command, Dir: m.Dir, Env: m.Env, Concurrency: m.Concurrency, Contain: m.Contain,
		Limits: m.Limits, CancelGrace: m.CancelGrace}
}

// check returns the JSON path, relative to mcp, of the first bad field
// and why.
func (m *MCP) check() (string, error) {
	if field, err := m.process().check(); err != nil {
		return field, err
	}
	if m.Tool != "" {
		if len(m.Tool) > MaxMCPToolNameBytes {
			return "tool", fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidValue, len(m.Tool), MaxMCPToolNameBytes)
		}
		for _, c := range []byte(m.Tool) {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
				return "tool", fmt.Errorf("%w: %q is not an MCP tool name (letters, digits, _ - .)", ErrInvalidValue, clip.String(m.Tool, clip.Echo))
			}
		}
	}
	return "", nil
}

func (m *MCP) clone() *MCP {
	c := *m
	c.Command = cloneStrings(m.Command)
	c.Env = cloneStrings(m.Env)
	c.Contain = m.Contain.clone()
	c.Limits = m.Limits.clone()
	return &c
}
