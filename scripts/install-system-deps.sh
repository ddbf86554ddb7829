#!/usr/bin/env bash
# System packages the test suite needs (real nodes): litecoind for the UTXO regtest tests; the
# tools of the operator walkthrough (jq, curl, openssl, the PostgreSQL client); Chromium for the
# dashboard end-to-end test.
# Idempotent; called by .ci/run. Needs root (apt-get) when something is missing.
set -euo pipefail
cd "$(dirname "$0")"
bash ./install-litecoind.sh
bash ./install-walkthrough-deps.sh
bash ./install-chromium.sh
