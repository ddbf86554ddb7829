#!/usr/bin/env bash
# Installs litecoind (Debian package) for the Bitcoin-family regtest tests of @custodian/chains.
# Idempotent: does nothing when litecoind is already on PATH. Needs root (CI runs as root).
set -euo pipefail
if command -v litecoind >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-litecoind.sh: litecoind is missing and installing it needs root (apt-get install -y litecoind)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y litecoind
command -v litecoind >/dev/null
