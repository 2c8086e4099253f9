package toolspec_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/toolspec"
)

func TestCheckCommands(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\necho ok\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("tool.sh", 0o755)
	write("plain.txt", 0o644)

	tests := []struct {
		name      string
		process   string
		wantErr   error
		wantField string
	}{
		{"relative script", "{command: [./tool.sh], dir: bin}", nil, ""},
		{"script from the catalog dir", "{command: [bin/tool.sh, --flag]}", nil, ""},
		{"absolute script", "{command: [" + filepath.Join(bin, "tool.sh") + "], dir: /, contain: false}", nil, ""},
		{"command in PATH", "{command: [sh, -c, 'true']}", nil, ""},
		{"existing bind", "{command: [sh], contain: {ro_binds: [" + bin + "], rw_binds: ['" + root + ":/work']}}", nil, ""},
		{"missing script", "{command: [./absent.sh], dir: bin}", toolspec.ErrCommandNotFound, "process.command[0]"},
		{"not executable", "{command: [./plain.txt], dir: bin}", toolspec.ErrCommandNotFound, "process.command[0]"},
		{"a directory", "{command: [./bin]}", toolspec.ErrCommandNotFound, "process.command[0]"},
		{"missing from PATH", "{command: [splash-no-such-command-xyz]}", toolspec.ErrCommandNotFound, "process.command[0]"},
		{"missing dir", "{command: [sh], dir: nowhere}", toolspec.ErrInvalidValue, "process.dir"},
		{"dir is a file", "{command: [sh], dir: bin/plain.txt}", toolspec.ErrInvalidValue, "process.dir"},
		{"missing bind source", "{command: [sh], contain: {rw_binds: ['" + filepath.Join(root, "gone") + ":/x']}}", toolspec.ErrInvalidValue, "process.contain.rw_binds[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(root, "tools.yaml")
			doc := "tools:\n  - name: plain\n  - name: demo.run\n    process: " + tt.process + "\n"
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			cat, err := toolspec.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			err = cat.CheckCommands()
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("error %v; want %v", err, tt.wantErr)
			}
			if err == nil {
				return
			}
			var fe *toolspec.FieldError
			if !errors.Is(err, toolspec.ErrInvalidCatalog) || !errors.As(err, &fe) || fe.Tool != "demo.run" || fe.Field != tt.wantField {
				t.Fatalf("error %v; want a FieldError for demo.run %s", err, tt.wantField)
			}
			if !strings.Contains(err.Error(), `field "`+tt.wantField+`"`) {
				t.Fatalf("message %q does not name the field", err)
			}
		})
	}
}

// No sandbox may bind the worker's home (or a directory above it), its
// data directory or key file (or anything that holds or lies inside
// them), even through a symbolic link; a tool's directory is bound, so it
// is checked like a bind.
func TestCheckSandboxes(t *testing.T) {
	root := t.TempDir()
	mk := func(parts ...string) string {
		p := filepath.Join(append([]string{root}, parts...)...)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	home := mk("home", "worker")
	tools := mk("home", "worker", "tools", "upper")
	data := mk("home", "worker", ".cache", "splash")
	keys := mk("etc", "splash")
	key := filepath.Join(keys, "frame.key")
	if err := os.WriteFile(key, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "innocent")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	p := toolspec.Protected{Home: home, Secrets: []string{data, key}}
	tests := []struct {
		name, entry string
		wantErr     error
		wantField   string
	}{
		{"own directory inside home", "process: {command: [sh], dir: " + tools + "}", nil, ""},
		{"home itself", "process: {command: [sh], dir: " + home + "}", toolspec.ErrUnsafeBind, "process.dir"},
		{"above home", "process: {command: [sh], dir: " + filepath.Join(root, "home") + "}", toolspec.ErrUnsafeBind, "process.dir"},
		{"inside the data dir", "process: {command: [sh], dir: " + tools + ", contain: {ro_binds: [" + filepath.Join(data, "nats") + "]}}", toolspec.ErrUnsafeBind, "process.contain.ro_binds[0]"},
		{"the key file", "process: {command: [sh], dir: " + tools + ", contain: {ro_binds: [" + key + "]}}", toolspec.ErrUnsafeBind, "process.contain.ro_binds[0]"},
		{"the key file's directory", "process: {command: [sh], dir: " + tools + ", contain: {rw_binds: ['" + keys + ":/keys']}}", toolspec.ErrUnsafeBind, "process.contain.rw_binds[0]"},
		{"a link to the data dir", "process: {command: [sh], dir: " + tools + ", contain: {ro_binds: [" + link + "]}}", toolspec.ErrUnsafeBind, "process.contain.ro_binds[0]"},
		{"an unrelated bind", "process: {command: [sh], dir: " + tools + ", contain: {ro_binds: [" + mk("srv", "models") + "]}}", nil, ""},
		{"uncontained in home", "process: {command: [sh], dir: " + home + ", contain: false}", nil, ""},
		{"mcp server in home", "format: json\n    mcp: {command: [sh], dir: " + home + "}", toolspec.ErrUnsafeBind, "mcp.dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat, err := toolspec.Parse([]byte("tools:\n  - name: demo.run\n    "+tt.entry+"\n"), root)
			if err != nil {
				t.Fatal(err)
			}
			err = cat.CheckSandboxes(p)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("error %v; want %v", err, tt.wantErr)
			}
			var fe *toolspec.FieldError
			if err != nil && (!errors.As(err, &fe) || fe.Field != tt.wantField || !errors.Is(err, toolspec.ErrInvalidCatalog)) {
				t.Fatalf("error %v; want a FieldError for %s", err, tt.wantField)
			}
		})
	}
	if err := (toolspec.Protected{}).Check("/"); !errors.Is(err, toolspec.ErrUnsafeBind) {
		t.Errorf("Check(/) = %v, want ErrUnsafeBind", err)
	}
}
