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
		{"absolute script", "{command: [" + filepath.Join(bin, "tool.sh") + "], dir: /}", nil, ""},
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
