package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Validity of what this package issues. A deployment renews by deleting the
// directory and restarting, so the leaves outlive any test or demo cluster
// by far; the authority outlives its leaves.
const (
	AuthorityValidity = 10 * 365 * 24 * time.Hour
	LeafValidity      = 5 * 365 * 24 * time.Hour
)

// backdate lets a certificate be valid on a machine whose clock is a
// little behind the one that issued it.
const backdate = time.Hour

// Authority is a certificate authority: a self-signed certificate and its
// key, which signs the leaves of one deployment.
type Authority struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// CertPEM and KeyPEM are the two as written to files.
	CertPEM, KeyPEM []byte
}

// Leaf is an issued certificate and its private key, PEM-encoded.
type Leaf struct {
	CertPEM, KeyPEM []byte
}

// Usage says what a leaf may authenticate.
type Usage int

const (
	// ServerUsage is a TLS server (and a NATS route dialling another
	// node, which presents the same certificate as a client).
	ServerUsage Usage = iota
	// ClientUsage is a TLS client only.
	ClientUsage
)

// NewAuthority creates an authority named name, valid from now.
func NewAuthority(name string, now time.Time) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: authority key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(AuthorityValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// It signs leaves only, never another authority.
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("certs: authority certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: authority certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &Authority{Cert: cert, Key: key, CertPEM: encodeCert(der), KeyPEM: keyPEM}, nil
}

// ParseAuthority reads an authority back from its two PEM files' contents.
func ParseAuthority(certPEM, keyPEM []byte) (*Authority, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: authority: %v", ErrInvalid, err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("%w: authority: %v", ErrInvalid, err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok || !cert.IsCA {
		return nil, fmt.Errorf("%w: authority: not an ECDSA certificate authority", ErrInvalid)
	}
	return &Authority{Cert: cert, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// Issue signs a leaf named name for hosts (DNS names or IP addresses),
// valid from now. A server leaf needs at least one host.
func (a *Authority) Issue(name string, hosts []string, usage Usage, now time.Time) (Leaf, error) {
	if usage == ServerUsage && len(hosts) == 0 {
		return Leaf{}, fmt.Errorf("%w: server certificate %q", ErrNoHosts, name)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Leaf{}, fmt.Errorf("certs: leaf key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return Leaf{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(LeafValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if usage == ServerUsage {
		// Server and client both: a node dialling a route presents its
		// own certificate, and the other node verifies it as a client's.
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.Cert, &key.PublicKey, a.Key)
	if err != nil {
		return Leaf{}, fmt.Errorf("certs: leaf certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return Leaf{}, err
	}
	return Leaf{CertPEM: encodeCert(der), KeyPEM: keyPEM}, nil
}

// Pool is a certificate pool holding the authority alone, to verify its
// leaves with.
func (a *Authority) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(a.Cert)
	return p
}

// Verify checks that leaf is a valid certificate of this authority for
// usage at now, and returns it parsed.
func (a *Authority) Verify(certPEM []byte, usage Usage, now time.Time) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%w: no certificate", ErrInvalid)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	eku := x509.ExtKeyUsageClientAuth
	if usage == ServerUsage {
		eku = x509.ExtKeyUsageServerAuth
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: a.Pool(), CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{eku}}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return cert, nil
}

// TLSCertificate is the leaf as a tls.Certificate.
func (l Leaf) TLSCertificate() (tls.Certificate, error) {
	c, err := tls.X509KeyPair(l.CertPEM, l.KeyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return c, nil
}

func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("certs: serial number: %w", err)
	}
	return n, nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
