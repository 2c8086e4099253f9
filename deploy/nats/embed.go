// Package natsconf carries the NATS users and permissions of
// deploy/nats/splash.conf into the binary, so that `splash dev` runs its
// embedded node with the same least-privilege users as the compose
// cluster: one definition, read by both.
//
// splash.conf marks the part that is users and permissions (the
// HOST_PERMISSIONS and WORKER_PERMISSIONS variables and the accounts
// block) with a begin and an end comment; Users returns that part, with
// the password variables it reads defined in front of it. Settings that
// differ between a cluster node and dev (listen addresses, TLS, the store)
// stay outside the markers.
package natsconf

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
)

//go:embed splash.conf
var splashConf string

// The markers around the users and permissions in splash.conf.
const (
	beginMarker = "# ---- users and permissions: begin ----\n"
	endMarker   = "# ---- users and permissions: end ----\n"
)

// The users of the SPLASH account and the variables splash.conf reads
// their passwords from.
const (
	UserHost   = "host"
	UserWorker = "worker"
	UserOps    = "ops"
)

// PasswordVars maps each user to the variable holding its password.
var PasswordVars = map[string]string{
	UserHost:   "SPLASH_NATS_HOST_PASSWORD",
	UserWorker: "SPLASH_NATS_WORKER_PASSWORD",
	UserOps:    "SPLASH_NATS_OPS_PASSWORD",
}

// ErrInvalidPassword reports a password Users cannot place in a
// configuration: empty, or holding a quote, a backslash, '$' or a control
// character.
var ErrInvalidPassword = errors.New("natsconf: invalid password")

// Permissions returns the users-and-permissions part of splash.conf, as
// written there (its password variables unresolved).
func Permissions() string {
	_, rest, ok := strings.Cut(splashConf, beginMarker)
	if !ok {
		panic("natsconf: splash.conf lacks " + strings.TrimSpace(beginMarker))
	}
	block, _, ok := strings.Cut(rest, endMarker)
	if !ok {
		panic("natsconf: splash.conf lacks " + strings.TrimSpace(endMarker))
	}
	return block
}

// Users returns a server configuration holding the accounts, users and
// permissions of splash.conf with passwords, user name to password, for
// every user in PasswordVars. The variables are defined in the text
// itself, which nats-server resolves before the environment, so nothing
// in the process's environment can change them. Feed it to
// server.Options.ProcessConfigString, then set the listen and store
// options.
func Users(passwords map[string]string) (string, error) {
	var b strings.Builder
	for _, user := range []string{UserHost, UserWorker, UserOps} {
		pw := passwords[user]
		if pw == "" || strings.ContainsFunc(pw, func(r rune) bool {
			return r < 0x20 || r == 0x7f || r == '"' || r == '\\' || r == '$'
		}) {
			return "", fmt.Errorf("%w: user %s", ErrInvalidPassword, user)
		}
		fmt.Fprintf(&b, "%s: \"%s\"\n", PasswordVars[user], pw)
	}
	b.WriteString(Permissions())
	return b.String(), nil
}
