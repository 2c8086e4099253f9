package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/splashfabric/splashfabric/protocol"
)

// maxKeyFileBytes bounds what loadKeyRing reads: a ring of
// protocol.MaxRingKeys keys with its comments fits in a few kilobytes, so
// anything much larger is the wrong file, and is not read into memory.
const maxKeyFileBytes = 16 << 10

// loadKeyRing reads a key ring file (protocol.ParseKeyRing): lines of
// "<state> <id> <key>", or one bare key (64 hex digits, or base64 of 32
// bytes) as key files held before rings, which is a ring of one. Errors
// name the file but never its contents.
func loadKeyRing(path string) (protocol.KeyRing, error) {
	if path == "" {
		return protocol.KeyRing{}, fmt.Errorf("%w: no path given (--key-file or %s)", errKeyFile, envKeyFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return protocol.KeyRing{}, fmt.Errorf("%w: %w", errKeyFile, err)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return protocol.KeyRing{}, fmt.Errorf("%w: %q: %v", errKeyFile, path, err)
	}
	if len(buf) > maxKeyFileBytes {
		return protocol.KeyRing{}, fmt.Errorf("%w: %q is larger than %d bytes", errKeyFile, path, maxKeyFileBytes)
	}
	ring, err := protocol.ParseKeyRing(string(buf))
	if err != nil {
		return protocol.KeyRing{}, fmt.Errorf("%w: %q: %w", errKeyFile, path, err)
	}
	return ring, nil
}

// writeKeyRing replaces path with ring, mode 0600 unless mode says
// otherwise. It writes beside the file and renames over it, so a reader
// never sees a half-written ring and a failed write leaves the old one.
func writeKeyRing(path string, ring protocol.KeyRing, mode os.FileMode) error {
	if err := replaceFile(path, ring.FileText(), mode); err != nil {
		return fmt.Errorf("%w: %q: %v", errKeyFile, path, err)
	}
	return nil
}

// createKeyRing writes a fresh ring of one generated key to path unless
// the file exists, in which case it is read instead: two processes
// starting at once end up with the same ring. It reports whether it wrote
// the file.
func createKeyRing(path string, mode os.FileMode) (protocol.KeyRing, bool, error) {
	if _, err := os.Stat(path); err == nil {
		ring, err := loadKeyRing(path)
		return ring, false, err
	}
	key, err := protocol.GenerateSessionKey(nil)
	if err != nil {
		return protocol.KeyRing{}, false, fmt.Errorf("%w: %v", errKeyFile, err)
	}
	ring := key.Ring()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, os.ErrExist) {
		ring, err := loadKeyRing(path)
		return ring, false, err
	}
	if err != nil {
		return protocol.KeyRing{}, false, fmt.Errorf("%w: %v", errKeyFile, err)
	}
	_, werr := f.Write(ring.FileText())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return protocol.KeyRing{}, false, fmt.Errorf("%w: %q: %v", errKeyFile, path, werr)
	}
	return ring, true, nil
}

// fabricKeyFileError names a NATS credential file that cannot be used,
// never its contents.
func fabricKeyFileError(path string, err error) error {
	return fmt.Errorf("%w: --nats-nkey-file %q: %v", errKeyFile, path, err)
}
