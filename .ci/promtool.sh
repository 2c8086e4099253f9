#!/usr/bin/env bash
# Checks deploy/prometheus with promtool: the scrape config, the alert rules,
# and the alert unit tests. Installs promtool from Debian's prometheus package
# when it is missing (needs root, as in CI).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v promtool >/dev/null 2>&1; then
  echo "== installing promtool (Debian package prometheus)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
promtool --version | head -n 1

echo "== promtool check config"
# check config parses the rule files too but never resolves targets, so the
# compose service names (host, worker) need not exist here.
promtool check config deploy/prometheus/prometheus.yml

echo "== promtool check rules"
promtool check rules deploy/prometheus/alerts.yml

echo "== promtool test rules"
promtool test rules deploy/prometheus/alerts_test.yml
