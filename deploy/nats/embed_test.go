package natsconf_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	natsconf "github.com/splashfabric/splashfabric/deploy/nats"
)

var passwords = map[string]string{natsconf.UserHost: "host-pw", natsconf.UserOps: "ops-pw"}

func userKey(t testing.TB) string {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// The embedded part is the file's, byte for byte, and holds every
// definition the users need.
func TestPermissionsAreSplashConfs(t *testing.T) {
	raw, err := os.ReadFile("splash.conf")
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != natsconf.SplashConf() {
		t.Fatal("the embedded splash.conf is not the file")
	}
	p := natsconf.Permissions()
	if !strings.Contains(string(raw), p) {
		t.Fatal("the embedded permissions are not splash.conf's")
	}
	for _, want := range []string{"HOST_PERMISSIONS = {", "OPS_PERMISSIONS = {", "POOL_PERMISSIONS = {", "accounts {"} {
		if !strings.Contains(p, want) {
			t.Errorf("the users part of splash.conf lacks %q", want)
		}
	}
	for user, v := range natsconf.PasswordVars {
		if !strings.Contains(p, "user: "+user+", password: $"+v) {
			t.Errorf("user %s does not read its password from $%s", user, v)
		}
	}
	// Nothing a dev node must not take: no listener, TLS or store.
	for _, never := range []string{"port:", "tls {", "cluster {", "jetstream {", "store_dir"} {
		if strings.Contains(p, never) {
			t.Errorf("the users part holds %q", never)
		}
	}
	// Nobody may read every inbox.
	if strings.Contains(p, `"_INBOX.>"`) {
		t.Error("a user may subscribe to _INBOX.>")
	}
}

func TestUsersConfiguresTheServer(t *testing.T) {
	// The environment must not reach the passwords.
	t.Setenv("SPLASH_NATS_HOST_PASSWORD", "from-the-environment")
	text, err := natsconf.Users(passwords, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := &server.Options{}
	if err := opts.ProcessConfigString(text); err != nil {
		t.Fatalf("ProcessConfigString: %v", err)
	}
	got := map[string]string{}
	for _, u := range opts.Users {
		got[u.Username] = u.Password
		if u.Account == nil || u.Account.Name != "SPLASH" {
			t.Errorf("user %s in account %v", u.Username, u.Account)
		}
	}
	for user, pw := range passwords {
		if got[user] != pw {
			t.Errorf("user %s password %q, want %q", user, got[user], pw)
		}
	}
	if opts.NoAuthUser != "" {
		t.Errorf("no_auth_user %q: anonymous clients would get a user", opts.NoAuthUser)
	}
}

// Each pool becomes one nkey user whose permissions name its own tools,
// its own inbox, journal and cancel records, and nothing of another
// pool's; the demo.ledger bucket only for the pool serving demo.ledger.
func TestUsersRendersOneUserPerPool(t *testing.T) {
	demo := natsconf.Pool{Name: "demo", Tools: []string{"demo.echo", "demo.ledger"}, NKey: userKey(t)}
	text := natsconf.Pool{Name: "text", Tools: []string{"demo.upper"}, NKey: userKey(t)}
	conf, err := natsconf.Users(passwords, []natsconf.Pool{demo, text})
	if err != nil {
		t.Fatal(err)
	}
	opts := &server.Options{}
	if err := opts.ProcessConfigString(conf); err != nil {
		t.Fatalf("ProcessConfigString: %v\n%s", err, conf)
	}
	perms := map[string]*server.Permissions{}
	for _, u := range opts.Nkeys {
		perms[u.Nkey] = u.Permissions
		if u.Account == nil || u.Account.Name != "SPLASH" {
			t.Errorf("nkey %s in account %v", u.Nkey, u.Account)
		}
	}
	d, x := perms[demo.NKey], perms[text.NKey]
	if d == nil || x == nil || len(opts.Nkeys) != 2 {
		t.Fatalf("nkey users %v", opts.Nkeys)
	}
	has := func(list []string, s string) bool { return slices.Contains(list, s) }
	for _, want := range []string{
		"splash.events.*.pool_demo_echo", "splash.events.*.pool_demo_ledger.*",
		"$JS.API.CONSUMER.MSG.NEXT.SPLASH_INVOKE.pool_demo_echo",
		"$KV.splash_idempotency_pool_demo.>", "$KV.splash_effects.>",
		"$JS.API.CONSUMER.CREATE.KV_splash_cancel.*.$KV.splash_cancel.pool_demo.*",
	} {
		if !has(d.Publish.Allow, want) {
			t.Errorf("pool demo may not publish %q", want)
		}
	}
	for _, never := range []string{"splash.events.*.pool_demo_echo", "$KV.splash_effects.>", "$KV.splash_idempotency_pool_demo.>"} {
		if has(x.Publish.Allow, never) {
			t.Errorf("pool text may publish %q", never)
		}
	}
	if !slices.Equal(x.Subscribe.Allow, []string{"_INBOX_pool_text.>", "splash.cancel.demo.upper", "splash.reconcile.demo.upper"}) {
		t.Errorf("pool text subscribes to %q", x.Subscribe.Allow)
	}
	for _, p := range []*server.Permissions{d, x} {
		for _, s := range p.Publish.Allow {
			if strings.Contains(s, "CONSUMER.CREATE.SPLASH_INVOKE") || strings.Contains(s, "CONSUMER.DELETE.SPLASH_INVOKE") || strings.Contains(s, "TOOL") || strings.Contains(s, "POOL_TOKEN") {
				t.Errorf("a pool may publish %q", s)
			}
		}
		if p.Response == nil {
			t.Error("a pool may not answer reconciliation requests")
		}
	}
}

func TestUsersRefusesPasswords(t *testing.T) {
	for _, pw := range []string{"", `a"b`, `a\b`, "a$b", "a\nb"} {
		p := map[string]string{natsconf.UserHost: "h", natsconf.UserOps: pw}
		if _, err := natsconf.Users(p, nil); !errors.Is(err, natsconf.ErrInvalidPassword) {
			t.Errorf("password %q: %v, want ErrInvalidPassword", pw, err)
		}
	}
}

func TestUsersRefusesPools(t *testing.T) {
	key := userKey(t)
	tests := []struct {
		name  string
		pools []natsconf.Pool
	}{
		{"an illegal name", []natsconf.Pool{{Name: "a b", Tools: []string{"t"}, NKey: key}}},
		{"no tool", []natsconf.Pool{{Name: "p", NKey: key}}},
		{"an illegal tool", []natsconf.Pool{{Name: "p", Tools: []string{"t>"}, NKey: key}}},
		{"a tool in two pools", []natsconf.Pool{{Name: "p", Tools: []string{"t"}, NKey: key}, {Name: "q", Tools: []string{"t"}, NKey: userKey(t)}}},
		{"a pool twice", []natsconf.Pool{{Name: "p", Tools: []string{"t"}, NKey: key}, {Name: "p", Tools: []string{"u"}, NKey: userKey(t)}}},
		{"a seed for a key", []natsconf.Pool{{Name: "p", Tools: []string{"t"}, NKey: "SUAAAA"}}},
		{"a config injection", []natsconf.Pool{{Name: "p", Tools: []string{"t"}, NKey: key + "}, {user: x"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := natsconf.Users(passwords, tc.pools); !errors.Is(err, natsconf.ErrInvalidPool) {
				t.Fatalf("err = %v, want ErrInvalidPool", err)
			}
		})
	}
}
