package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	natsconf "github.com/splashfabric/splashfabric/deploy/nats"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

var keysCommand = command{
	name:    "keys",
	args:    "init | rotate [--stage] | drop <id> | status",
	summary: "rotate, drop and inspect the key rings frames and records are sealed with",
	help: `
Manages key ring files (docs/durable.md, "Rotating keys"). A ring holds the
current key, which seals, and keys that only verify: one staged next key and
the retired ones. Every seal names its key, so a process holding the ring
verifies what any of its keys sealed.

  init          writes a deployment's keys and pool identities into --dir,
                for every pool of --catalog (docs/topology.md, "Pools"):
                frame.key (the host's ring), pool-keys/<pool>.keys (each
                pool's ring, which its workers and every host hold),
                pool-nkeys/<pool>.nk (each pool's NATS nkey seed, which
                only its workers hold) and pools.json (each pool's tools
                and public nkey, for splash nats --pools). Files that exist
                are kept; pools.json is written again from the catalog.

  rotate        with a staged next key, promotes it to current; otherwise
                generates a key and makes it current at once. The current
                key is retired, not dropped. --stage instead adds a
                generated next key and changes nothing that seals: give the
                staged ring to every process that verifies what it seals
                (every host, and for a pool's ring every worker of the
                pool), then rotate to promote it.
  drop <id>     removes a retired or next key. Drop a retired key once
                status counts nothing sealed with it.
  status        prints each key of the ring (and of every ring in
                --pool-keys) with how many records and frames the fabric
                still holds sealed with it: ledgers of live sessions, the
                session archive, cancel records, the pools' journals and the
                events stream. Connects to NATS as a user that may read
                every stream (ops).

--key-file names the ring file (a file holding one bare key is a ring of
one). The file is rewritten in place, mode 0600 unless it was looser.`,
	new: func() runner { return new(keysConfig) },
}

// keysConfig holds the flags of `splash keys`.
type keysConfig struct {
	nats     natsClientFlags
	dir      string
	catalog  string
	keyFile  string
	poolKeys string
	stage    bool
	timeout  time.Duration
}

func (c *keysConfig) flags(fs *flagSet) {
	c.nats.register(fs)
	fs.stringVar(&c.keyFile, "key-file", envKeyFile, "", "key ring `file` to rotate, drop from or inspect")
	fs.stringVar(&c.poolKeys, "pool-keys", envPoolKeys, "", "`directory` of the pools' key rings (<pool>.keys), inspected by status beside --key-file")
	fs.boolVar(&c.stage, "stage", "SPLASH_KEYS_STAGE", false, "rotate: add a next key instead of changing the current one")
	fs.durationVar(&c.timeout, "timeout", "SPLASH_KEYS_TIMEOUT", time.Minute, "status: give up after this `duration`, connecting included")
	fs.stringVar(&c.dir, "dir", "SPLASH_KEYS_DIR", "", "init: the `directory` the deployment's keys and pool identities go to")
	registerCatalog(fs, &c.catalog)
}

func (c *keysConfig) run(ctx context.Context, a *app, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: want init, rotate, drop <id> or status", errUsage)
	}
	verb, rest := args[0], args[1:]
	switch verb {
	case "init":
		if len(rest) != 0 {
			return fmt.Errorf("%w: init takes no argument, got %q", errUsage, rest[0])
		}
		return initKeys(a.stdout, c.dir, c.catalog)
	case "rotate":
		if len(rest) != 0 {
			return fmt.Errorf("%w: rotate takes no argument, got %q", errUsage, rest[0])
		}
		return rotateKeyFile(a.stdout, c.keyFile, c.stage)
	case "drop":
		if len(rest) != 1 {
			return fmt.Errorf("%w: drop takes one key id, got %d arguments", errUsage, len(rest))
		}
		return dropKey(a.stdout, c.keyFile, rest[0])
	case "status":
		if len(rest) != 0 {
			return fmt.Errorf("%w: status takes no argument, got %q", errUsage, rest[0])
		}
		return c.status(ctx, a)
	}
	return fmt.Errorf("%w: unknown verb %q, want init, rotate, drop or status", errUsage, verb)
}

// rotateKeyFile promotes the ring's next key, or stages one (stage), or
// rotates to a generated key at once when there is none.
func rotateKeyFile(w io.Writer, path string, stage bool) error {
	ring, err := loadKeyRing(path)
	if err != nil {
		return err
	}
	var next protocol.KeyRing
	var what string
	switch {
	case stage:
		k, err := protocol.GenerateSessionKey(nil)
		if err != nil {
			return fmt.Errorf("%w: %v", errKeyFile, err)
		}
		if next, err = ring.Stage(k); err != nil {
			return fmt.Errorf("%w: %q: %w", errKeyFile, path, err)
		}
		what = "staged " + protocol.KeyIDOf(k) + " as next: give this ring to every process that verifies with it, then run splash keys rotate to promote it"
	case hasNext(ring):
		if next, err = ring.Promote(); err != nil {
			return fmt.Errorf("%w: %q: %w", errKeyFile, path, err)
		}
		id, _ := next.Current()
		what = "promoted " + id + " to current"
	default:
		k, err := protocol.GenerateSessionKey(nil)
		if err != nil {
			return fmt.Errorf("%w: %v", errKeyFile, err)
		}
		if next, err = ring.Rotate(k); err != nil {
			return fmt.Errorf("%w: %q: %w", errKeyFile, path, err)
		}
		what = "rotated to " + protocol.KeyIDOf(k)
	}
	if err := writeKeyRing(path, next, keyFileMode(path)); err != nil {
		return err
	}
	old, _ := ring.Current()
	if id, _ := next.Current(); id != old {
		what += "; " + old + " is retired (splash keys status tells when it can be dropped)"
	}
	_, err = fmt.Fprintf(w, "%s: %s\n", path, what)
	return err
}

func hasNext(r protocol.KeyRing) bool {
	for _, k := range r.Keys() {
		if k.State == protocol.KeyNext {
			return true
		}
	}
	return false
}

// keyFileMode keeps a file's mode when it is no looser than 0644 (the
// compose secrets are 0644 for the containers' user), else 0600.
func keyFileMode(path string) os.FileMode {
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm()&0o033 != 0 {
		return 0o600
	}
	return st.Mode().Perm()
}

// dropKey removes key id from the ring in path.
func dropKey(w io.Writer, path, id string) error {
	ring, err := loadKeyRing(path)
	if err != nil {
		return err
	}
	next, err := ring.Drop(id)
	if err != nil {
		return fmt.Errorf("%w: %q: %w", errKeyFile, path, err)
	}
	if err := writeKeyRing(path, next, keyFileMode(path)); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s: dropped %s\n", path, id)
	return err
}

// status prints every ring's keys with what the fabric still holds sealed
// with each.
func (c *keysConfig) status(ctx context.Context, a *app) error {
	rings, err := c.statusRings()
	if err != nil {
		return err
	}
	if c.timeout <= 0 {
		return fmt.Errorf("%w: --timeout %v, want more than 0", errUsage, c.timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return withJetStream(ctx, c.nats, "splash keys", a.log.With("component", "keys"), func(ctx context.Context, js jetstream.JetStream) error {
		use, err := fabric.CountKeyUse(ctx, js)
		if err != nil {
			return err
		}
		return writeKeyStatus(a.stdout, rings, use)
	})
}

// namedRing is a ring file and its contents.
type namedRing struct {
	path string
	ring protocol.KeyRing
}

func (c *keysConfig) statusRings() ([]namedRing, error) {
	var out []namedRing
	if c.keyFile != "" {
		r, err := loadKeyRing(c.keyFile)
		if err != nil {
			return nil, err
		}
		out = append(out, namedRing{c.keyFile, r})
	}
	if c.poolKeys != "" {
		pools, err := loadPoolKeys(c.poolKeys)
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(pools))
		for name := range pools {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			out = append(out, namedRing{filepath.Join(c.poolKeys, name+poolKeysExt), pools[name]})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: status needs --key-file or --pool-keys", errUsage)
	}
	return out, nil
}

// keyStatusStores are the columns of status, in order.
var keyStatusStores = []string{fabric.KeyUseLedger, fabric.KeyUseSessions, fabric.KeyUseCancels, fabric.KeyUseJournals, fabric.KeyUseEvents}

// writeKeyStatus prints one table per ring and a line for records sealed
// by keys no ring holds.
func writeKeyStatus(w io.Writer, rings []namedRing, use fabric.KeyUse) error {
	var known []string
	for _, r := range rings {
		fmt.Fprintf(w, "%s\n", r.path)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "KEY\tSTATE\t%s\t\n", strings.ToUpper(strings.Join(keyStatusStores, "\t")))
		for _, k := range r.ring.Keys() {
			known = append(known, k.ID)
			fmt.Fprintf(tw, "%s\t%s", k.ID, k.State)
			for _, store := range keyStatusStores {
				fmt.Fprintf(tw, "\t%d", use[store][k.ID])
			}
			note := ""
			if k.State == protocol.KeyRetired && use.Total(k.ID) == 0 {
				note = "nothing live: can be dropped"
			}
			fmt.Fprintf(tw, "\t%s\n", note)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, id := range use.IDs() {
		if slices.Contains(known, id) {
			continue
		}
		what := "sealed with key " + id + ", in no ring given"
		switch id {
		case fabric.NoKeyID:
			what = "sealed before key rings (verified by whichever ring holds their key)"
		case "unsealed":
			what = "not sealed (refused when read)"
		}
		fmt.Fprintf(w, "%d records %s\n", use.Total(id), what)
	}
	return nil
}

// initKeys writes the host's ring and every pool's ring and nkey that dir
// lacks, and pools.json for the catalog's pools and those an earlier init
// wrote for another catalog (a deployment whose tools come from two
// catalogs runs init once for each).
func initKeys(w io.Writer, dir, catalogPath string) error {
	if dir == "" {
		return fmt.Errorf("%w: init needs --dir", errUsage)
	}
	cat, err := loadCatalog(catalogPath)
	if err != nil {
		return err
	}
	var tools []*toolspec.Tool
	for _, name := range cat.set.Names() {
		t, _ := cat.set.Lookup(name)
		tools = append(tools, t)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%w: --dir: %v", errKeyFile, err)
	}
	host := filepath.Join(dir, devKeyFile)
	if _, wrote, err := createKeyRing(host, 0o600); err != nil {
		return err
	} else if wrote {
		fmt.Fprintf(w, "wrote %s\n", host)
	}
	pools, err := ensurePoolSecrets(dir, poolsOf(tools))
	if err != nil {
		return err
	}
	natsPools := make([]natsconf.Pool, len(pools))
	for i, p := range pools {
		if natsPools[i], err = p.natsPool(); err != nil {
			return err
		}
		fmt.Fprintf(w, "pool %s (%s): %s, %s\n", p.name, strings.Join(p.tools, ", "), p.ringPath, p.seedPath)
	}
	natsPools, err = keepOtherPools(filepath.Join(dir, poolsFile), natsPools)
	if err != nil {
		return err
	}
	path, err := writePoolsManifest(dir, natsPools)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "wrote %s\n", path)
	return err
}

// keepOtherPools adds to pools those of the manifest at path (if any) that
// none of pools replaces: neither its name nor any of its tools. A manifest
// that cannot be read is an error, so a damaged one is never overwritten
// with less.
func keepOtherPools(path string, pools []natsconf.Pool) ([]natsconf.Pool, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return pools, nil
	}
	old, err := readPoolsManifest(path)
	if err != nil {
		return nil, err
	}
	taken := map[string]bool{}
	for _, p := range pools {
		taken["pool "+p.Name] = true
		for _, t := range p.Tools {
			taken["tool "+t] = true
		}
	}
	for _, p := range old {
		if taken["pool "+p.Name] || slices.ContainsFunc(p.Tools, func(t string) bool { return taken["tool "+t] }) {
			continue
		}
		pools = append(pools, p)
	}
	return pools, nil
}
