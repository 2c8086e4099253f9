package apitoken_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/httpapi/apitoken"
)

func tokenFile(names ...string) string {
	out := "tokens:\n"
	for _, n := range names {
		out += "  - {name: " + n + ", sha256: " + digest(n+"-secret") + ", scopes: [read]}\n"
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// replaceFile swaps the file for a new one, as editors and Kubernetes do.
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".new"
	writeFile(t, tmp, content)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func knows(f *apitoken.File, name string) bool {
	tok, ok := f.Lookup(name + "-secret")
	return ok && tok.Name() == name
}

func TestFileReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	writeFile(t, path, tokenFile("a"))
	var reloads []error
	f, err := apitoken.OpenFile(path, apitoken.FileConfig{Poll: -1, OnReload: func(_ *apitoken.Set, err error) { reloads = append(reloads, err) }})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	steps := []struct {
		name         string
		change       func()
		wantChanged  bool
		wantErr      error
		wantReported bool
		know         []string
		notKnow      []string
	}{
		{"unchanged", func() {}, false, nil, false, []string{"a"}, nil},
		{"edited in place", func() { writeFile(t, path, tokenFile("a", "b")) }, true, nil, true, []string{"a", "b"}, nil},
		{"replaced", func() { replaceFile(t, path, tokenFile("c")) }, true, nil, true, []string{"c"}, []string{"a", "b"}},
		// A broken edit keeps the tokens that were, every time it is read.
		{"half written", func() { writeFile(t, path, "tokens:\n  - {name: d") }, false, apitoken.ErrInvalidFile, true, []string{"c"}, []string{"d"}},
		{"still half written", func() {}, false, apitoken.ErrInvalidFile, false, []string{"c"}, nil},
		{"invalid token", func() { writeFile(t, path, "tokens:\n  - {name: d, sha256: 12}\n") }, false, apitoken.ErrInvalidToken, true, []string{"c"}, []string{"d"}},
		{"removed", func() { _ = os.Remove(path) }, false, apitoken.ErrInvalidFile, true, []string{"c"}, nil},
		{"back", func() { writeFile(t, path, tokenFile("d")) }, true, nil, true, []string{"d"}, []string{"c"}},
		{"emptied", func() { writeFile(t, path, "tokens: []\n") }, true, nil, true, nil, []string{"d"}},
	}
	for _, st := range steps {
		st.change()
		n := len(reloads)
		changed, err := f.Reload()
		if changed != st.wantChanged || !errors.Is(err, st.wantErr) || (st.wantErr == nil) != (err == nil) {
			t.Fatalf("%s: Reload = %v, %v; want %v, %v", st.name, changed, err, st.wantChanged, st.wantErr)
		}
		if reported := len(reloads) > n; reported != st.wantReported {
			t.Fatalf("%s: OnReload called %v", st.name, reported)
		}
		for _, name := range st.know {
			if !knows(f, name) {
				t.Fatalf("%s: %s is not known", st.name, name)
			}
		}
		for _, name := range st.notKnow {
			if knows(f, name) {
				t.Fatalf("%s: %s is still known", st.name, name)
			}
		}
	}
}

func TestOpenFileRefusesABrokenFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	writeFile(t, big, "tokens: []\n#"+string(make([]byte, apitoken.MaxFileBytes)))
	broken := filepath.Join(dir, "broken.yaml")
	writeFile(t, broken, "tokens: [")
	for _, path := range []string{filepath.Join(dir, "missing.yaml"), big, broken} {
		if _, err := apitoken.OpenFile(path, apitoken.FileConfig{}); !errors.Is(err, apitoken.ErrInvalidFile) {
			t.Errorf("OpenFile(%s) = %v, want ErrInvalidFile", filepath.Base(path), err)
		}
	}
}

// The file is watched: a change is served without anyone asking, and
// Close stops the watch (TestMain checks no goroutine is left).
func TestFileIsWatched(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	writeFile(t, path, tokenFile("a"))
	reloaded := make(chan error, 16)
	f, err := apitoken.OpenFile(path, apitoken.FileConfig{Poll: time.Millisecond, OnReload: func(_ *apitoken.Set, err error) {
		select {
		case reloaded <- err:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	replaceFile(t, path, tokenFile("b"))
	deadline := time.After(time.Minute)
	for !knows(f, "b") {
		select {
		case err := <-reloaded:
			if err != nil {
				t.Fatalf("reload: %v", err)
			}
		case <-deadline:
			t.Fatal("the new token was not served within a minute")
		}
	}
	if knows(f, "a") {
		t.Fatal("the removed token is still served")
	}
	f.Close()
	f.Close()
}
