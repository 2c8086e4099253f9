// Package apiwire holds the HTTP API's wire types: the bodies of its
// requests and answers (docs/api.md describes each). The server
// (package httpapi) writes them and clients (package apiclient) read them,
// so the two cannot disagree on a field; a client links this package and
// nothing of the host.
package apiwire
