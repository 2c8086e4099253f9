package hostnats_test

import (
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

// A renewal stored while its acknowledgement was lost does not cost the
// host its lease: the next renewal finds the key moved on by its own
// record, renews from there, and the lease stays held and renewed.
func TestHostLeaseRenewalOutlivesALostAcknowledgement(t *testing.T) {
	env := fabrictest.NewEnv(t)
	p := env.Srv.StartCutProxy(t)
	nc := p.Connect(t)
	ctx := fabrictest.Ctx(t)
	const lease = 900 * time.Millisecond
	leases, err := hostnats.NewHostLeases(ctx, nc, env.Cfg, fabrictest.Key, lease)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { leases.Close() })
	kv, err := env.JS.KeyValue(ctx, fabric.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	const inc, holder = "h1-1", "h1-2"
	if err := leases.Take(ctx, inc, holder); err != nil {
		t.Fatal(err)
	}
	revision := func() uint64 {
		e, err := kv.Get(ctx, "l."+inc)
		if err != nil {
			return 0
		}
		return e.Revision()
	}
	lost := p.LoseNextWrite(t, revision)
	testwait.Until(t, 0, "a renewal after the lost acknowledgement", func() bool { return revision() > lost })
	if got, err := leases.Holder(ctx, inc); err != nil || got != holder {
		t.Fatalf("Holder = %q, %v; want %q", got, err, holder)
	}
}

// A renewal that finds another holder's record gives the lease up: the
// read that saves a lost acknowledgement never takes back a lease taken.
func TestHostLeaseRenewalYieldsToAnotherHolder(t *testing.T) {
	env := fabrictest.NewEnv(t)
	ctx := fabrictest.Ctx(t)
	const lease = 900 * time.Millisecond
	first, err := hostnats.NewHostLeases(ctx, env.NC, env.Cfg, fabrictest.Key, lease)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { first.Close() })
	const inc = "h1-1"
	if err := first.Take(ctx, inc, "h1-2"); err != nil {
		t.Fatal(err)
	}
	kv, err := env.JS.KeyValue(ctx, fabric.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	// An unsealed record reads as lapsed, so a second host may take it.
	if _, err := kv.Put(ctx, "l."+inc, []byte("not a lease")); err != nil {
		t.Fatal(err)
	}
	second, err := hostnats.NewHostLeases(ctx, env.NC, env.Cfg, fabrictest.Key, lease)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { second.Close() })
	if err := second.Take(ctx, inc, "h2-1"); err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "l."+inc)
	if err != nil {
		t.Fatal(err)
	}
	// Three renewals of the second holder span two of the first's: had the
	// first taken the key back, the second's next renewal would have lost it.
	from := e.Revision()
	testwait.Until(t, 0, "the second holder's renewals", func() bool {
		e, err := kv.Get(ctx, "l."+inc)
		return err == nil && e.Revision() >= from+3
	})
	if got, err := second.Holder(ctx, inc); err != nil || got != "h2-1" {
		t.Fatalf("Holder = %q, %v; want h2-1", got, err)
	}
}
