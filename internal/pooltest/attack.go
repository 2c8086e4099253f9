package pooltest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
)

// Host is the fabric's host as the attack table needs it: through its API
// (splash dev, the compose cluster) or its loop (in process).
type Host interface {
	// Submit starts a script and returns its session id.
	Submit(ctx context.Context, source string) (string, error)
	// Operations lists the session's live operations.
	Operations(ctx context.Context, session string) ([]Operation, error)
	// Final waits for the session to end and returns its value, or an
	// error if it did not complete.
	Final(ctx context.Context, session string) (string, error)
	// AuthFailures reads the host's splash_auth_failures_total, by reason.
	AuthFailures(ctx context.Context) (map[string]float64, error)
}

// Operation is one live operation of a session.
type Operation struct {
	RequestID string
	Tool      string
	Attempt   uint32
}

// Call is a tool call a script makes, and its genuine answer.
type Call struct {
	Tool, Input, Want string
}

// Fabric is a deployment under attack.
type Fabric struct {
	// URL and Options reach its NATS nodes (TLS, say); the attack adds
	// the attacker's credentials.
	URL     string
	Options []nats.Option
	HostID  string
	Host    Host
	// Attacker is the compromised pool, with real credentials; Own is a
	// call of one of its tools, which must keep working.
	Attacker *Pool
	Own      Call
	// Victim is another pool; Target is a call of one of its tools that
	// stays in flight until Release is called (or, without Release, for
	// long enough that every forgery arrives first: demo.sleep of a few
	// seconds).
	Victim  *Pool
	Target  Call
	Release func()
	// NodeViolations, if set, reads how many permission violations the
	// NATS nodes counted for identity (splash_nats_violations_total).
	NodeViolations func(ctx context.Context, identity string) (float64, error)
}

// refusals records the permission violations the attacker's connection
// is told of.
type refusals struct {
	mu  sync.Mutex
	all []*fabric.PermissionError
}

func (r *refusals) add(pe *fabric.PermissionError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, pe)
}

func (r *refusals) has(op, subject string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, pe := range r.all {
		if pe.Subject == subject && (op == "" || pe.Op == op) {
			return true
		}
	}
	return false
}

func (r *refusals) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.all)
}

// move is one thing the attacker may not do on NATS: subscribe to, or
// publish on, subject.
type move struct {
	what    string
	subject string
	sub     bool
}

// Run makes every move of the attack table against f, each a subtest.
func Run(t *testing.T, f Fabric) {
	t.Helper()
	ctx := t.Context()
	seen := &refusals{}
	watch := fabric.NewPermissionWatch(f.Attacker.Identity(), seen.add, nil)
	opts := append(append([]nats.Option{nats.Name("attacker " + f.Attacker.Name), watch.Option()}, f.Options...), f.Attacker.ConnectOptions(t)...)
	nc, err := nats.Connect(f.URL, opts...)
	if err != nil {
		t.Fatalf("the attacker connects with its pool's credentials: %v", err)
	}
	t.Cleanup(nc.Close)
	before, err := f.Host.AuthFailures(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var nodeBefore float64
	if f.NodeViolations != nil {
		if nodeBefore, err = f.NodeViolations(ctx, f.Attacker.Name); err != nil {
			t.Fatal(err)
		}
	}

	// The genuine call the forgeries go after, in flight throughout.
	target, err := f.Host.Submit(ctx, fmt.Sprintf(`await tool.start(%q, %q)`, f.Target.Tool, f.Target.Input))
	if err != nil {
		t.Fatal(err)
	}
	var op Operation
	testwait.Until(t, time.Minute, "the target call to be dispatched", func() bool {
		ops, err := f.Host.Operations(ctx, target)
		if err != nil || len(ops) != 1 || ops[0].RequestID == "" {
			return false
		}
		op = ops[0]
		return true
	})

	t.Run("NATS refuses", func(t *testing.T) {
		for _, m := range natsMoves(f, op) {
			t.Run(m.what, func(t *testing.T) {
				if m.sub {
					if _, err := nc.SubscribeSync(m.subject); err != nil {
						t.Fatal(err)
					}
				} else if err := nc.Publish(m.subject, []byte("{}")); err != nil {
					t.Fatal(err)
				}
				if err := nc.Flush(); err != nil {
					t.Fatal(err)
				}
				op := "publish"
				if m.sub {
					op = "subscribe"
				}
				testwait.Until(t, 30*time.Second, "a permission violation for "+m.subject, func() bool { return seen.has(op, m.subject) })
			})
		}
	})

	t.Run("JetStream calls fail at once as permission denied", func(t *testing.T) {
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		victimConsumer := fabric.ConsumerName(f.Target.Tool)
		calls := []struct {
			what string
			do   func(context.Context) error
		}{
			{"update another pool's consumer to deliver elsewhere", func(ctx context.Context) error {
				_, err := js.CreateOrUpdateConsumer(ctx, fabric.StreamInvoke, jetstream.ConsumerConfig{
					Durable: victimConsumer, FilterSubject: "splash.invoke.blackhole", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 1,
				})
				return err
			}},
			{"delete another pool's consumer", func(ctx context.Context) error { return js.DeleteConsumer(ctx, fabric.StreamInvoke, victimConsumer) }},
			{"update its own consumer", func(ctx context.Context) error {
				_, err := js.CreateOrUpdateConsumer(ctx, fabric.StreamInvoke, jetstream.ConsumerConfig{
					Durable: fabric.ConsumerName(f.Own.Tool), FilterSubject: "splash.invoke." + f.Own.Tool, AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 1,
				})
				return err
			}},
			{"open the session archive", func(ctx context.Context) error {
				_, err := js.KeyValue(ctx, fabric.BucketSessions)
				return err
			}},
			{"open another pool's journal", func(ctx context.Context) error {
				_, err := js.KeyValue(ctx, fabric.JournalBucket(f.Victim.Name))
				return err
			}},
			{"open the ledger stream", func(ctx context.Context) error {
				_, err := js.Stream(ctx, fabric.StreamLedger)
				return err
			}},
		}
		for _, c := range calls {
			t.Run(c.what, func(t *testing.T) {
				// A deadline far above a round trip: the refusal must end
				// the call, not the deadline.
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				gctx, release := watch.Guard(cctx)
				defer release()
				err := fabric.Denied(gctx, c.do(gctx))
				var pe *fabric.PermissionError
				if !errors.Is(err, fabric.ErrPermissionDenied) || !errors.As(err, &pe) {
					t.Fatalf("err = %v, want a permission denied error", err)
				}
				if pe.User != f.Attacker.Identity() || !strings.HasPrefix(pe.Subject, "$JS.API.") {
					t.Fatalf("refusal %+v does not name the user and the API subject", pe)
				}
			})
		}
	})

	// Forgeries that reach the host: a result for the target's
	// operation, sealed with the attacker's own ring, each under a frame
	// number of its own so the attacker's own replay window does not hide
	// one behind another. The first also takes the message id a
	// guessable scheme would give the genuine answer, which must not make
	// the stream drop it.
	codec, err := fabric.NewCodec(f.Attacker.Ring)
	if err != nil {
		t.Fatal(err)
	}
	forge := func(k uint32, subject, tool, msgID string) {
		t.Helper()
		p := protocol.TextPayload("FORGED-BY-POOL-" + f.Attacker.Name)
		m, err := codec.SealWorker(op.RequestID, op.Attempt, k, protocol.ResultMessage(protocol.Result{
			RequestID: op.RequestID, Attempt: op.Attempt, Status: protocol.ResultSucceeded, Payload: &p,
		}))
		if err != nil {
			t.Fatal(err)
		}
		m.Subject = subject
		m.Header.Set(fabric.HeaderTool, tool)
		m.Header.Set(fabric.HeaderMsgID, msgID)
		m.Header.Set(fabric.HeaderWorker, "attacker")
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := js.PublishMsg(pctx, m); err != nil {
			t.Fatalf("the attacker publishes on its own subject %s: %v", subject, err)
		}
	}
	t.Run("forged answers are refused by the host", func(t *testing.T) {
		own := f.Own.Tool
		forge(1, fabric.EventsSubject(f.HostID, own), own, fmt.Sprintf("r/%s/%d/result", op.RequestID, op.Attempt))
		forge(2, fabric.EventsSubject(f.HostID, own), f.Target.Tool, "forged-2")
		forge(3, fabric.AnswerSubject(f.HostID, own, "forged"), own, "forged-3")
		testwait.Until(t, time.Minute, "the host to count the forgeries", func() bool {
			after, err := f.Host.AuthFailures(ctx)
			return err == nil && after["wrong_pool"]-before["wrong_pool"] >= 2 && after["wrong_subject"]-before["wrong_subject"] >= 1
		})
	})

	t.Run("the genuine answer wins", func(t *testing.T) {
		if f.Release != nil {
			f.Release()
		}
		fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		got, err := f.Host.Final(fctx, target)
		if err != nil || got != f.Target.Want {
			t.Fatalf("the target call: %q, %v; want %q", got, err, f.Target.Want)
		}
	})

	t.Run("the attacker's own pool keeps working", func(t *testing.T) {
		id, err := f.Host.Submit(ctx, fmt.Sprintf(`await tool.start(%q, %q)`, f.Own.Tool, f.Own.Input))
		if err != nil {
			t.Fatal(err)
		}
		fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if got, err := f.Host.Final(fctx, id); err != nil || got != f.Own.Want {
			t.Fatalf("its own call: %q, %v; want %q", got, err, f.Own.Want)
		}
	})

	if f.NodeViolations != nil {
		t.Run("the NATS nodes count every refusal", func(t *testing.T) {
			want := float64(seen.count())
			testwait.Until(t, time.Minute, "the nodes to count the attacker's violations", func() bool {
				n, err := f.NodeViolations(ctx, f.Attacker.Name)
				return err == nil && n-nodeBefore >= want
			})
		})
	}
	t.Logf("pool %s attacking pool %s: %d NATS refusals, host auth failures %v", f.Attacker.Name, f.Victim.Name, seen.count(), diff(f, before))
}

// diff is what the host counted during the attack, for the log.
func diff(f Fabric, before map[string]float64) map[string]float64 {
	after, err := f.Host.AuthFailures(context.Background())
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// natsMoves are the publishes and subscriptions the attacker's pool may not
// make.
func natsMoves(f Fabric, op Operation) []move {
	victimTool, ownTool := f.Target.Tool, f.Own.Tool
	victimToken, victimPool := fabric.ToolToken(victimTool), fabric.PoolToken(f.Victim.Name)
	victimJournal := fabric.JournalBucket(f.Victim.Name)
	victimConsumer := fabric.ConsumerName(victimTool)
	return []move{
		{"subscribe to every inbox", "_INBOX.>", true},
		{"subscribe to everything", ">", true},
		{"subscribe to the host's inbox", fabric.InboxPrefix("host") + ".>", true},
		{"subscribe to the other pool's inbox", fabric.InboxPrefix(f.Victim.Identity()) + ".>", true},
		{"subscribe to the other pool's invocations", "splash.invoke." + victimTool, true},
		{"subscribe to the other pool's cancellations", "splash.cancel." + victimTool, true},
		{"subscribe to the other pool's reconciliations", "splash.reconcile." + victimTool, true},
		{"subscribe to every answer", "splash.events.>", true},
		{"subscribe to the other pool's answers", "splash.events.*." + victimToken, true},
		{"publish an invocation of its own tool", "splash.invoke." + ownTool, false},
		{"publish an invocation of the other pool's tool", "splash.invoke." + victimTool, false},
		{"answer on the other pool's events subject", fabric.EventsSubject(f.HostID, victimTool), false},
		{"store an answer on the other pool's answer subject", fabric.AnswerSubject(f.HostID, victimTool, "k"), false},
		{"read the other pool's stored answers", "$JS.API.DIRECT.GET." + fabric.StreamEvents + "." + fabric.AnswerSubject(f.HostID, victimTool, "k"), false},
		{"read the events stream by sequence", "$JS.API.STREAM.MSG.GET." + fabric.StreamEvents, false},
		{"read a host's events", "$JS.API.CONSUMER.CREATE." + fabric.StreamEvents + ".spy", false},
		{"broadcast a cancellation", "splash.cancel." + victimTool, false},
		{"send a reconciliation request", "splash.reconcile." + victimTool, false},
		{"write a cancel record", "$KV." + fabric.BucketCancel + "." + victimPool + ".x", false},
		{"read the other pool's cancel records", "$JS.API.DIRECT.GET.KV_" + fabric.BucketCancel + ".$KV." + fabric.BucketCancel + "." + victimPool + ".x", false},
		{"watch the other pool's cancel records", "$JS.API.CONSUMER.CREATE.KV_" + fabric.BucketCancel + ".spy.$KV." + fabric.BucketCancel + "." + victimPool + ".*", false},
		{"watch every cancel record", "$JS.API.CONSUMER.CREATE.KV_" + fabric.BucketCancel + ".spy", false},
		{"read a session record", "$JS.API.DIRECT.GET.KV_" + fabric.BucketSessions + ".$KV." + fabric.BucketSessions + ".s.x", false},
		{"read the session archive by sequence", "$JS.API.STREAM.MSG.GET.KV_" + fabric.BucketSessions, false},
		{"watch the session archive", "$JS.API.CONSUMER.CREATE.KV_" + fabric.BucketSessions + ".spy", false},
		{"write a session record", "$KV." + fabric.BucketSessions + ".s.x", false},
		{"read a ledger", "$JS.API.DIRECT.GET." + fabric.StreamLedger + ".splash.ledger.x", false},
		{"read the ledgers by sequence", "$JS.API.STREAM.MSG.GET." + fabric.StreamLedger, false},
		{"read the ledgers through a consumer", "$JS.API.CONSUMER.CREATE." + fabric.StreamLedger + ".spy", false},
		{"write a ledger", "splash.ledger.x", false},
		{"read the other pool's journal", "$JS.API.DIRECT.GET.KV_" + victimJournal + ".$KV." + victimJournal + ".x", false},
		{"read the other pool's journal by sequence", "$JS.API.STREAM.MSG.GET.KV_" + victimJournal, false},
		{"watch the other pool's journal", "$JS.API.CONSUMER.CREATE.KV_" + victimJournal + ".spy", false},
		{"write the other pool's journal", "$KV." + victimJournal + ".x", false},
		{"write the shared journal", "$KV." + fabric.JournalBucketPrefix + ".x", false},
		{"create the other pool's consumer", "$JS.API.CONSUMER.CREATE." + fabric.StreamInvoke + "." + victimConsumer, false},
		{"create the other pool's consumer with a filter", "$JS.API.CONSUMER.CREATE." + fabric.StreamInvoke + "." + victimConsumer + ".splash.invoke.blackhole", false},
		{"create a durable the old way", "$JS.API.CONSUMER.DURABLE.CREATE." + fabric.StreamInvoke + "." + victimConsumer, false},
		{"delete the other pool's consumer", "$JS.API.CONSUMER.DELETE." + fabric.StreamInvoke + "." + victimConsumer, false},
		{"pull the other pool's invocations", "$JS.API.CONSUMER.MSG.NEXT." + fabric.StreamInvoke + "." + victimConsumer, false},
		{"ack the other pool's invocations", "$JS.ACK." + fabric.StreamInvoke + "." + victimConsumer + ".1.1.1.1.0", false},
		{"create its own consumer", "$JS.API.CONSUMER.CREATE." + fabric.StreamInvoke + "." + fabric.ConsumerName(ownTool), false},
		{"delete its own consumer", "$JS.API.CONSUMER.DELETE." + fabric.StreamInvoke + "." + fabric.ConsumerName(ownTool), false},
		{"delete the invocation stream", "$JS.API.STREAM.DELETE." + fabric.StreamInvoke, false},
		{"purge the invocation stream", "$JS.API.STREAM.PURGE." + fabric.StreamInvoke, false},
		{"list streams", "$JS.API.STREAM.NAMES", false},
		{"publish on another client's inbox", fabric.InboxPrefix("host") + ".x", false},
		{"answer the operation on the host's inbox", "_INBOX." + op.RequestID, false},
	}
}
