package logattr_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/internal/logattr"
)

func TestUnique(t *testing.T) {
	tests := []struct {
		name string
		log  func(*slog.Logger)
		want string
	}{
		{"with, then with", func(l *slog.Logger) {
			l.With("tool", "a").With("tool", "b").Info("m")
		}, `"tool":"a"`},
		{"with, then the record", func(l *slog.Logger) {
			l.With("tool", "a").Info("m", "tool", "b", "x", 1)
		}, `"tool":"a","x":1`},
		{"twice in the record", func(l *slog.Logger) {
			l.Info("m", "x", 1, "x", 2)
		}, `"x":1`},
		{"a group is another level", func(l *slog.Logger) {
			l.With("tool", "a").WithGroup("g").Info("m", "tool", "b")
		}, `"tool":"a","g":{"tool":"b"}`},
		{"twice inside a group", func(l *slog.Logger) {
			l.WithGroup("g").With("k", 1).Info("m", "k", 2)
		}, `"g":{"k":1}`},
		{"a group attribute counts as its key", func(l *slog.Logger) {
			l.With("g", 1).Info("m", slog.Group("g", "k", 2))
		}, `"g":1`},
		{"nothing repeated", func(l *slog.Logger) {
			l.With("a", 1).Info("m", "b", 2)
		}, `"a":1,"b":2`},
		{"siblings do not share keys", func(l *slog.Logger) {
			base := l.With("a", 1)
			_ = base.With("b", 2)
			base.Info("m", "b", 3)
		}, `"a":1,"b":3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropTime})
			tt.log(slog.New(logattr.Unique(h)))
			got := strings.TrimSpace(buf.String())
			want := `{"level":"INFO","msg":"m",` + tt.want + `}`
			if got != want {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("not JSON: %s", got)
			}
		})
	}
}

func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

func ExampleUnique() {
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: dropTime})
	log := slog.New(logattr.Unique(h)).With("worker", "w-1")
	log.With("worker", "w-1", "tool", "text.upper").Info("tool ready", "tool", "text.upper")
	// Output: level=INFO msg="tool ready" worker=w-1 tool=text.upper
}
