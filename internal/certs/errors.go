package certs

import "errors"

var (
	// ErrIncomplete marks a directory that holds part of a set: a
	// certificate without its key, or a server certificate without the
	// authority that signed it. It is refused rather than completed,
	// since completing it would replace what a deployment may be using.
	ErrIncomplete = errors.New("certs: incomplete set")

	// ErrInvalid marks a file that does not hold what its name says (no
	// PEM block, a certificate that does not parse, a key that does not
	// match), or a certificate the authority did not sign.
	ErrInvalid = errors.New("certs: invalid file")

	// ErrNoHosts marks a server certificate asked for without a host name
	// or address.
	ErrNoHosts = errors.New("certs: no hosts")
)
