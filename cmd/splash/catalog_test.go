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

// A catalog whose sandbox would hold the worker's key file or dev's data
// directory is refused before anything starts (exit 2, unsafe bind).
func TestSandboxOfASecretRefused(t *testing.T) {
	secrets := t.TempDir()
	key := filepath.Join(secrets, "frame.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "dev")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		args      []string
	}{
		{"worker, the key file's directory", secrets, []string{"worker", "--key-file", key, "--metrics-addr="}},
		{"dev, the data directory", data, []string{"dev", "--data-dir", data}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "catalog.yaml")
			yaml := "tools:\n  - name: a.b\n    process: {command: [sh], dir: " + tc.dir + "}\n"
			if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := invoke(t, nil, append(tc.args, "--catalog", path)...)
			if code != 2 || !strings.Contains(stderr, "unsafe bind") || !strings.Contains(stderr, `"process.dir"`) {
				t.Fatalf("exit %d, want 2 and an unsafe bind of process.dir; stderr:\n%s", code, stderr)
			}
		})
	}
}
