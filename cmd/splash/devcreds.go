package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	natsconf "github.com/splashfabric/splashfabric/deploy/nats"
)

// devUsers are the password users of the dev node, the compose cluster's
// (deploy/nats/splash.conf): the host connects as host, ops is for the
// operator (nats CLI, splash tools apply). Each worker pool has an nkey of
// its own instead (pools.go).
var devUsers = []string{natsconf.UserHost, natsconf.UserOps}

// maxPasswordFileBytes bounds what a password file may hold; a generated
// one is 32 hex digits.
const maxPasswordFileBytes = 256

// devPasswordFile is where the dev node's password of user lives.
func devPasswordFile(dataDir, user string) string {
	return filepath.Join(dataDir, "nats-"+user+".password")
}

// devPasswords loads the password of every dev user from dataDir,
// generating the missing ones (128 bits from crypto/rand, hex), so a
// restart keeps the credentials an operator copied. Each file is created
// exclusively with mode 0600, like the frame key; one that others may read
// is refused rather than used, since anyone who reads it is that user.
func devPasswords(dataDir string) (map[string]string, error) {
	out := make(map[string]string, len(devUsers))
	for _, user := range devUsers {
		pw, err := devPassword(devPasswordFile(dataDir, user))
		if err != nil {
			return nil, err
		}
		out[user] = pw
	}
	return out, nil
}

func devPassword(path string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("%w: nats password: %v", errStart, err)
	}
	pw := hex.EncodeToString(b[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return readDevPassword(path)
	}
	if err != nil {
		return "", fmt.Errorf("%w: nats password: %v", errStart, err)
	}
	_, werr := fmt.Fprintln(f, pw)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", fmt.Errorf("%w: nats password %q: %v", errStart, path, werr)
	}
	return pw, nil
}

// readDevPassword reads a password file dev wrote before (or an operator
// replaced). Errors name the file, never its contents.
func readDevPassword(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: nats password: %v", errStart, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%w: nats password: %v", errStart, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%w: nats password %q is readable by others (mode %v); chmod 600 it", errStart, path, st.Mode().Perm())
	}
	buf, err := io.ReadAll(io.LimitReader(f, maxPasswordFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("%w: nats password %q: %v", errStart, path, err)
	}
	pw := strings.TrimSpace(string(buf))
	if len(buf) > maxPasswordFileBytes || pw == "" {
		return "", fmt.Errorf("%w: nats password %q: empty or over %d bytes", errStart, path, maxPasswordFileBytes)
	}
	return pw, nil
}

// devTokenFile is where dev writes the API token it generated.
const devTokenFile = "api.token"

// writeDevToken writes a generated API token into dataDir, replacing the
// previous run's, so clients can read it from a file (mode 0600) instead
// of a command line. The file is written beside and renamed over, so it is
// never readable with a looser mode or half written.
func writeDevToken(dataDir, token string) (string, error) {
	path := filepath.Join(dataDir, devTokenFile)
	if err := replaceFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("%w: api token %q: %v", errStart, path, err)
	}
	return path, nil
}
