#!/usr/bin/env bash
# Command-line tools scripts/operator-walkthrough.sh needs (the operator guide's commands use them):
# jq, curl, openssl, setsid, base64, and the PostgreSQL client tools (psql, createdb, dropdb). Idempotent; called
# by install-system-deps.sh. Needs root (apt-get) when something is missing.
set -euo pipefail
missing=()
for c in jq curl openssl setsid base64 psql createdb dropdb; do command -v "$c" >/dev/null 2>&1 || missing+=("$c"); done
[ "${#missing[@]}" -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "install-walkthrough-deps.sh: missing ${missing[*]}; installing needs root (apt-get install -y jq curl openssl util-linux coreutils postgresql-client)" >&2
  exit 1
fi
apt-get update
apt-get install -y jq curl openssl util-linux coreutils postgresql-client
