package fabric

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

var (
	pullerSeeds = flag.Int("puller.seeds", 0, "run the puller's randomized test with this many random seeds besides the fixed ones")
	pullerSeed  = flag.Uint64("puller.seed", 0, "replay the puller's randomized test with this seed alone")
)

// pullerFixedSeeds always run; -puller.seeds adds random ones,
// -puller.seed replays one.
var pullerFixedSeeds = []uint64{1, 2, 3, 42, 77}

// TestPullerAccountingRandomized drives a Puller through generated runs of
// what its inbox can give it (messages, idle heartbeats, requests ending
// owing some messages, a leadership change, refusals) and of reconnects,
// against a model of its count of messages asked for. After every step
// the count must be the model's, within the window, and, unless the last
// word was a refusal, high enough that no pull decision was skipped (less
// than half the window free). At the end the pull requests the server
// received must add up to what the model asked for.
func TestPullerAccountingRandomized(t *testing.T) {
	srv := natstest.Start(t)
	nc, observer := srv.Connect(), srv.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(20*time.Second))
	defer cancel()
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PULLMODEL", Subjects: []string{"pullmodel.>"}, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range testwait.Seeds(pullerFixedSeeds, *pullerSeeds, *pullerSeed) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			// A context per seed: -puller.seeds runs thousands of them.
			ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(20*time.Second))
			defer cancel()
			name := "c" + strconv.FormatUint(seed, 10)
			cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy})
			if err != nil {
				t.Fatal(err)
			}
			// The seed's consumer goes with it, once its puller has
			// stopped: the server caps the consumers a stream may hold.
			defer func() {
				if err := stream.DeleteConsumer(ctx, name); err != nil {
					t.Error(err)
				}
			}()
			if trace, err := runPullerModel(nc, observer, cons, seed); err != nil {
				t.Fatalf("seed %d: %v\nreplay: go test ./fabric -run TestPullerAccountingRandomized -puller.seed %d\n%s",
					seed, err, seed, strings.Join(trace, "\n"))
			}
		})
	}
}

// pullerModel is what a Puller's count of messages asked for should be.
type pullerModel struct {
	window, threshold int
	asked             int
	refused           bool // the last word was a refusal: nothing asked until the next
	requested         int  // every message asked for so far
}

// refill is the pull decision: ask for the free window once half of it is
// free.
func (m *pullerModel) refill() {
	m.refused = false
	if free := m.window - m.asked; free >= m.threshold {
		m.asked += free
		m.requested += free
	}
}

func runPullerModel(nc, observer *nats.Conn, cons jetstream.Consumer, seed uint64) (trace []string, err error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e11e7))
	window := 1 + rng.IntN(16)
	m := &pullerModel{window: window, threshold: (window + 1) / 2}

	var mu sync.Mutex
	received := 0
	info := cons.CachedInfo()
	sub, err := observer.Subscribe(fmt.Sprintf("$JS.API.CONSUMER.MSG.NEXT.%s.%s", info.Stream, info.Name), func(msg *nats.Msg) {
		var req struct{ Batch int }
		if err := json.Unmarshal(msg.Data, &req); err == nil {
			mu.Lock()
			received += req.Batch
			mu.Unlock()
		}
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := observer.Flush(); err != nil {
		return nil, err
	}

	p, err := StartPuller(nc, cons, PullConfig{Window: window, Handle: func(jetstream.Msg) {}})
	if err != nil {
		return nil, err
	}
	defer p.Stop(5 * time.Second)
	m.refill()
	trace = append(trace, fmt.Sprintf("window %d, threshold %d", m.window, m.threshold))

	status := func(code, desc string, pending int) *nats.Msg {
		msg := nats.NewMsg(p.Inbox())
		msg.Header.Set(statusHeader, code)
		msg.Header.Set(descriptionHeader, desc)
		if pending >= 0 {
			msg.Header.Set(pendingHeader, strconv.Itoa(pending))
		}
		return msg
	}
	for step := range 300 {
		var what string
		switch k := rng.IntN(10); {
		case k < 4 && m.asked > 0:
			what = "message"
			p.receive(&nats.Msg{Subject: p.Inbox(), Data: []byte("x")})
			m.asked--
			m.refill()
		case k < 5:
			what = "idle heartbeat"
			p.receive(status("100", "Idle Heartbeat", -1))
		case k < 7 && m.asked > 0:
			owed := 1 + rng.IntN(m.asked)
			code, desc := "408", "Request Timeout"
			if rng.IntN(2) == 0 {
				code, desc = "409", "Batch Completed"
			}
			what = fmt.Sprintf("%s owing %d", code, owed)
			p.receive(status(code, desc, owed))
			m.asked -= owed
			m.refill()
		case k < 8:
			what = "leadership change"
			p.receive(status("409", "Leadership Change", -1))
			m.asked = 0
			m.refill()
		case k < 9:
			refusals := [][2]string{{"409", "Consumer Deleted"}, {"503", ""}, {"400", "Bad Request"}}
			r := refusals[rng.IntN(len(refusals))]
			what = "refused " + r[0] + " " + r[1]
			p.receive(status(r[0], r[1], -1))
			m.asked, m.refused = 0, true
		default:
			what = "reconnect"
			p.restart()
			m.asked = 0
			m.refill()
		}
		p.mu.Lock()
		got := p.asked
		p.mu.Unlock()
		trace = append(trace, fmt.Sprintf("%3d %-26s asked %d (model %d)", step, what, got, m.asked))
		switch {
		case got != m.asked:
			return trace, fmt.Errorf("step %d (%s): asked %d, model %d", step, what, got, m.asked)
		case got < 0 || got > m.window:
			return trace, fmt.Errorf("step %d (%s): asked %d outside the window of %d", step, what, got, m.window)
		case !m.refused && m.window-got >= m.threshold:
			return trace, fmt.Errorf("step %d (%s): a pull decision was skipped: %d of %d free", step, what, m.window-got, m.window)
		}
	}
	if err := nc.Flush(); err != nil {
		return trace, err
	}
	deadline := time.Now().Add(testwait.DefaultTimeout)
	for {
		mu.Lock()
		got := received
		mu.Unlock()
		if got == m.requested {
			return trace, nil
		}
		if got > m.requested || time.Now().After(deadline) {
			return trace, fmt.Errorf("the server received requests for %d messages, the model asked for %d", got, m.requested)
		}
		if err := observer.Flush(); err != nil {
			return trace, err
		}
	}
}
