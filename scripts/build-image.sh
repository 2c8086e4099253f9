#!/usr/bin/env bash
# Builds the static splash binary and the splash image in one command, and
# then the compose cluster's Prometheus image.
#
#   scripts/build-image.sh [tag]     (default tag: splash:dev)
#
# The image is FROM scratch (see Dockerfile): the binary is built here with
# CGO_ENABLED=0 and staged in .build/image/, which .dockerignore lets into
# an otherwise empty build context, and removed afterwards. Set GOARCH to build for another
# platform.
#
# The Prometheus image is tagged $SPLASH_PROMETHEUS_IMAGE (default
# splash-prometheus:dev), the name docker-compose.yml runs; see
# scripts/build-prometheus-image.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

tag="${1:-splash:dev}"
stage=.build/image
version="${SPLASH_VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"

rm -rf "$stage"
mkdir -p "$stage/data"
# The staged binary is only the build context's input; leave the checkout
# as it was.
trap 'rm -rf "$stage"; rmdir .build 2>/dev/null || true' EXIT

echo "== go build ($version, ${GOOS:-linux}/${GOARCH:-$(go env GOARCH)})"
CGO_ENABLED=0 GOOS="${GOOS:-linux}" go build \
  -trimpath \
  -ldflags "-s -w -X main.version=$version" \
  -o "$stage/splash" ./cmd/splash

echo "== docker build -t $tag"
docker build -t "$tag" .

echo "== $tag: $(docker run --rm "$tag" version)"

scripts/build-prometheus-image.sh "${SPLASH_PROMETHEUS_IMAGE:-splash-prometheus:dev}"
