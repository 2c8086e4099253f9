// Package e2e holds the end-to-end tests of Splash Fabric on a real
// cluster: three `splash nats` nodes with JetStream, a `splash host` and a
// scalable pool of `splash worker` containers, all from the splash:dev
// image, and a Prometheus scraping them (splash-prometheus:dev), brought
// up with the compose CLI from docker-compose.yml.
//
// The package has no API; everything is in its tests:
//
//	SPLASH_E2E=require go test -count=1 -timeout 20m ./e2e/...    # or scripts/e2e.sh
//
// Two groups of tests live here:
//
//   - TestNATSConfig… load deploy/nats/splash.conf into an in-process
//     server, with one nkey user per pool of the demo catalog rendered
//     from its pool template, and check each identity's permissions with
//     the real host transport and a worker agent per pool. They need
//     nothing but Go.
//   - TestNATSConfigTLS loads the same file with certificates from
//     internal/certs: clients and routes must use TLS, and the JetStream
//     store is written encrypted.
//   - TestCluster… and TestScenario… build the images
//     (scripts/build-image.sh), bring a compose project with a unique name
//     up, run workloads through the host's HTTP API and audit the outcome:
//     every submitted script reached a terminal state, every demo.ledger
//     effect ran exactly once per idempotency key (the counts in KV bucket
//     splash_effects), and the host's metrics agree. Faults end in
//     completion: a NATS node going away fails nothing, and a worker that
//     is killed or cut off fails only the demo.ledger calls it held
//     mid-effect, which end indeterminate, at most as many as the claims
//     the journal shows it holding once it is lost; nothing times out. A
//     host restarted (gracefully, then by a kill) or, of two hosts, one
//     killed for good, loses no script: its suspended sessions are resumed
//     from their ledgers by its next process or adopted by the other host,
//     and complete. The scale scenario
//     also asks the compose Prometheus (its HTTP API, /api/v1/query) that
//     the host and every worker replica are up targets after each change
//     of the pool, and that the counters it scraped match the host's
//     /metrics and the audit. The project is taken down with its volumes
//     even when a test fails, and a failing test prints the compose logs.
//
// Each worker pool of the cluster runs on credentials of its own (the
// worker service is the pool demo, worker-text the pool text):
// TestScenarioPoolIsolation runs the attack table of internal/pooltest
// with the text pool's real nkey and key ring against the cluster, and
// TestScenarioKeyRotation rotates a pool's ring and the host's under load.
//
// Every NATS link of the cluster is TLS (certificates from
// deploy/compose/gen-secrets.sh, which runs `splash certs`), and the tests'
// own clients trust the stack's ca.pem; TestScenarioIntruderTLS tries the
// links without it.
//
// The Docker tests run only when SPLASH_E2E is 1 or require, so a plain
// `go test ./...` stays quick. With 1 they skip, saying why, when no Docker
// engine answers `docker info`; with require they fail instead. Set
// SPLASH_E2E_SKIP_BUILD=1 to reuse the images already built and
// SPLASH_E2E_KEEP=1 to leave a failed project running for inspection.
package e2e
