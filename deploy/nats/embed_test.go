package natsconf_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	natsconf "github.com/splashfabric/splashfabric/deploy/nats"
)

var passwords = map[string]string{
	natsconf.UserHost: "host-pw", natsconf.UserWorker: "worker-pw", natsconf.UserOps: "ops-pw",
}

// The embedded part is the file's, byte for byte, and holds every
// definition the users need.
func TestPermissionsAreSplashConfs(t *testing.T) {
	raw, err := os.ReadFile("splash.conf")
	if err != nil {
		t.Fatal(err)
	}
	p := natsconf.Permissions()
	if !strings.Contains(string(raw), p) {
		t.Fatal("the embedded permissions are not splash.conf's")
	}
	for _, want := range []string{"HOST_PERMISSIONS = {", "WORKER_PERMISSIONS = {", "accounts {"} {
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
}

func TestUsersConfiguresTheServer(t *testing.T) {
	// The environment must not reach the passwords.
	t.Setenv("SPLASH_NATS_HOST_PASSWORD", "from-the-environment")
	text, err := natsconf.Users(passwords)
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

func TestUsersRefusesPasswords(t *testing.T) {
	for _, pw := range []string{"", `a"b`, `a\b`, "a$b", "a\nb"} {
		p := map[string]string{natsconf.UserHost: "h", natsconf.UserWorker: "w", natsconf.UserOps: pw}
		if _, err := natsconf.Users(p); !errors.Is(err, natsconf.ErrInvalidPassword) {
			t.Errorf("password %q: %v, want ErrInvalidPassword", pw, err)
		}
	}
}
