package ratelog_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/splashfabric/splashfabric/internal/ratelog"
)

func TestLimiterBoundsLinesPerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		l := ratelog.New(slog.New(slog.NewTextHandler(&buf, nil)), time.Second, 3)
		for range 1000 {
			l.Warn("bad_tag", "rejected frame", "reason", "bad_tag")
		}
		l.Warn("bad_role", "rejected frame", "reason", "bad_role")
		if got := strings.Count(buf.String(), "reason=bad_tag"); got != 3 {
			t.Fatalf("bad_tag lines in the first interval = %d, want 3\n%s", got, buf.String())
		}
		if got := strings.Count(buf.String(), "reason=bad_role"); got != 1 {
			t.Fatalf("a key's flood silenced another key: bad_role lines = %d, want 1", got)
		}
		buf.Reset()
		time.Sleep(time.Second)
		l.Warn("bad_tag", "rejected frame", "reason", "bad_tag")
		if !strings.Contains(buf.String(), "suppressed=997") {
			t.Fatalf("first line of the next interval = %q, want suppressed=997", buf.String())
		}
		buf.Reset()
		l.Warn("bad_tag", "rejected frame", "reason", "bad_tag")
		if strings.Contains(buf.String(), "suppressed") {
			t.Fatalf("the suppressed count was carried twice: %q", buf.String())
		}
	})
}

func TestLimiterDefaults(t *testing.T) {
	var buf bytes.Buffer
	l := ratelog.New(slog.New(slog.NewTextHandler(&buf, nil)), 0, 0)
	l.Info("k", "one")
	l.Info("k", "two")
	if got := strings.Count(buf.String(), "msg="); got != 1 {
		t.Fatalf("lines = %d, want 1 (burst below 1 means 1)\n%s", got, buf.String())
	}
}
