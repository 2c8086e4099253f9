package certs_test

import (
	"crypto/x509"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/certs"
)

var clusterHosts = []string{"n1", "n2", "n3", "localhost", "127.0.0.1"}

func readFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWriteDirChainAndNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	res, err := certs.WriteDir(dir, certs.DirConfig{Hosts: clusterHosts})
	if err != nil {
		t.Fatal(err)
	}
	all := []string{certs.CAFile, certs.CAKeyFile, certs.ServerFile, certs.ServerKeyFile}
	if !sameSet(res.Written, all) || len(res.Kept) != 0 {
		t.Fatalf("written %v kept %v, want every file written", res.Written, res.Kept)
	}
	ca, err := certs.ParseAuthority(readFile(t, dir, certs.CAFile), readFile(t, dir, certs.CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if ca.Cert.Subject.CommonName != certs.DefaultAuthorityName || !ca.Cert.IsCA {
		t.Errorf("authority %q (CA %v)", ca.Cert.Subject.CommonName, ca.Cert.IsCA)
	}
	srv, err := ca.Verify(readFile(t, dir, certs.ServerFile), certs.ServerUsage, time.Now())
	if err != nil {
		t.Fatalf("server certificate does not chain to the authority: %v", err)
	}
	// A route dials with the same certificate, verified as a client's.
	if _, err := ca.Verify(readFile(t, dir, certs.ServerFile), certs.ClientUsage, time.Now()); err != nil {
		t.Errorf("server certificate not usable by a route client: %v", err)
	}
	for _, h := range clusterHosts {
		if err := srv.VerifyHostname(h); err != nil {
			t.Errorf("server certificate not valid for %s: %v", h, err)
		}
	}
	if err := srv.VerifyHostname("n4"); err == nil {
		t.Error("server certificate valid for a host it was not issued for")
	}
	if !slices.Equal(srv.DNSNames, []string{"n1", "n2", "n3", "localhost"}) || len(srv.IPAddresses) != 1 || !srv.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("SANs: DNS %v IP %v", srv.DNSNames, srv.IPAddresses)
	}
	if srv.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("key algorithm %v, want ECDSA", srv.PublicKeyAlgorithm)
	}
	modes := map[string]fs.FileMode{certs.CAFile: 0o644, certs.CAKeyFile: 0o600, certs.ServerFile: 0o644, certs.ServerKeyFile: 0o600}
	for name, want := range modes {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s mode %v, want %v", name, got, want)
		}
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o700 {
		t.Errorf("directory mode %v, want 0700", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(all) {
		t.Errorf("directory holds %d entries, want %d (no temporary files left)", len(entries), len(all))
	}
}

func TestWriteDirKeepsWhatExists(t *testing.T) {
	dir := t.TempDir()
	if _, err := certs.WriteDir(dir, certs.DirConfig{Hosts: clusterHosts}); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, n := range []string{certs.CAFile, certs.CAKeyFile, certs.ServerFile, certs.ServerKeyFile} {
		before[n] = readFile(t, dir, n)
	}
	res, err := certs.WriteDir(dir, certs.DirConfig{Hosts: []string{"other"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Written) != 0 || len(res.Kept) != 4 {
		t.Fatalf("second run wrote %v, kept %v", res.Written, res.Kept)
	}
	for n, b := range before {
		if !slices.Equal(readFile(t, dir, n), b) {
			t.Errorf("%s changed on a second run", n)
		}
	}

	// A server certificate removed with its key is issued again by the
	// authority that is kept.
	for _, n := range []string{certs.ServerFile, certs.ServerKeyFile} {
		if err := os.Remove(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	res, err = certs.WriteDir(dir, certs.DirConfig{Hosts: clusterHosts})
	if err != nil {
		t.Fatal(err)
	}
	if !sameSet(res.Written, []string{certs.ServerFile, certs.ServerKeyFile}) || !sameSet(res.Kept, []string{certs.CAFile, certs.CAKeyFile}) {
		t.Fatalf("written %v kept %v", res.Written, res.Kept)
	}
	if !slices.Equal(readFile(t, dir, certs.CAFile), before[certs.CAFile]) {
		t.Error("authority replaced")
	}
	ca, err := certs.ParseAuthority(before[certs.CAFile], before[certs.CAKeyFile])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Verify(readFile(t, dir, certs.ServerFile), certs.ServerUsage, time.Now()); err != nil {
		t.Errorf("new server certificate not signed by the kept authority: %v", err)
	}
}

func TestWriteDirRefusesAndChangesNothing(t *testing.T) {
	other, err := certs.NewAuthority("other", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := other.Issue("x", []string{"n1"}, certs.ServerUsage, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		hosts   []string
		prepare func(t *testing.T, dir string)
		wantErr error
	}{
		{"no hosts", nil, func(*testing.T, string) {}, certs.ErrNoHosts},
		{"key without certificate", clusterHosts, func(t *testing.T, dir string) {
			remove(t, dir, certs.ServerFile)
		}, certs.ErrIncomplete},
		{"authority certificate without key", clusterHosts, func(t *testing.T, dir string) {
			remove(t, dir, certs.CAKeyFile)
		}, certs.ErrIncomplete},
		{"server without authority", clusterHosts, func(t *testing.T, dir string) {
			remove(t, dir, certs.CAFile)
			remove(t, dir, certs.CAKeyFile)
		}, certs.ErrIncomplete},
		{"server signed by another authority", clusterHosts, func(t *testing.T, dir string) {
			write(t, dir, certs.ServerFile, foreign.CertPEM)
			write(t, dir, certs.ServerKeyFile, foreign.KeyPEM)
		}, certs.ErrInvalid},
		{"garbage authority", clusterHosts, func(t *testing.T, dir string) {
			write(t, dir, certs.CAFile, []byte("not a certificate"))
		}, certs.ErrInvalid},
		{"key of another certificate", clusterHosts, func(t *testing.T, dir string) {
			write(t, dir, certs.ServerKeyFile, foreign.KeyPEM)
		}, certs.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := certs.WriteDir(dir, certs.DirConfig{Hosts: clusterHosts}); err != nil {
				t.Fatal(err)
			}
			tc.prepare(t, dir)
			before := snapshot(t, dir)
			_, err := certs.WriteDir(dir, certs.DirConfig{Hosts: tc.hosts})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if after := snapshot(t, dir); !equalSnapshots(before, after) {
				t.Errorf("directory changed by a refused run")
			}
		})
	}
}

func TestIssueNeedsHostsForAServer(t *testing.T) {
	ca, err := certs.NewAuthority("t", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Issue("s", nil, certs.ServerUsage, time.Now()); !errors.Is(err, certs.ErrNoHosts) {
		t.Fatalf("err %v, want ErrNoHosts", err)
	}
	leaf, err := ca.Issue("c", nil, certs.ClientUsage, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Verify(leaf.CertPEM, certs.ServerUsage, time.Now()); !errors.Is(err, certs.ErrInvalid) {
		t.Errorf("client certificate verified as a server's: %v", err)
	}
	if _, err := ca.Verify(leaf.CertPEM, certs.ClientUsage, time.Now().Add(certs.LeafValidity+time.Hour)); !errors.Is(err, certs.ErrInvalid) {
		t.Errorf("expired certificate verified: %v", err)
	}
}

func remove(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range entries {
		m[e.Name()] = string(readFile(t, dir, e.Name()))
	}
	return m
}

func equalSnapshots(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
