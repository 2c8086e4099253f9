package toolspec_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/toolspec"
)

func TestParseMCPEntries(t *testing.T) {
	tool := func(body string) string { return "tools:\n  - " + strings.ReplaceAll(body, "\n", "\n    ") + "\n" }
	tests := []struct {
		name      string
		catalog   string
		wantErr   error
		wantField string
	}{
		{"text format", tool("name: m.a\nmcp: {command: [srv]}"), toolspec.ErrInvalidValue, "format"},
		{"process and mcp", tool("name: m.a\nformat: json\nprocess: {command: [x]}\nmcp: {command: [srv]}"), toolspec.ErrInvalidValue, "mcp"},
		{"empty command", tool("name: m.a\nformat: json\nmcp: {command: []}"), toolspec.ErrInvalidValue, "mcp.command"},
		{"bad env", tool("name: m.a\nformat: json\nmcp: {command: [srv], env: ['1X=2']}"), toolspec.ErrInvalidValue, "mcp.env[0]"},
		{"reserved env", tool("name: m.a\nformat: json\nmcp: {command: [srv], env: [SPLASH_TOOL_X=1]}"), toolspec.ErrInvalidValue, "mcp.env[0]"},
		{"concurrency", tool("name: m.a\nformat: json\nmcp: {command: [srv], concurrency: 2000}"), toolspec.ErrOutOfRange, "mcp.concurrency"},
		{"bad bind", tool("name: m.a\nformat: json\nmcp: {command: [srv], contain: {ro_binds: ['/a:rel']}}"), toolspec.ErrInvalidValue, "mcp.contain.ro_binds[0]"},
		{"bind of root", tool("name: m.a\nformat: json\nmcp: {command: [srv], contain: {rw_binds: [/]}}"), toolspec.ErrUnsafeBind, "mcp.contain.rw_binds[0]"},
		{"limits uncontained", tool("name: m.a\nformat: json\nmcp: {command: [srv], contain: false, limits: {pids: 64}}"), toolspec.ErrInvalidValue, "mcp.limits"},
		{"bad tool name", tool("name: m.a\nformat: json\nmcp: {command: [srv], tool: 'a b'}"), toolspec.ErrInvalidValue, "mcp.tool"},
		{"long tool name", tool("name: m.a\nformat: json\nmcp: {command: [srv], tool: " + strings.Repeat("x", 129) + "}"), toolspec.ErrInvalidValue, "mcp.tool"},
		{"unknown field", tool("name: m.a\nformat: json\nmcp: {command: [srv], tools: [a]}"), toolspec.ErrUnknownField, "mcp.tools"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := toolspec.Parse([]byte(tt.catalog), t.TempDir())
			var fe *toolspec.FieldError
			if !errors.Is(err, tt.wantErr) || !errors.Is(err, toolspec.ErrInvalidCatalog) || !errors.As(err, &fe) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if fe.Tool != "m.a" || fe.Field != tt.wantField {
				t.Fatalf("tool, field = %q, %q; want m.a, %q", fe.Tool, fe.Field, tt.wantField)
			}
		})
	}
}

func TestMCPEntryDefaultsAndDigest(t *testing.T) {
	dir := t.TempDir()
	cat, err := toolspec.Parse([]byte(`
tools:
  - name: files.read_file
    format: json
    mcp: {command: [srv, --stdio], dir: sub}
  - name: files.other
    format: json
    mcp: {command: [srv, --stdio], dir: sub, tool: write-file}
`), dir)
	if err != nil {
		t.Fatal(err)
	}
	set, err := cat.Compile()
	if err != nil {
		t.Fatal(err)
	}
	read, _ := set.Lookup("files.read_file")
	m := read.Spec().MCP
	if m.Dir != filepath.Join(dir, "sub") || m.Concurrency != 1 || m.ServerTool(read.Name()) != "read_file" {
		t.Fatalf("mcp = %+v (server tool %q)", m, m.ServerTool(read.Name()))
	}
	other, _ := set.Lookup("files.other")
	if got := other.Spec().MCP.ServerTool(other.Name()); got != "write-file" {
		t.Fatalf("server tool = %q", got)
	}
	// How a tool runs is the worker's business: the digest does not
	// change with it.
	bare, err := toolspec.Spec{Name: "files.read_file", Format: toolspec.FormatJSON}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if bare.Digest() != read.Digest() {
		t.Fatal("the mcp entry changed the digest")
	}
	// A copy is deep.
	s := read.Spec()
	s.MCP.Command[0] = "changed"
	if read.Spec().MCP.Command[0] != "srv" {
		t.Fatal("Spec shares the mcp command")
	}
}

func TestCheckCommandsLooksForTheMCPServer(t *testing.T) {
	cat, err := toolspec.Parse([]byte("tools:\n  - name: m.a\n    format: json\n    mcp: {command: [./missing-server]}\n"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	err = cat.CheckCommands()
	var fe *toolspec.FieldError
	if !errors.Is(err, toolspec.ErrCommandNotFound) || !errors.As(err, &fe) || fe.Field != "mcp.command[0]" {
		t.Fatalf("err = %v", err)
	}
}
