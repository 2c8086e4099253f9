#!/usr/bin/env bash
# Runs the end-to-end suite (e2e/) against a real compose cluster.
#
#   scripts/e2e.sh [go test flags]
#
# Where a Docker engine answers, SPLASH_E2E=require makes a missing engine
# or compose CLI a failure rather than a skip; elsewhere SPLASH_E2E=1 lets
# the Docker tests say why they skip, and only the NATS permission tests
# run. (A plain `go test ./...` without SPLASH_E2E skips the compose
# scenarios.) A failed scenario prints its compose logs.
set -euo pipefail
cd "$(dirname "$0")/.."

if docker info >/dev/null 2>&1; then
  export SPLASH_E2E=require
  echo "== docker engine answers: SPLASH_E2E=require"
else
  export SPLASH_E2E="${SPLASH_E2E:-1}"
  echo "== no docker engine: the cluster tests will skip"
fi
exec go test -count=1 -timeout 20m "$@" ./e2e/...
