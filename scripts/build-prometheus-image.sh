#!/usr/bin/env bash
# Builds the compose cluster's Prometheus image from Debian's prometheus
# package, FROM scratch like the splash image (see deploy/prometheus/Dockerfile).
#
#   scripts/build-prometheus-image.sh [tag]   (default tag: splash-prometheus:dev)
#
# The package is installed when /usr/bin/prometheus is missing (needs root,
# as in CI; .ci/promtool.sh installs the same package for promtool). Its
# binary is dynamically linked, so the stage in .build/prometheus/ gets the
# binary plus every file `ldd` lists (the loader and libc), each at the path
# ldd gives; the classic web UI it serves from /usr/share/prometheus/web,
# with the package's symlinks resolved; and deploy/prometheus/prometheus.yml
# and alerts.yml as /etc/prometheus. The image is the machine's own
# architecture, whatever GOARCH says.
set -euo pipefail
cd "$(dirname "$0")/.."

tag="${1:-splash-prometheus:dev}"
bin=/usr/bin/prometheus
web=/usr/share/prometheus/web
stage=.build/prometheus

if [ ! -x "$bin" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "$bin is missing: install Debian's prometheus package (apt-get install prometheus) as root" >&2
    exit 1
  fi
  echo "== installing $bin (Debian package prometheus)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

rm -rf "$stage"
mkdir -p "$stage/rootfs/usr/bin" "$stage/rootfs/etc/prometheus" "$stage/data"
trap 'rm -rf "$stage"; rmdir .build 2>/dev/null || true' EXIT

cp "$bin" "$stage/rootfs/usr/bin/prometheus"

# Every absolute path ldd prints (linux-vdso has none) is a file the loader
# maps, the loader itself included; -L copies the file behind a symlink
# (Debian's /lib64/ld-linux-x86-64.so.2 is one). A static binary makes ldd
# fail with "not a dynamic executable", and then there is nothing to add.
if libs=$(ldd "$bin" 2>/dev/null); then
  for f in $(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' <<<"$libs" | sort -u); do
    mkdir -p "$stage/rootfs$(dirname "$f")"
    cp -L "$f" "$stage/rootfs$f"
    echo "== with $f"
  done
else
  echo "== $bin loads no shared libraries"
fi

# The classic UI: templates, and static files that are mostly symlinks into
# /usr/share/javascript. moment-timezone's raw data (over 200 MB) is not
# among what the pages load: they load moment-timezone-with-data.min.js.
if [ -d "$web" ]; then
  mkdir -p "$stage/rootfs$(dirname "$web")"
  tar -C "$(dirname "$web")" -chf - --exclude='static/moment-timezone/data' "$(basename "$web")" |
    tar -C "$stage/rootfs$(dirname "$web")" -xf -
fi

install -m 0644 deploy/prometheus/prometheus.yml deploy/prometheus/alerts.yml "$stage/rootfs/etc/prometheus/"

echo "== docker build -t $tag ($(du -sh "$stage" | cut -f1) staged)"
docker build -q -t "$tag" -f deploy/prometheus/Dockerfile "$stage" >/dev/null

# The loader and libraries must be the ones the binary wants: a missing one
# fails right here rather than in a compose cluster.
if ! version=$(docker run --rm "$tag" --version 2>&1); then
  echo "$tag does not start:" >&2
  echo "$version" >&2
  exit 1
fi
echo "== $tag: ${version%%$'\n'*}"
