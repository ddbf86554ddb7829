#!/usr/bin/env bash
# Installs Chromium (Debian package, /usr/bin/chromium) for the Playwright end-to-end test of the
# dashboard (packages/dashboard/test/dashboard-e2e.slow.test.ts drives it through playwright-core;
# no browser is downloaded at run time). Idempotent: does nothing when chromium is already there.
# Needs root (CI runs as root).
set -euo pipefail
if [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-chromium.sh: chromium is missing and installing it needs root (apt-get install -y chromium)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y chromium
command -v chromium >/dev/null
