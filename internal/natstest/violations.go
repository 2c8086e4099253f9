package natstest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
)

// Violations records the permission violations a connection is told of;
// pass Handler to nats.ErrorHandler. Safe for concurrent use.
type Violations struct {
	mu   sync.Mutex
	errs []string
}

// Handler is a nats.ErrHandler that records every asynchronous error.
func (v *Violations) Handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.errs = append(v.errs, err.Error())
}

// Snapshot returns the errors recorded so far.
func (v *Violations) Snapshot() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.errs...)
}

// Has reports whether a permission violation naming subject was recorded.
func (v *Violations) Has(subject string) bool {
	for _, e := range v.Snapshot() {
		if strings.Contains(e, "Permissions Violation") && strings.Contains(e, `"`+subject+`"`) {
			return true
		}
	}
	return false
}

// FilesHold reports whether any file under dir contains s: a store
// encrypted at rest must not hold a value written through its server.
func FilesHold(t testing.TB, dir, s string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || found {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		found = bytes.Contains(b, []byte(s))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
