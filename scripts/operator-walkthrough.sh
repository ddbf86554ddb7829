#!/usr/bin/env bash
# The operator guide's production walkthrough (docs/operator-guide.md, "Walkthrough"), end to end on
# loopback: PostgreSQL (a fresh database per run, dropped at the end), anvil, the coordinator in
# production mode, two server signers, two phone simulators — each a separate process (group) —
# through the master key ceremony, a wallet, a deposit and one transfer SENT and mined.
#
# Every command the guide shows runs through `guide '<command>' [extra args]`: the quoted text is
# the guide's line, verbatim (packages/cli/test/operator-walkthrough.slow.test.ts checks that each
# one appears in docs/operator-guide.md); extra args are this script's loopback-only additions
# (test-only safe primes, so the ceremony does not wait for prime search). Lines without `guide`
# are this script's own plumbing (ports, files, reading ids from JSON output).
#
# Needs: node (the repository built: `npx tsc -b`), psql/createdb/dropdb reaching
# postgres@127.0.0.1:5432 with trust auth (PGHOST/PGPORT/PGUSER override), curl, jq, openssl.
# Environment: KEEP_WORK=1 keeps the temporary folder (logs, configs) after the run.
# Exit code 0 when the transfer is SENT and its transaction mined with status 1.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/custodian-walkthrough.XXXXXX")
export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
DB="custodian_walkthrough_$(date +%s)_$$"
PGROUPS=()

say() { printf '%s ▶ %s\n' "$(date -u +%H:%M:%S)" "$*"; }
fail() {
  printf 'walkthrough FAILED: %s\n' "$*" >&2
  exit 1
}

# ---- process groups: every daemon runs in its own session; all are ended on exit ----------------

cleanup() {
  local code=$?
  trap - EXIT INT TERM
  for pg in "${PGROUPS[@]}"; do kill -TERM -- "-$pg" 2>/dev/null || true; done
  for _ in $(seq 1 50); do
    local alive=0
    for pg in "${PGROUPS[@]}"; do kill -0 -- "-$pg" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.2
  done
  for pg in "${PGROUPS[@]}"; do kill -KILL -- "-$pg" 2>/dev/null || true; done
  dropdb --if-exists --force "$DB" >/dev/null 2>&1 || true
  if [ "$code" != 0 ]; then
    for f in "$WORK"/logs/*.log; do
      [ -f "$f" ] || continue
      printf '\n---- %s (last 40 lines) ----\n' "$f" >&2
      tail -n 40 "$f" >&2
    done
  fi
  if [ "${KEEP_WORK:-}" = 1 ]; then echo "work folder kept: $WORK" >&2; else rm -rf "$WORK"; fi
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Run one of the guide's commands (verbatim, quoted) with optional extra arguments.
guide() {
  local cmd=$1
  shift
  eval "$cmd"' "$@"' || {
    printf 'walkthrough: the guide'"'"'s command failed: %s\n' "$cmd" >&2
    return 1
  }
}

# Start one of the guide's long-running commands in its own process group; wait for `ready` in its log.
guide_daemon() {
  local name=$1 ready=$2 cmd=$3
  shift 3
  local log="$WORK/logs/$name.log"
  setsid bash -c "$cmd"' "$@"' "$name" "$@" >"$log" 2>&1 </dev/null &
  local pid=$!
  PGROUPS+=("$pid")
  for _ in $(seq 1 600); do
    grep -q -- "$ready" "$log" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || fail "$name exited during start-up (see $log)"
    sleep 0.2
  done
  fail "$name not ready after 120 s (no \"$ready\" in $log)"
}

# Poll `probe` (a shell snippet printing a value when done) every second, up to `secs`.
wait_for() {
  local what=$1 secs=$2 probe=$3 v
  for _ in $(seq 1 "$secs"); do
    v=$(eval "$probe" 2>/dev/null || true)
    if [ -n "$v" ]; then
      printf '%s' "$v"
      return 0
    fi
    sleep 1
  done
  fail "timed out waiting for $what"
}

free_ports() {
  node -e '
    const net = require("node:net");
    const n = Number(process.argv[1]);
    const servers = [];
    let left = n;
    for (let i = 0; i < n; i++) {
      const s = net.createServer();
      servers.push(s);
      s.listen(0, "127.0.0.1", () => { if (--left === 0) {
        console.log(servers.map((x) => x.address().port).join(" "));
        servers.forEach((x) => x.close());
      } });
    }' "$1"
}

# ---- the host: folders, ports, the `custodian` command, PostgreSQL, anvil ------------------------

setup_host() {
  mkdir -p "$WORK/bin" "$WORK/logs" "$WORK/config"
  [ -f "$ROOT/packages/cli/dist/bin.js" ] || fail "build first: npx tsc -b"
  printf '#!/bin/sh\nexec node "%s/packages/cli/dist/bin.js" "$@"\n' "$ROOT" >"$WORK/bin/custodian"
  chmod +x "$WORK/bin/custodian"
  export PATH="$WORK/bin:$PATH"
  export XDG_CONFIG_HOME="$WORK/config" # the saved admin session
  read -r API_PORT ANVIL_PORT S1_PORT S2_PORT <<<"$(free_ports 4)"
  # the guide's variables, for this host
  export CUSTODIAN_ETC="$WORK/etc" CUSTODIAN_VAR="$WORK/var" CUSTODIAN_USER
  CUSTODIAN_USER=$(id -un)
  export COORDINATOR_HOST=127.0.0.1 COORDINATOR_PORT=$API_PORT
  export CUSTODIAN_URL="http://127.0.0.1:$API_PORT"
  export DATABASE_URL="postgres://$PGUSER@$PGHOST:$PGPORT/$DB"
  export ADMIN_EMAIL=admin@example.com ADMIN_NAME="First Admin"
  export CHAIN=ethereum-local
  CUSTODIAN_ADMIN_PASSWORD="walkthrough $(openssl rand -hex 12) passphrase"
  export CUSTODIAN_ADMIN_PASSWORD
  say "work folder $WORK; coordinator port $API_PORT, anvil $ANVIL_PORT, signers $S1_PORT $S2_PORT"
}

create_database() {
  createdb "$DB" || fail "cannot create database $DB on $PGHOST:$PGPORT as $PGUSER"
  say "database $DB created"
}

start_anvil() {
  ANVIL_URL="http://127.0.0.1:$ANVIL_PORT"
  guide_daemon anvil "Listening on" "$ROOT/packages/cli/node_modules/.bin/anvil" \
    --host 127.0.0.1 --port "$ANVIL_PORT" --chain-id 31337
  say "anvil on $ANVIL_URL"
}

rpc() {
  curl -sf -H 'content-type: application/json' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$1\",\"params\":$2}" "$ANVIL_URL" | jq -c '.result // empty'
}

# ---- 1. coordinator -------------------------------------------------------------------------------

start_coordinator() {
  guide 'install -d -m 0750 -o "$CUSTODIAN_USER" "$CUSTODIAN_ETC" "$CUSTODIAN_VAR"'
  configure_mail
  # the guide's coordinator.json, with this host's Ethereum node and mail server
  jq -n --arg url "$ANVIL_URL" --arg smtp "$SMTP_URL" \
    '{ chains: { "ethereum-local": { rpcUrl: $url } }, signing: { presignaturePool: 2 }, mail: { transport: "smtp", url: $smtp } }' \
    >"$CUSTODIAN_ETC/coordinator.json"
  export COORDINATOR_PEER_ID
  COORDINATOR_PEER_ID=$(guide 'custodian coordinator peer-id --data-dir "$CUSTODIAN_VAR/coordinator" --create')
  guide_daemon coordinator "coordinator listening on" \
    'custodian coordinator start --mode production --data-dir "$CUSTODIAN_VAR/coordinator" --host "$COORDINATOR_HOST" --port "$COORDINATOR_PORT" --base-url "$CUSTODIAN_URL" --config "$CUSTODIAN_ETC/coordinator.json"'
  grep -q "peer id $COORDINATOR_PEER_ID" "$WORK/logs/coordinator.log" ||
    fail "the coordinator runs with another peer id than \`peer-id\` printed"
  say "coordinator (production, PostgreSQL) on $CUSTODIAN_URL, peer id $COORDINATOR_PEER_ID"
}

# Mail transport of production mode: a real SMTP server process on loopback (scripts/smtp-sink.mjs,
# standing in for the operator's mail server) that stores each message it receives as an .eml file.
configure_mail() {
  MAIL_DIR="$WORK/mail"
  guide_daemon smtp-sink "smtp-sink listening on" node "$ROOT/scripts/smtp-sink.mjs" --dir "$MAIL_DIR"
  SMTP_URL="smtp://$(grep -o 'listening on 127.0.0.1:[0-9]*' "$WORK/logs/smtp-sink.log" | sed 's/listening on //')"
  say "SMTP sink on $SMTP_URL"
}

# How `admin login` gets the e-mailed code: the sink's folder of .eml files (see configure_mail).
login_code_source() {
  printf '%s' "$MAIL_DIR"
}

# ---- first Admin ------------------------------------------------------------------------------------

# The first Admin, with the one-time bootstrap token the coordinator wrote at its first start.
admin_init() {
  guide 'custodian admin init --email "$ADMIN_EMAIL" --name "$ADMIN_NAME" --bootstrap-token-file "$CUSTODIAN_VAR/coordinator/bootstrap-token"'
  [ ! -e "$CUSTODIAN_VAR/coordinator/bootstrap-token" ] || fail "the bootstrap token file is still there after init"
}

first_admin() {
  admin_init
  export ADMIN_MAILBOX
  ADMIN_MAILBOX=$(login_code_source)
  guide 'custodian admin login --email "$ADMIN_EMAIL" --mailbox "$ADMIN_MAILBOX"'
  export PROFILE
  PROFILE=$(guide 'custodian admin --json profiles list' | jq -r '.[0].profile_id')
  say "Admin $ADMIN_EMAIL logged in; profile $PROFILE"
}

# ---- 2. server signers -------------------------------------------------------------------------------

init_signers() {
  for SIGNER in s1 s2; do
    export SIGNER
    guide 'install -d -m 0750 -o "$CUSTODIAN_USER" "$CUSTODIAN_ETC"'
    guide 'install -m 0600 -o "$CUSTODIAN_USER" /dev/null "$CUSTODIAN_ETC/$SIGNER.passphrase"'
    guide 'openssl rand -base64 32 > "$CUSTODIAN_ETC/$SIGNER.passphrase"'
    guide 'custodian signer init -d "$CUSTODIAN_VAR/$SIGNER" --passphrase-file "$CUSTODIAN_ETC/$SIGNER.passphrase"' \
      >"$WORK/$SIGNER.identity.json"
    # read again later (e.g. when registering): never creates an identity
    cmp -s <(guide 'custodian signer peer-id -d "$CUSTODIAN_VAR/$SIGNER"') "$WORK/$SIGNER.identity.json" ||
      fail "signer peer-id disagrees with signer init"
  done
}

# The guide's signer.json for signer $1 on port $2, peer $3 on port $4: no Admin device trusted yet.
write_signer_config() {
  local name=$1 port=$2 other=$3 other_port=$4 k=$5
  local primes="$WORK/primes-$name.json"
  jq "{ safePrimes: .safePrimes1024[$((2 * k)):$((2 * k + 2))] }" \
    "$ROOT/packages/paillier/test/fixtures/test-only-safe-primes.json" >"$primes"
  jq -n \
    --arg listen "/ip4/127.0.0.1/tcp/$port" --arg data "$CUSTODIAN_VAR/$name" \
    --arg peer "$(jq -r .peerId "$WORK/$other.identity.json")" --arg addr "/ip4/127.0.0.1/tcp/$other_port" \
    --arg coordinator "$COORDINATOR_PEER_ID" --arg pass "$CUSTODIAN_ETC/$name.passphrase" \
    --arg primes "$primes" --arg state "$CUSTODIAN_VAR/$name-state/generation.json" '{
      listen: $listen, dataDir: $data,
      peers: [{ peerId: $peer, addrs: [$addr] }],
      coordinator: { peerId: $coordinator },
      passphrase: { file: $pass },
      logLevel: "info",
      ecdsa: { level: "SECURITY_112", primePool: 0, primeSeedFile: $primes },
      trustedAdminDevices: [],
      chains: { "ethereum-local": { family: "ethereum", chainId: 31337, maxFee: "10000000000000000" } },
      generationFile: $state
    }' >"$CUSTODIAN_ETC/$name.json"
  mkdir -p "$CUSTODIAN_VAR/$name-state"
}

start_signers() {
  write_signer_config s1 "$S1_PORT" s2 "$S2_PORT" 0
  write_signer_config s2 "$S2_PORT" s1 "$S1_PORT" 1
  for SIGNER in s1 s2; do
    export SIGNER
    guide_daemon "signer-$SIGNER" '"signer started"' \
      'custodian signer start -c "$CUSTODIAN_ETC/$SIGNER.json"'
  done
  guide 'custodian admin step-up'
  for SIGNER in s1 s2; do
    export SIGNER SIGNER_ADDRESS PEER_ID FINGERPRINT
    PEER_ID=$(jq -r .peerId "$WORK/$SIGNER.identity.json")
    FINGERPRINT=$(jq -r .fingerprint "$WORK/$SIGNER.identity.json")
    SIGNER_ADDRESS=$(jq -r '.listen' "$CUSTODIAN_ETC/$SIGNER.json")
    guide 'custodian admin --json signers add --name "$SIGNER" --peer-id "$PEER_ID" --address "$SIGNER_ADDRESS" --fingerprint "$FINGERPRINT"' |
      jq -r .signer_id >"$WORK/$SIGNER.signer_id"
  done
  export S1_ID S2_ID
  S1_ID=$(cat "$WORK/s1.signer_id")
  S2_ID=$(cat "$WORK/s2.signer_id")
  say "signers s1 ($S1_ID) and s2 ($S2_ID) running and registered"
}

# ---- 3. phones: the Admin's first, its key to every signer (reload), then the other -------------------

enroll_phone() {
  local k=$1 name=$2
  export PHONE_DIR="$WORK/phone-$k" PHONE_NAME=$name PIN_FILE="$WORK/phone-$k.pin"
  printf '%s\n' "$(openssl rand -hex 4)" >"$PIN_FILE"
  guide 'custodian mobile enroll --url "$CUSTODIAN_URL" --data "$PHONE_DIR" --name "$PHONE_NAME" --pin-file "$PIN_FILE"' \
    2>/dev/null >"$WORK/phone-$k.enroll.json"
  export DEVICE_ID FINGERPRINT
  DEVICE_ID=$(jq -r .device_id "$WORK/phone-$k.enroll.json")
  FINGERPRINT=$(jq -r .fingerprint "$WORK/phone-$k.enroll.json") # what the phone shows
  guide 'custodian admin devices list --status PENDING' >/dev/null
  guide 'custodian admin step-up'
  guide 'custodian admin devices approve "$DEVICE_ID" --fingerprint "$FINGERPRINT" --user "$ADMIN_EMAIL"' >/dev/null
  printf '%s' "$DEVICE_ID" >"$WORK/phone-$k.device_id"
}

trust_admin_device() {
  export ADMIN_DEVICE_ID ADMIN_DEVICE_KEY
  ADMIN_DEVICE_ID=$(cat "$WORK/phone-1.device_id")
  ADMIN_DEVICE_KEY=$(guide 'custodian admin --json devices show "$ADMIN_DEVICE_ID"' | jq -r .public_key)
  for SIGNER in s1 s2; do
    export SIGNER
    guide 'jq --arg id "$ADMIN_DEVICE_ID" --arg key "$ADMIN_DEVICE_KEY" ".trustedAdminDevices += [{deviceId: \$id, publicKey: \$key}]" "$CUSTODIAN_ETC/$SIGNER.json" > "$CUSTODIAN_ETC/$SIGNER.json.new"'
    guide 'mv "$CUSTODIAN_ETC/$SIGNER.json.new" "$CUSTODIAN_ETC/$SIGNER.json"'
    guide 'custodian signer reload -c "$CUSTODIAN_ETC/$SIGNER.json"' | jq -e '.ok and (.applied | index("trustedAdminDevices"))' >/dev/null ||
      fail "signer $SIGNER did not take the Admin device key"
  done
  say "signers trust the Admin's device $ADMIN_DEVICE_ID (reloaded, not restarted)"
}

run_phone() {
  local k=$1
  export PHONE_DIR="$WORK/phone-$k" PIN_FILE="$WORK/phone-$k.pin"
  jq -n '{ "ethereum-local": { family: "ethereum", chainId: 31337, maxFee: "10000000000000000" } }' \
    >"$CUSTODIAN_ETC/chains.json"
  jq "{ safePrimes: .safePrimes1024[$((2 * k + 2)):$((2 * k + 4))] }" \
    "$ROOT/packages/paillier/test/fixtures/test-only-safe-primes.json" >"$WORK/primes-phone-$k.json"
  guide_daemon "phone-$k" "connected to the coordinator" \
    'custodian mobile run --data "$PHONE_DIR" --pin-file "$PIN_FILE" --auto-approve --trusted-admin-key "$ADMIN_DEVICE_KEY" --chains "$CUSTODIAN_ETC/chains.json"' \
    --ecdsa-level SECURITY_112 --prime-seed-file "$WORK/primes-phone-$k.json"
}

phones() {
  enroll_phone 1 "Admin's phone"
  trust_admin_device
  run_phone 1
  enroll_phone 2 "Approver phone"
  run_phone 2
  say "phones enrolled, approved after comparing fingerprints, running"
}

# ---- master key, chain, policy, API key ---------------------------------------------------------------

master_key() {
  export PHONE1_ID PHONE2_ID
  PHONE1_ID=$(cat "$WORK/phone-1.device_id")
  PHONE2_ID=$(cat "$WORK/phone-2.device_id")
  say "master key ceremony 3 of 4 (deadline 5 minutes)"
  guide 'custodian admin master-keys create --threshold 3 --server "$S1_ID" "$S2_ID" --device "$PHONE1_ID" "$PHONE2_ID" --wait' \
    >"$WORK/logs/master-key.log" 2>&1 || fail "master key ceremony (see $WORK/logs/master-key.log)"
  guide 'custodian admin --json master-keys list' | jq -e '.total == 1' >/dev/null || fail "no master key"
  say "master key created"
}

enable_chain() {
  guide 'custodian admin chains list --all' >/dev/null
  guide 'custodian admin chains enable "$CHAIN"'
}

policy() {
  export POLICY_FILE="$CUSTODIAN_ETC/policy.json" POLICY_ID
  ETH_ASSET=$(guide 'custodian admin --json profiles assets "$PROFILE" --page-size 200' |
    jq -r '.data[] | select(.blockchain == "ethereum-local" and .symbol == "ETH") | .asset_id')
  [ -n "$ETH_ASSET" ] || fail "no ETH asset on ethereum-local"
  jq -n --arg asset "$ETH_ASSET" '{
    name: "ETH to the treasury account",
    scope: { wallet_ids: null, blockchain: "ethereum-local", asset_id: $asset },
    whitelist: ["0x70997970C51812dc3A010C7d01b50e0d17dc79C8"],
    per_transaction_limit: "2000000000000000000",
    daily_limit: "10000000000000000000",
    approvals: { quorum: 1, above_amount: "0" }
  }' >"$POLICY_FILE"
  POLICY_ID=$(guide 'custodian admin --json policies create "$PROFILE" --file "$POLICY_FILE"' | jq -r .policy_id)
  export PHONE_DIR="$WORK/phone-1" PIN_FILE="$WORK/phone-1.pin"
  guide 'export CUSTODIAN_ADMIN_TOKEN=$(jq -r .token "${XDG_CONFIG_HOME:-$HOME/.config}/custodian/admin-session.json")'
  guide 'custodian mobile sign-policy --data "$PHONE_DIR" --profile "$PROFILE" --policy "$POLICY_ID" --pin-file "$PIN_FILE"' \
    >/dev/null 2>&1 || fail "policy signature"
  unset CUSTODIAN_ADMIN_TOKEN
  say "policy $POLICY_ID signed by the Admin's phone"
}

api_key() {
  guide 'custodian admin step-up'
  export API_KEY
  API_KEY=$(guide 'custodian admin --json api-keys create --profile "$PROFILE" --name "$API_KEY_NAME"' | jq -r .api_key)
}

# ---- wallet, deposit, transfer ------------------------------------------------------------------------

wallet_deposit_transfer() {
  export API_KEY_NAME=walkthrough
  api_key
  local api="$CUSTODIAN_URL/api/v1/profiles/$PROFILE"
  export WALLET_NAME=treasury
  guide 'custodian admin --json wallets create "$PROFILE" --blockchain "$CHAIN" --name "$WALLET_NAME"' >"$WORK/wallet.json"
  WALLET_ID=$(jq -r .wallet_id "$WORK/wallet.json")
  local address
  address=$(jq -r '.addresses[0].address' "$WORK/wallet.json")
  say "wallet $WALLET_ID, deposit address $address"
  # the deposit: 1.5 ETH from anvil's unlocked account #0
  rpc eth_sendTransaction "[{\"from\":\"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266\",\"to\":\"$address\",\"value\":\"0x14d1120d7b160000\"}]" >/dev/null
  wait_for "the deposit in the balance" 120 \
    "curl -sf -H 'X-API-Key: $API_KEY' '$api/wallets/$WALLET_ID/balances/$ETH_ASSET' | jq -r 'select(.amount == \"1.5\") | .amount'" >/dev/null
  say "deposit of 1.5 ETH seen"
  local transfer
  transfer=$(curl -sf -X POST -H "X-API-Key: $API_KEY" -H "Idempotency-Key: $(node -e 'console.log(crypto.randomUUID())')" \
    -H 'content-type: application/json' \
    -d "{\"wallet_id\":\"$WALLET_ID\",\"destination_address\":\"0x70997970C51812dc3A010C7d01b50e0d17dc79C8\",\"asset_id\":\"$ETH_ASSET\",\"amount\":\"0.1\",\"external_id\":\"walkthrough-1\"}" \
    "$api/transfers" | jq -r .transfer_id)
  [ -n "$transfer" ] || fail "transfer not created"
  say "transfer $transfer created; the phones approve, the signers sign"
  local status
  status=$(wait_for "the transfer to be SENT" 300 \
    "curl -sf -H 'X-API-Key: $API_KEY' '$api/transfers/$transfer' | jq -r 'select(.status | IN(\"SENT\",\"REJECTED\",\"REJECTED_BY_POLICY\",\"NO_POLICY_FOUND\",\"EXPIRED\",\"FAILED\")) | \"\\(.status) \\(.sub_status // \"\") \\(.tx_hash // \"\")\"'")
  case "$status" in
    SENT*) ;;
    *) fail "transfer ended $status" ;;
  esac
  local hash=${status##* }
  local mined
  mined=$(wait_for "the transaction receipt" 60 "rpc eth_getTransactionReceipt '[\"$hash\"]' | jq -r '.status // empty'")
  [ "$mined" = 0x1 ] || fail "transaction $hash mined with status $mined"
  say "transfer SENT, transaction $hash mined (status 1)"
}

main() {
  setup_host
  create_database
  start_anvil
  start_coordinator
  first_admin
  init_signers
  start_signers
  phones
  master_key
  enable_chain
  policy
  wallet_deposit_transfer
  echo "WALKTHROUGH OK"
}

main "$@"
