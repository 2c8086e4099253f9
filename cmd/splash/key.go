package main

import (
	"fmt"
	"io"
	"os"

	"github.com/splashfabric/splashfabric/protocol"
)

// maxKeyFileBytes bounds what loadKey reads: a key is 64 hex digits, so
// anything much larger is the wrong file, and is not read into memory.
const maxKeyFileBytes = 1024

// loadKey reads the frame key a host and its workers share from a file
// holding 64 hex digits (or base64 of 32 bytes), as protocol.ParseSessionKey
// accepts. Errors name the file but never its contents.
func loadKey(path string) (protocol.SessionKey, error) {
	if path == "" {
		return protocol.SessionKey{}, fmt.Errorf("%w: no path given (--key-file or %s)", errKeyFile, envKeyFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return protocol.SessionKey{}, fmt.Errorf("%w: %w", errKeyFile, err)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return protocol.SessionKey{}, fmt.Errorf("%w: %q: %v", errKeyFile, path, err)
	}
	if len(buf) > maxKeyFileBytes {
		return protocol.SessionKey{}, fmt.Errorf("%w: %q is larger than %d bytes", errKeyFile, path, maxKeyFileBytes)
	}
	key, err := protocol.ParseSessionKey(string(buf))
	if err != nil {
		return protocol.SessionKey{}, fmt.Errorf("%w: %q: %w", errKeyFile, path, err)
	}
	return key, nil
}
