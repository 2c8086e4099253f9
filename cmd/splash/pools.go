package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	natsconf "github.com/splashfabric/splashfabric/deploy/nats"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

// A deployment's secrets directory (deploy/compose/secrets, or dev's data
// directory) holds, besides the host's ring (frame.key):
//
//	pool-keys/<pool>.keys   each pool's key ring, which its workers and every host hold
//	pool-nkeys/<pool>.nk    each pool's NATS nkey seed, which only its workers hold
//	pools.json              each pool's name, tools and nkey public key, which the NATS nodes read
const (
	poolKeysDir  = "pool-keys"
	poolNKeysDir = "pool-nkeys"
	poolNKeyExt  = ".nk"
	poolsFile    = "pools.json"
)

// maxPoolsFileBytes bounds what is read of pools.json.
const maxPoolsFileBytes = 1 << 20

// poolDef is one pool of a catalog: its name and its tools, sorted.
type poolDef struct {
	name  string
	tools []string
}

// poolsOf groups tools by the pool each names (toolspec.Spec.Pool), pools
// sorted by name.
func poolsOf(tools []*toolspec.Tool) []poolDef {
	byName := map[string][]string{}
	for _, t := range tools {
		byName[t.Pool()] = append(byName[t.Pool()], t.Name())
	}
	out := make([]poolDef, 0, len(byName))
	for name, ts := range byName {
		slices.Sort(ts)
		out = append(out, poolDef{name: name, tools: ts})
	}
	slices.SortFunc(out, func(a, b poolDef) int { return strings.Compare(a.name, b.name) })
	return out
}

// poolSecrets are one pool's credentials: its key ring and its nkey.
type poolSecrets struct {
	poolDef
	ring protocol.KeyRing
	kp   nkeys.KeyPair
	// ringPath and seedPath are where they live.
	ringPath, seedPath string
}

// natsPool is the pool as the NATS nodes see it.
func (p poolSecrets) natsPool() (natsconf.Pool, error) {
	pub, err := p.kp.PublicKey()
	if err != nil {
		return natsconf.Pool{}, fmt.Errorf("%w: pool %s: %v", errKeyFile, p.name, err)
	}
	return natsconf.Pool{Name: p.name, Tools: p.tools, NKey: pub}, nil
}

// nkeyOption authenticates a connection as the pool, in process (splash
// dev): the seed never leaves the key pair.
func (p poolSecrets) nkeyOption() (nats.Option, error) {
	pub, err := p.kp.PublicKey()
	if err != nil {
		return nil, err
	}
	return nats.Nkey(pub, p.kp.Sign), nil
}

// ensurePoolSecrets loads each pool's ring and nkey from dir, generating
// the missing ones: a restart keeps what a deployment was given. Files are
// created exclusively with mode 0600.
func ensurePoolSecrets(dir string, pools []poolDef) ([]poolSecrets, error) {
	for _, sub := range []string{poolKeysDir, poolNKeysDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("%w: %v", errKeyFile, err)
		}
	}
	out := make([]poolSecrets, 0, len(pools))
	for _, p := range pools {
		s := poolSecrets{
			poolDef:  p,
			ringPath: filepath.Join(dir, poolKeysDir, p.name+poolKeysExt),
			seedPath: filepath.Join(dir, poolNKeysDir, p.name+poolNKeyExt),
		}
		var err error
		if s.ring, _, err = createKeyRing(s.ringPath, 0o600); err != nil {
			return nil, err
		}
		if s.kp, err = createNKey(s.seedPath); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// createNKey reads the user nkey seed in path, or writes a new one there
// (exclusively, 0600) when there is none.
func createNKey(path string) (nkeys.KeyPair, error) {
	if _, err := os.Stat(path); err == nil {
		return readNKey(path)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("%w: nkey: %v", errKeyFile, err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, fmt.Errorf("%w: nkey: %v", errKeyFile, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return readNKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errKeyFile, err)
	}
	_, werr := fmt.Fprintf(f, "%s\n", seed)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("%w: %q: %v", errKeyFile, path, werr)
	}
	return kp, nil
}

// readNKey reads a user nkey seed file. Errors name the file, never its
// contents.
func readNKey(path string) (nkeys.KeyPair, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errKeyFile, err)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil || len(buf) > maxKeyFileBytes {
		return nil, fmt.Errorf("%w: %q: unreadable or over %d bytes", errKeyFile, path, maxKeyFileBytes)
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(buf))))
	if err != nil {
		return nil, fmt.Errorf("%w: %q holds no nkey seed", errKeyFile, path)
	}
	if pub, err := kp.PublicKey(); err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return nil, fmt.Errorf("%w: %q is not a user nkey seed", errKeyFile, path)
	}
	return kp, nil
}

// poolsManifest is pools.json.
type poolsManifest struct {
	Pools []natsconf.Pool `json:"pools"`
}

// writePoolsManifest writes pools.json into dir: public keys only, mode
// 0644, written beside and renamed over.
func writePoolsManifest(dir string, pools []natsconf.Pool) (string, error) {
	b, err := json.MarshalIndent(poolsManifest{Pools: pools}, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, poolsFile)
	if err := replaceFile(path, append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("%w: %q: %v", errKeyFile, path, err)
	}
	return path, nil
}

// readPoolsManifest reads pools.json (splash nats --pools).
func readPoolsManifest(path string) ([]natsconf.Pool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: --pools: %v", errUsage, err)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, maxPoolsFileBytes+1))
	if err != nil || len(buf) > maxPoolsFileBytes {
		return nil, fmt.Errorf("%w: --pools %q: unreadable or over %d bytes", errUsage, path, maxPoolsFileBytes)
	}
	dec := json.NewDecoder(strings.NewReader(string(buf)))
	dec.DisallowUnknownFields()
	var m poolsManifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: --pools %q: %v", errUsage, path, err)
	}
	return m.Pools, nil
}
