// Package natsconf carries the NATS users and permissions of
// deploy/nats/splash.conf into the binary, so that `splash dev` runs its
// embedded node with the same least-privilege users as the compose
// cluster: one definition, read by both.
//
// splash.conf marks the part that is users and permissions (the
// HOST_PERMISSIONS, OPS_PERMISSIONS and POOL_PERMISSIONS variables and the
// accounts block) with a begin and an end comment; Users returns that part,
// with the password variables it reads defined in front of it and one user
// per worker pool. Settings that differ between a cluster node and dev
// (listen addresses, TLS, the store) stay outside the markers.
//
// POOL_PERMISSIONS is a template, written as comment lines starting "#|",
// not a user's permissions: Render writes one copy of it per Pool, every
// line naming a tool repeated for each of the pool's tools, and one user
// per pool authenticated by the pool's nkey (see the comment above it in
// splash.conf). A file rendered with no pool is splash.conf itself, which
// nats-server loads as it is.
package natsconf

import (
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/protocol"
)

//go:embed splash.conf
var splashConf string

// SplashConf returns splash.conf as the binary embeds it.
func SplashConf() string { return splashConf }

// The markers in splash.conf.
const (
	beginMarker     = "# ---- users and permissions: begin ----\n"
	endMarker       = "# ---- users and permissions: end ----\n"
	poolBeginMarker = "# ---- pool permissions: begin ----\n"
	poolEndMarker   = "# ---- pool permissions: end ----\n"
	poolUsersMarker = "# ---- pool users ----"
	ifToolMarker    = "# if-tool "
	// templatePrefix starts every line of the pool template, which
	// nats-server reads as a comment.
	templatePrefix = "#|"
)

// The password users of the SPLASH account and the variables splash.conf
// reads their passwords from. Worker pools authenticate with nkeys instead.
const (
	UserHost = "host"
	UserOps  = "ops"
)

// PasswordVars maps each password user to the variable holding its
// password.
var PasswordVars = map[string]string{
	UserHost: "SPLASH_NATS_HOST_PASSWORD",
	UserOps:  "SPLASH_NATS_OPS_PASSWORD",
}

// Errors of Users and Render.
var (
	// ErrInvalidPassword reports a password Users cannot place in a
	// configuration: empty, or holding a quote, a backslash, '$' or a
	// control character.
	ErrInvalidPassword = errors.New("natsconf: invalid password")
	// ErrInvalidPool reports a Pool that cannot be rendered: an illegal
	// name or tool, no tool, a tool in two pools, a pool twice, or a key
	// that is not a user nkey's public key.
	ErrInvalidPool = errors.New("natsconf: invalid pool")
)

// Pool is one worker pool as the NATS nodes see it: its name, the tools it
// serves and the public key of its nkey. It is what pools.json lists.
type Pool struct {
	Name  string   `json:"name"`
	Tools []string `json:"tools"`
	NKey  string   `json:"nkey"`
}

// Permissions returns the users-and-permissions part of splash.conf, as
// written there (its password variables unresolved, no pool user).
func Permissions() string {
	block, err := between(splashConf, beginMarker, endMarker)
	if err != nil {
		panic(err)
	}
	return block
}

// Users returns a server configuration holding the accounts, users and
// permissions of splash.conf, with passwords, user name to password, for
// every user in PasswordVars, and a user for each of pools. The variables
// are defined in the text itself, which nats-server resolves before the
// environment, so nothing in the process's environment can change them.
// Feed it to server.Options.ProcessConfigString, then set the listen and
// store options.
func Users(passwords map[string]string, pools []Pool) (string, error) {
	var b strings.Builder
	for _, user := range []string{UserHost, UserOps} {
		pw := passwords[user]
		if pw == "" || strings.ContainsFunc(pw, func(r rune) bool {
			return r < 0x20 || r == 0x7f || r == '"' || r == '\\' || r == '$'
		}) {
			return "", fmt.Errorf("%w: user %s", ErrInvalidPassword, user)
		}
		fmt.Fprintf(&b, "%s: \"%s\"\n", PasswordVars[user], pw)
	}
	block, err := render(Permissions(), pools)
	if err != nil {
		return "", err
	}
	b.WriteString(block)
	return b.String(), nil
}

// Render returns conf, the text of a configuration holding splash.conf's
// markers (splash.conf itself, or a copy of it), with a user and a copy of
// POOL_PERMISSIONS for each of pools. `splash nats --pools` loads a node
// with it.
func Render(conf string, pools []Pool) (string, error) {
	return render(conf, pools)
}

func render(conf string, pools []Pool) (string, error) {
	if err := checkPools(pools); err != nil {
		return "", err
	}
	tmpl, err := between(conf, poolBeginMarker, poolEndMarker)
	if err != nil {
		return "", err
	}
	if !strings.Contains(conf, poolUsersMarker) {
		return "", fmt.Errorf("natsconf: configuration lacks %q", poolUsersMarker)
	}
	var vars, users strings.Builder
	for i, p := range pools {
		name := "POOL_" + strconv.Itoa(i+1) + "_PERMISSIONS"
		fmt.Fprintf(&vars, "# pool %s: %s\n%s", p.Name, strings.Join(p.Tools, ", "), instantiate(tmpl, name, p))
		fmt.Fprintf(&users, "{nkey: %s, permissions: $%s} # pool %s\n", p.NKey, name, p.Name)
	}
	out := strings.Replace(conf, poolEndMarker, poolEndMarker+vars.String(), 1)
	return strings.Replace(out, poolUsersMarker, poolUsersMarker+"\n"+users.String(), 1), nil
}

// instantiate writes the template (the "#|" lines) as variable name for p:
// lines naming a tool once per tool, the pool's token in place, if-tool
// lines only for a pool serving that tool, the template's own comment
// lines left out.
func instantiate(tmpl, name string, p Pool) string {
	var b strings.Builder
	token := fabric.PoolToken(p.Name)
	for _, line := range strings.SplitAfter(tmpl, "\n") {
		line, ok := strings.CutPrefix(line, templatePrefix)
		if !ok {
			continue
		}
		line = strings.TrimPrefix(line, " ")
		if trimmed := strings.TrimSpace(line); trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if i := strings.Index(line, ifToolMarker); i >= 0 {
			tool := strings.TrimSpace(line[i+len(ifToolMarker):])
			if !slices.Contains(p.Tools, tool) {
				continue
			}
			line = strings.TrimRight(line[:i], " \t") + "\n"
		}
		// One pass each, so a name that happens to spell a placeholder
		// is never replaced again.
		if !strings.Contains(line, "TOOL") {
			b.WriteString(strings.NewReplacer("POOL_PERMISSIONS", name, "POOL_TOKEN", token).Replace(line))
			continue
		}
		for _, tool := range p.Tools {
			b.WriteString(strings.NewReplacer("TOOL_TOKEN", fabric.ToolToken(tool), "TOOL", tool, "POOL_TOKEN", token).Replace(line))
		}
	}
	return b.String()
}

// checkPools refuses pools that would render a configuration granting
// more than each pool's own tools.
func checkPools(pools []Pool) error {
	seen := map[string]string{}
	names := map[string]bool{}
	for _, p := range pools {
		if err := protocol.ValidateToolName(p.Name); err != nil {
			return fmt.Errorf("%w: %q: %v", ErrInvalidPool, p.Name, err)
		}
		if names[p.Name] {
			return fmt.Errorf("%w: %q twice", ErrInvalidPool, p.Name)
		}
		names[p.Name] = true
		if len(p.Tools) == 0 {
			return fmt.Errorf("%w: %q serves no tool", ErrInvalidPool, p.Name)
		}
		for _, t := range p.Tools {
			if err := protocol.ValidateToolName(t); err != nil {
				return fmt.Errorf("%w: %q: tool %q: %v", ErrInvalidPool, p.Name, t, err)
			}
			if other, dup := seen[t]; dup {
				return fmt.Errorf("%w: tool %q is in pools %q and %q", ErrInvalidPool, t, other, p.Name)
			}
			seen[t] = p.Name
		}
		if !nkeys.IsValidPublicUserKey(p.NKey) {
			return fmt.Errorf("%w: %q: %q is not the public key of a user nkey", ErrInvalidPool, p.Name, p.NKey)
		}
	}
	return nil
}

// between returns the text of s between the begin and end markers.
func between(s, begin, end string) (string, error) {
	_, rest, ok := strings.Cut(s, begin)
	if !ok {
		return "", fmt.Errorf("natsconf: configuration lacks %q", strings.TrimSpace(begin))
	}
	block, _, ok := strings.Cut(rest, end)
	if !ok {
		return "", fmt.Errorf("natsconf: configuration lacks %q", strings.TrimSpace(end))
	}
	return block, nil
}
