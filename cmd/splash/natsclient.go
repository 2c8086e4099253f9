package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/ratelog"
	"github.com/splashfabric/splashfabric/metrics"
)

// envNatsNKeyFile names the seed file of a pool's nkey.
const envNatsNKeyFile = "SPLASH_NATS_NKEY_FILE"

// natsClientFlags are the flags of every command that connects to NATS as a
// client (host, worker, bench, tools, keys).
type natsClientFlags struct {
	url      string
	user     string
	password string
	nkeyFile string
	tls      natsTLSFlags
	// pool is the worker pool an nkey identity belongs to, set by the
	// worker command; it names the connection's inbox prefix.
	pool string
}

func (n *natsClientFlags) register(fs *flagSet) {
	fs.stringVar(&n.url, "nats-url", envNatsURL, defaultNatsURL, "NATS server `urls`, comma-separated")
	fs.stringVar(&n.user, "nats-user", envNatsUser, "", "NATS `user` name, when the server requires one")
	fs.stringVar(&n.password, "nats-password", envNatsPassword, "", "NATS `password` for --nats-user (prefer the variable: flags show in process lists)")
	fs.stringVar(&n.nkeyFile, "nats-nkey-file", envNatsNKeyFile, "", "`file` holding the seed of a worker pool's NATS nkey (splash keys init writes one per pool), instead of a user and password")
	n.tls.register(fs)
}

// identity is who the connection authenticates as, which names its
// private inbox prefix (fabric.InboxPrefix): the user, or the pool of an
// nkey. Empty for an anonymous connection, which keeps the default inbox
// (a server with permissions admits none).
func (n natsClientFlags) identity() string {
	switch {
	case n.user != "":
		return n.user
	case n.nkeyFile != "" && n.pool != "":
		return fabric.PoolIdentity(n.pool)
	}
	return ""
}

// label names the connection's user in refusals and logs: its identity,
// or for an nkey of no named pool the key, as the server names it.
func (n natsClientFlags) label() string {
	if id := n.identity(); id != "" {
		return id
	}
	if n.nkeyFile != "" {
		if kp, err := readNKey(n.nkeyFile); err == nil {
			if pub, err := kp.PublicKey(); err == nil {
				return "nkey:" + pub
			}
		}
	}
	return "anonymous"
}

// identityOptions are the options that authenticate a connection and give
// it its own inbox prefix, so its permissions need no _INBOX.>.
func (n natsClientFlags) identityOptions() ([]nats.Option, error) {
	var opts []nats.Option
	if n.user != "" {
		opts = append(opts, nats.UserInfo(n.user, n.password))
	}
	if n.nkeyFile != "" {
		o, err := nats.NkeyOptionFromSeed(n.nkeyFile)
		if err != nil {
			return nil, fabricKeyFileError(n.nkeyFile, err)
		}
		opts = append(opts, o)
	}
	if id := n.identity(); id != "" {
		opts = append(opts, nats.CustomInboxPrefix(fabric.InboxPrefix(id)))
	}
	return opts, nil
}

// permissionWatch reports every permission violation of a connection as
// identity: logged with its subject and user (a few lines a second at
// most) and counted in m; operations guarded by it fail at once.
func permissionWatch(identity string, log *slog.Logger, m *metrics.NATS) *fabric.PermissionWatch {
	limited := ratelog.New(log, time.Second, 5)
	return fabric.NewPermissionWatch(identity, func(pe *fabric.PermissionError) {
		m.PermissionDenied(pe.Op)
		limited.Warn("nats_permission_"+pe.Op, "nats permission denied", "user", pe.User, "op", pe.Op, "subject", pe.Subject, "err", pe)
	}, func(_ *nats.Conn, sub *nats.Subscription, err error) {
		if sub != nil {
			log.Warn("nats error", "subject", sub.Subject, "err", err)
			return
		}
		log.Warn("nats error", "err", err)
	})
}

// apiClientFlags are the flags of every command that talks to a host's HTTP
// API (run, ops, cancel, bench).
type apiClientFlags struct {
	url   string
	token string
}

func (c *apiClientFlags) register(fs *flagSet) {
	fs.stringVar(&c.url, "api-url", envAPIURL, defaultAPIURL, "host API base `url`")
	fs.stringVar(&c.token, "api-token", envAPIToken, "", "bearer `token` for the host API (prefer the variable: flags show in process lists)")
}

// withJetStream runs do on a JetStream context of a short-lived client
// connection, as a one-shot command (tools, keys) needs. A write the user
// may not make is refused by the server in a message of its own while the
// write waits for its answer: the watch ends do at once with the refusal,
// naming subject and user, and a denial is reported as one.
func withJetStream(ctx context.Context, f natsClientFlags, name string, log *slog.Logger, do func(context.Context, jetstream.JetStream) error) error {
	watch := permissionWatch(f.label(), log, nil)
	nc, err := connectNATS(ctx, f, name, log, watch.Option())
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, release := watch.Guard(ctx)
	defer release()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	return fabric.Denied(ctx, do(ctx, js))
}
