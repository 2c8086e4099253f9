// Package pooltest plays a compromised worker pool against a deployed
// fabric: with one pool's real NATS credentials and key ring, it makes
// every move the pool isolation of docs/topology.md ("Pools", "Who can do
// what") must refuse, and checks each is refused or ignored, counted, that
// the genuine answer wins and that the attacker's own pool keeps working.
// The same table runs against an in-process fabric (internal/itest), the
// compose cluster (e2e) and `splash dev` (cmd/splash).
package pooltest

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	natsconf "github.com/splashfabric/splashfabric/deploy/nats"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

// Pool is one pool's credentials as its workers hold them: its NATS nkey
// and its key ring.
type Pool struct {
	Name  string
	Tools []string
	Key   nkeys.KeyPair
	Ring  protocol.KeyRing
}

// NATSPool is the pool as the NATS nodes' configuration names it.
func (p *Pool) NATSPool(t testing.TB) natsconf.Pool {
	t.Helper()
	pub, err := p.Key.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return natsconf.Pool{Name: p.Name, Tools: p.Tools, NKey: pub}
}

// Identity is the pool's identity in inbox prefixes and logs.
func (p *Pool) Identity() string { return fabric.PoolIdentity(p.Name) }

// ConnectOptions authenticate as the pool, with its private inbox prefix,
// as its workers connect.
func (p *Pool) ConnectOptions(t testing.TB) []nats.Option {
	t.Helper()
	pub, err := p.Key.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return []nats.Option{nats.Nkey(pub, p.Key.Sign), nats.CustomInboxPrefix(fabric.InboxPrefix(p.Identity()))}
}

// NewPool makes a pool of tools with fresh credentials.
func NewPool(t testing.TB, name string, tools ...string) *Pool {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	k, err := protocol.GenerateSessionKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Pool{Name: name, Tools: tools, Key: kp, Ring: k.Ring()}
}

// PoolsOf makes a pool with fresh credentials for each pool set's tools
// name, as a deployment's `splash keys init` would.
func PoolsOf(t testing.TB, set *toolspec.Set) map[string]*Pool {
	t.Helper()
	out := map[string]*Pool{}
	for _, name := range set.Names() {
		tool, _ := set.Lookup(name)
		p := out[tool.Pool()]
		if p == nil {
			p = NewPool(t, tool.Pool())
			out[tool.Pool()] = p
		}
		p.Tools = append(p.Tools, name)
	}
	return out
}

// NATSPools lists pools for natsconf.Users or natsconf.Render.
func NATSPools(t testing.TB, pools map[string]*Pool) []natsconf.Pool {
	t.Helper()
	out := make([]natsconf.Pool, 0, len(pools))
	for _, p := range pools {
		out = append(out, p.NATSPool(t))
	}
	return out
}

// Rings maps each pool to its ring, as a host holds them.
func Rings(pools map[string]*Pool) map[string]protocol.Keys {
	out := make(map[string]protocol.Keys, len(pools))
	for name, p := range pools {
		out[name] = p.Ring
	}
	return out
}
