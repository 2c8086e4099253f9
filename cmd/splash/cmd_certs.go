package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/splashfabric/splashfabric/internal/certs"
)

var certsCommand = command{
	name:    "certs",
	summary: "create the certificate authority and NATS server certificate of a deployment",
	help: `
Writes into --dir a private certificate authority (ca.pem, ca-key.pem) and a
server certificate it signed (server.pem, server-key.pem), ECDSA P-256, valid
for every name in --hosts. Every NATS node presents the server certificate to
clients and to the other nodes on its routes; clients and nodes trust ca.pem.
Files that exist are checked and kept, never replaced, so running it again
cannot rotate a certificate under a running deployment; to renew, remove the
directory and restart every process. Keys are written 0600 in a 0700
directory.`,
	new: func() runner { return new(certsConfig) },
}

// certsConfig holds the flags of `splash certs`.
type certsConfig struct {
	dir   string
	hosts []string
}

func (c *certsConfig) flags(fs *flagSet) {
	fs.stringVar(&c.dir, "dir", "SPLASH_CERTS_DIR", "", "`directory` to write the certificates into (created 0700 if missing)")
	fs.listVar(&c.hosts, "hosts", "SPLASH_CERTS_HOSTS", []string{"localhost", "127.0.0.1"}, "comma-separated DNS `names` and IP addresses the server certificate is valid for")
}

func (c *certsConfig) run(_ context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
	}
	if c.dir == "" {
		return fmt.Errorf("%w: no --dir", errUsage)
	}
	res, err := certs.WriteDir(c.dir, certs.DirConfig{Hosts: c.hosts})
	if errors.Is(err, certs.ErrNoHosts) {
		return fmt.Errorf("%w: --hosts: %v", errUsage, err)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errTLS, err)
	}
	for _, n := range res.Written {
		fmt.Fprintf(a.stdout, "wrote %s\n", filepath.Join(c.dir, n))
	}
	if len(res.Kept) > 0 {
		fmt.Fprintf(a.stdout, "kept %s in %s\n", strings.Join(res.Kept, ", "), c.dir)
	}
	return nil
}
