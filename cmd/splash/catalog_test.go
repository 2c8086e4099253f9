package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad catalog is refused before anything starts, with an error naming
// the tool and the field, by every command that reads one.
func TestBadCatalogRefused(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
		workerOnly bool // the host does not run processes, so it does not look for commands
	}{
		{"unknown field", "tools:\n  - name: a.b\n    idempotnet: true\n", []string{`"a.b"`, `"idempotnet"`}, false},
		{"bad schema", "tools:\n  - name: a.b\n    format: json\n    input_schema: {type: 12}\n", []string{`"a.b"`, `"input_schema"`}, false},
		{"illegal name", "tools:\n  - name: a.>\n", []string{`"a.>"`, `"name"`}, false},
		{"limit out of range", "tools:\n  - name: a.b\n    max_attempts: 1000\n", []string{`"a.b"`, `"max_attempts"`}, false},
		{"missing command", "tools:\n  - name: a.b\n    process: {command: [splash-no-such-tool]}\n", []string{`"a.b"`, `"process.command[0]"`}, true},
	}
	for _, tc := range cases {
		path := filepath.Join(t.TempDir(), "catalog.yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		cmds := [][]string{
			{"worker", "--catalog", path, "--metrics-addr="},
			{"dev", "--catalog", path, "--data-dir", filepath.Join(t.TempDir(), "dev")},
		}
		if !tc.workerOnly {
			cmds = append(cmds, []string{"host", "--catalog", path, "--api-token", "t", "--key-file", path})
		}
		for _, args := range cmds {
			t.Run(tc.name+"/"+args[0], func(t *testing.T) {
				code, _, stderr := invoke(t, nil, args...)
				if code != 2 {
					t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
				}
				for _, w := range tc.want {
					if !strings.Contains(stderr, w) {
						t.Errorf("stderr lacks %s:\n%s", w, stderr)
					}
				}
			})
		}
	}
}
