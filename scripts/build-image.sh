#!/usr/bin/env bash
# Builds the static splash binary, the splash image and the worker image
# in one command, and then the compose cluster's Prometheus and Jaeger
# images.
#
#   scripts/build-image.sh [tag]     (default tag: splash:dev)
#
# The worker image (tag $SPLASH_WORKER_IMAGE, default splash-worker:dev) adds
# Bubblewrap, python3 and the Python SDK from this machine's Debian packages
# (scripts/worker-rootfs.sh), so the cluster runs contained Python tools.
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

echo "== worker root file system"
scripts/worker-rootfs.sh "$stage/rootfs"

worker="${SPLASH_WORKER_IMAGE:-splash-worker:dev}"
echo "== docker build -t $tag, -t $worker"
docker build --target splash -t "$tag" .
docker build --target worker -t "$worker" .

echo "== $tag: $(docker run --rm "$tag" version)"
echo "== $worker: $(docker run --rm "$worker" version), $(docker run --rm --entrypoint /usr/bin/python3 "$worker" -c 'import sys, splash_tool; print("python", sys.version.split()[0], "with the SDK")')"

scripts/build-prometheus-image.sh "${SPLASH_PROMETHEUS_IMAGE:-splash-prometheus:dev}"

scripts/build-jaeger-image.sh "${SPLASH_JAEGER_IMAGE:-splash-jaeger:dev}"
