package certs

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// The files of a directory [WriteDir] lays out.
const (
	CAFile        = "ca.pem"
	CAKeyFile     = "ca-key.pem"
	ServerFile    = "server.pem"
	ServerKeyFile = "server-key.pem"
)

// Modes of what WriteDir writes: certificates are public, keys their
// owner's alone.
const (
	dirMode  fs.FileMode = 0o700
	certMode fs.FileMode = 0o644
	keyMode  fs.FileMode = 0o600
)

// DefaultAuthorityName is the common name of an authority WriteDir creates.
const DefaultAuthorityName = "Splash Fabric CA"

// DirConfig says what [WriteDir] issues when a file is missing.
type DirConfig struct {
	// Hosts are the DNS names and IP addresses the server certificate is
	// valid for. Required, even when every file exists, so a mistaken
	// invocation fails the same way on every run.
	Hosts []string
	// AuthorityName names a new authority; empty is DefaultAuthorityName.
	AuthorityName string
	// Now is when the new certificates start; zero is the current time.
	Now time.Time
}

// DirResult lists, by file name, what one run of WriteDir wrote and what it
// found and kept.
type DirResult struct {
	Written []string
	Kept    []string
}

// WriteDir makes sure dir holds an authority and a server certificate it
// signed, for cfg.Hosts. What exists is checked and kept, never replaced: a
// running deployment may be using it. A pair with one half missing, or a
// server certificate without its authority, is refused with ErrIncomplete;
// a file that does not parse or a server certificate the authority did not
// sign, with ErrInvalid. Nothing is written unless every check passed, and
// new files appear under their names only once complete.
func WriteDir(dir string, cfg DirConfig) (DirResult, error) {
	var res DirResult
	if len(cfg.Hosts) == 0 {
		return res, fmt.Errorf("%w: server certificate", ErrNoHosts)
	}
	now := cfg.Now
	if now.IsZero() {
		now = time.Now()
	}
	name := cfg.AuthorityName
	if name == "" {
		name = DefaultAuthorityName
	}
	caCert, caKey, err := readPair(dir, CAFile, CAKeyFile)
	if err != nil {
		return res, err
	}
	srvCert, srvKey, err := readPair(dir, ServerFile, ServerKeyFile)
	if err != nil {
		return res, err
	}
	var writes []pendingFile
	var ca *Authority
	switch {
	case caCert != nil:
		if ca, err = ParseAuthority(caCert, caKey); err != nil {
			return res, fmt.Errorf("%s: %w", filepath.Join(dir, CAFile), err)
		}
		res.Kept = append(res.Kept, CAFile, CAKeyFile)
	case srvCert != nil:
		return res, fmt.Errorf("%w: %s has no %s beside it; remove the directory to start over",
			ErrIncomplete, filepath.Join(dir, ServerFile), CAFile)
	default:
		if ca, err = NewAuthority(name, now); err != nil {
			return res, err
		}
		writes = append(writes, pendingFile{CAKeyFile, ca.KeyPEM, keyMode}, pendingFile{CAFile, ca.CertPEM, certMode})
	}
	if srvCert != nil {
		if _, err := ca.Verify(srvCert, ServerUsage, now); err != nil {
			return res, fmt.Errorf("%s: %w", filepath.Join(dir, ServerFile), err)
		}
		if _, err := tls.X509KeyPair(srvCert, srvKey); err != nil {
			return res, fmt.Errorf("%w: %s: %v", ErrInvalid, filepath.Join(dir, ServerKeyFile), err)
		}
		res.Kept = append(res.Kept, ServerFile, ServerKeyFile)
	} else {
		leaf, err := ca.Issue("splash-nats", cfg.Hosts, ServerUsage, now)
		if err != nil {
			return res, err
		}
		writes = append(writes, pendingFile{ServerKeyFile, leaf.KeyPEM, keyMode}, pendingFile{ServerFile, leaf.CertPEM, certMode})
	}
	if len(writes) == 0 {
		return res, nil
	}
	if err := makeDir(dir); err != nil {
		return res, err
	}
	for _, w := range writes {
		if err := w.write(dir); err != nil {
			return res, err
		}
		res.Written = append(res.Written, w.name)
	}
	return res, nil
}

// readPair reads a certificate and its key; both nil when neither exists.
func readPair(dir, certName, keyName string) (cert, key []byte, err error) {
	cert, err = readOptional(filepath.Join(dir, certName))
	if err != nil {
		return nil, nil, err
	}
	key, err = readOptional(filepath.Join(dir, keyName))
	if err != nil {
		return nil, nil, err
	}
	if (cert == nil) != (key == nil) {
		have, missing := certName, keyName
		if cert == nil {
			have, missing = keyName, certName
		}
		return nil, nil, fmt.Errorf("%w: %s exists without %s; remove the directory to start over",
			ErrIncomplete, filepath.Join(dir, have), missing)
	}
	return cert, key, nil
}

// maxFileBytes bounds what is read of a PEM file: ours are under 1 KiB, so
// a larger file is the wrong one and is not read into memory whole.
const maxFileBytes = 64 << 10

func readOptional(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxFileBytes {
		return nil, fmt.Errorf("%w: %s is not a PEM file of at most %d bytes", ErrInvalid, path, maxFileBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	return b, nil
}

func makeDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	// MkdirAll's mode passes through the umask; the directory holds keys.
	if err := os.Chmod(dir, dirMode); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	return nil
}

// pendingFile is one file WriteDir is about to write.
type pendingFile struct {
	name string
	data []byte
	mode fs.FileMode
}

// write puts the file in place under a temporary name first, so its name
// never holds half a key, and refuses to replace a file that appeared
// since it was checked.
func (p pendingFile) write(dir string) error {
	tmp, err := os.CreateTemp(dir, "."+p.name+".*")
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(p.mode); err != nil {
		tmp.Close()
		return fmt.Errorf("certs: %w", err)
	}
	if _, err := tmp.Write(p.data); err != nil {
		tmp.Close()
		return fmt.Errorf("certs: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	// A hard link fails if the name exists, which a rename would not.
	if err := os.Link(tmp.Name(), filepath.Join(dir, p.name)); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	return nil
}
