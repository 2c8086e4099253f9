// Package certs issues the certificates a deployment's NATS links use: a
// private certificate authority and the server certificates it signs
// (ECDSA P-256, crypto/x509 only), so a cluster is set up without
// downloading anything or running another tool.
//
// [WriteDir] lays a directory out once and keeps what is there on every
// later run, so it never rotates a certificate under a running
// deployment:
//
//	res, err := certs.WriteDir("secrets/tls", certs.DirConfig{Hosts: []string{"n1", "n2", "n3", "localhost", "127.0.0.1"}})
//
// writes ca.pem and ca-key.pem (the authority), server.pem and
// server-key.pem (one certificate for every node, valid for each host
// name, usable by a route dialling another node as well as by a server).
// Private keys are 0600 and the directory 0700; a deployment that must
// share a key with a container relaxes that itself.
//
// [NewAuthority] and [Authority.Issue] do the same in memory, for tests and
// benchmarks that need a TLS server without files.
package certs
