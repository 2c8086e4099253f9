package workeragent_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/metrics"
	"github.com/splashfabric/splashfabric/workeragent"
)

// syncBuffer is a log sink the agent's goroutines write while the test
// reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

// TestGarbageFloodCostsACounter floods a tool's invocation subject with
// garbage while its only handler slot is taken. Every message is refused
// and terminated without waiting for the slot (so garbage never queues
// ahead of real calls), each is counted by reason, and the log gets a few
// lines a second rather than one per message.
func TestGarbageFloodCostsACounter(t *testing.T) {
	e := newEnv(t)
	const flood = 400
	reg := prometheus.NewRegistry()
	wm := metrics.NewWorker(reg, metrics.WithTools("busy"))
	var logs syncBuffer
	release := make(chan struct{})
	started := make(chan string, 4)
	h := workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
		started <- c.Input.Text
		if c.Input.Text == "hold" {
			select {
			case <-release:
			case <-ctx.Done():
				return workeragent.Output{}, ctx.Err()
			}
		}
		return workeragent.Result(strings.ToUpper(c.Input.Text)), nil
	})
	a := e.startAgentWith("w1", func(cfg *workeragent.Config) {
		cfg.Observer = wm
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}, func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "busy"), h, workeragent.Concurrency(1)))
	})

	e.publish(e.newInvoke("busy", "hold"))
	if got := testwait.Receive(t, 0, "the held call to start", started); got != "hold" {
		t.Fatalf("started %q, want hold", got)
	}
	subject, err := fabric.InvokeSubject("busy")
	must(t, err)
	began := time.Now()
	for i := range flood {
		m := nats.NewMsg(subject)
		m.Data = []byte(fmt.Sprintf("garbage %d\n", i))
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("garbage-%d", i))
		m.Header.Set(fabric.HeaderHost, e.hostID)
		if _, err := e.js.PublishMsgAsync(m); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-e.js.PublishAsyncComplete():
	case <-time.After(testwait.DefaultTimeout):
		t.Fatal("flood not stored")
	}
	// The slot is still taken: the garbage was refused without it.
	testwait.Until(t, 0, "the flood counted", func() bool { return a.Stats().Forged == flood })
	testwait.Until(t, 0, "the flood terminated, the held call left", func() bool { return e.pending(t, "busy") == 1 })
	elapsed := time.Since(began)
	if got := counterValue(t, reg, "splash_worker_auth_failures_total", "reason", metrics.AuthMalformed); got != flood {
		t.Fatalf("malformed refusals counted = %v, want %d", got, flood)
	}
	// Five lines per reason per started second of the flood, and one more
	// second's worth for a window straddling the start.
	lines := logs.count("rejected invocation")
	if bound := 5 * (int(elapsed/time.Second) + 2); lines > bound || lines == 0 {
		t.Fatalf("%d log lines for %d garbage messages over %v, want between 1 and %d", lines, flood, elapsed, bound)
	}

	close(release)
	good := e.newInvoke("busy", "good")
	e.publish(good)
	for {
		res := e.result(t)
		if res.RequestID == good.RequestID {
			if res.Payload.Text != "GOOD" {
				t.Fatalf("result = %+v", res)
			}
			break
		}
	}
}

// counterValue reads one series of a counter from reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	must(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no series %s{%s=%q}", name, label, value)
	return 0
}
