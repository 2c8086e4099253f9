#!/usr/bin/env bash
# Builds the compose cluster's Jaeger image from the Go module pinned in
# deploy/jaeger (see deploy/jaeger/Dockerfile), FROM scratch with a static
# binary, like the splash image.
#
#   scripts/build-jaeger-image.sh [tag]   (default tag: splash-jaeger:dev)
#
# The first build downloads the module's dependencies through the Go
# module proxy and compiles the collector (minutes); later ones take them
# from the caches.
set -euo pipefail
cd "$(dirname "$0")/.."

tag="${1:-splash-jaeger:dev}"
stage=.build/jaeger

rm -rf "$stage"
mkdir -p "$stage"
trap 'rm -rf "$stage"; rmdir .build 2>/dev/null || true' EXIT

echo "== go build jaeger ($(grep -m1 'jaegertracing/jaeger ' deploy/jaeger/go.mod | awk '{print $2}'))"
(cd deploy/jaeger && CGO_ENABLED=0 GOOS="${GOOS:-linux}" go build -trimpath -ldflags "-s -w" \
  -o "../../$stage/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger)

echo "== docker build -t $tag"
docker build -q -t "$tag" -f deploy/jaeger/Dockerfile "$stage" >/dev/null
echo "== $tag: $(docker run --rm "$tag" version 2>&1 | grep -m1 -o '"gitVersion":"[^"]*"' || echo built)"
