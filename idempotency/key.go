package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
)

// StorageKey is the key under which the journal stores the record of an
// idempotency key: the hex SHA-256 of it. Idempotency keys may hold any
// byte, KV keys only a restricted alphabet, and a fixed-length digest also
// keeps subjects short.
func StorageKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
