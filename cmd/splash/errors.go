package main

import "errors"

// Errors a command returns; run maps them to exit statuses, so a script that
// calls splash can tell a mistake in its own invocation (2) from a failure
// of the work it asked for (1).
var (
	// errUsage marks a mistake in the command line or environment: an
	// unknown command or flag, a malformed value, a missing argument. It
	// exits 2 and prints the command's usage.
	errUsage = errors.New("usage")

	// errCatalog marks a catalog file that is refused: its message names
	// the tool and field. It exits 2, like a usage error, but without the
	// usage, which says nothing about the file.
	errCatalog = errors.New("catalog")

	// errTokenFile marks an API token file that is refused at start: its
	// message names the token and field. It exits 2, as errCatalog does.
	errTokenFile = errors.New("token file")

	// errKeyFile marks a key file that cannot be read or holds no valid key.
	errKeyFile = errors.New("key file")

	// errNats marks a NATS node that failed to start or stopped by itself.
	errNats = errors.New("nats node")

	// errTLS marks TLS material that cannot be read or used: a CA or
	// certificate file that is missing or does not parse, a key that does
	// not match its certificate, a certificate directory left incomplete.
	errTLS = errors.New("tls")

	// errUnhealthy marks a health endpoint that did not answer 2xx.
	errUnhealthy = errors.New("unhealthy")

	// errStart marks a host, worker or dev process that could not start
	// one of its parts (NATS connection, streams, listeners).
	errStart = errors.New("start")
)
