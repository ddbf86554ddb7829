/**
 * The coordinator's schema: ONE ordered list of plain PostgreSQL migrations, applied by
 * {@link migrate} on PGlite and on PostgreSQL alike. A migration is never edited once released;
 * changes are new entries. Applied versions are recorded in `schema_migrations`.
 */

import { BLAME_MIGRATION_SQL, PRESIGNATURE_POOL_MIGRATION_SQL } from '../signing/schema.js';
import { TRANSFERS_MIGRATION_SQL } from '../transfers/schema.js';
import { INSTANCE_WEBHOOKS_MIGRATION_SQL, WEBHOOKS_MIGRATION_SQL } from '../webhooks/schema.js';
import type { Db, Queryable } from './db.js';

/** One migration: a version (strictly increasing), a name and a SQL script. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** Every migration, in order. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'core',
    sql: `
CREATE TABLE instance (
  id int PRIMARY KEY CHECK (id = 1),
  initialised_at timestamptz NOT NULL
);

CREATE TABLE profiles (
  profile_id uuid PRIMARY KEY,
  name text NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE TABLE blockchains (
  blockchain_id uuid PRIMARY KEY,
  key text NOT NULL UNIQUE,
  name text NOT NULL,
  family text NOT NULL CHECK (family IN ('ethereum', 'bitcoin', 'litecoin', 'tron')),
  network text NOT NULL,
  chain_id text,
  coin_type int NOT NULL CHECK (coin_type >= 0 AND coin_type < 2147483648),
  account_model text NOT NULL CHECK (account_model IN ('account', 'utxo')),
  curve text NOT NULL CHECK (curve IN ('secp256k1', 'ed25519')),
  testnet boolean NOT NULL,
  development boolean NOT NULL,
  default_enabled boolean NOT NULL,
  sort int NOT NULL
);

CREATE TABLE assets (
  asset_id uuid PRIMARY KEY,
  blockchain_id uuid NOT NULL REFERENCES blockchains(blockchain_id),
  symbol text NOT NULL,
  name text NOT NULL,
  decimals int NOT NULL CHECK (decimals >= 0 AND decimals <= 77),
  kind text NOT NULL CHECK (kind IN ('native', 'erc20', 'trc20')),
  contract_address text,
  sort int NOT NULL,
  UNIQUE (blockchain_id, symbol)
);

CREATE TABLE profile_blockchains (
  profile_id uuid NOT NULL REFERENCES profiles(profile_id),
  blockchain_id uuid NOT NULL REFERENCES blockchains(blockchain_id),
  enabled boolean NOT NULL,
  PRIMARY KEY (profile_id, blockchain_id)
);

CREATE TABLE profile_assets (
  profile_id uuid NOT NULL REFERENCES profiles(profile_id),
  asset_id uuid NOT NULL REFERENCES assets(asset_id),
  enabled boolean NOT NULL,
  PRIMARY KEY (profile_id, asset_id)
);

CREATE TABLE users (
  user_id uuid PRIMARY KEY,
  email text NOT NULL,
  name text NOT NULL,
  role text NOT NULL CHECK (role IN ('ADMIN', 'FINANCE_MANAGER', 'VIEWER')),
  password_hash text NOT NULL,
  totp_secret text,
  totp_pending_secret text,
  blocked_at timestamptz,
  deleted_at timestamptz,
  created_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX users_email_live ON users (lower(email)) WHERE deleted_at IS NULL;

CREATE TABLE login_challenges (
  challenge_id uuid PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES users(user_id),
  method text NOT NULL CHECK (method IN ('email', 'totp')),
  code_hash text,
  attempts int NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  consumed_at timestamptz
);

CREATE TABLE sessions (
  session_id uuid PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES users(user_id),
  token_hash text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz
);

CREATE TABLE api_keys (
  api_key_id uuid PRIMARY KEY,
  profile_id uuid NOT NULL REFERENCES profiles(profile_id),
  name text NOT NULL,
  key_hash text NOT NULL UNIQUE,
  key_prefix text NOT NULL,
  created_by uuid REFERENCES users(user_id),
  created_at timestamptz NOT NULL,
  revoked_at timestamptz,
  last_used_at timestamptz
);

CREATE TABLE server_signers (
  signer_id uuid PRIMARY KEY,
  name text NOT NULL,
  peer_id text NOT NULL,
  address text NOT NULL,
  fingerprint text NOT NULL,
  created_at timestamptz NOT NULL,
  removed_at timestamptz
);
CREATE UNIQUE INDEX server_signers_peer_live ON server_signers (peer_id) WHERE removed_at IS NULL;

CREATE TABLE devices (
  device_id uuid PRIMARY KEY,
  name text NOT NULL,
  platform text NOT NULL CHECK (platform IN ('ios', 'android')),
  os_version text NOT NULL,
  public_key text NOT NULL,
  fingerprint text NOT NULL,
  status text NOT NULL CHECK (status IN ('PENDING', 'APPROVED', 'REJECTED', 'REMOVED')),
  created_at timestamptz NOT NULL,
  decided_at timestamptz,
  decided_by uuid REFERENCES users(user_id)
);
CREATE UNIQUE INDEX devices_key_live ON devices (public_key) WHERE status IN ('PENDING', 'APPROVED');

CREATE TABLE ceremonies (
  ceremony_id uuid PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('dkg', 'sign', 'refresh')),
  status text NOT NULL CHECK (status IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'TIMED_OUT')),
  threshold int NOT NULL,
  parties jsonb NOT NULL,
  progress jsonb NOT NULL,
  started_by uuid REFERENCES users(user_id),
  started_at timestamptz NOT NULL,
  deadline timestamptz NOT NULL,
  finished_at timestamptz,
  error text,
  blamed jsonb,
  transcript_hash text,
  master_key_id uuid
);

CREATE TABLE master_keys (
  master_key_id uuid PRIMARY KEY,
  ceremony_id uuid REFERENCES ceremonies(ceremony_id),
  threshold int NOT NULL,
  parties jsonb NOT NULL,
  secp256k1_public_key text NOT NULL,
  secp256k1_chain_code text NOT NULL,
  ed25519_public_key text NOT NULL,
  ed25519_chain_code text NOT NULL,
  next_wallet_index int NOT NULL DEFAULT 0 CHECK (next_wallet_index >= 0 AND next_wallet_index < 2147483648),
  created_at timestamptz NOT NULL
);

CREATE TABLE wallets (
  wallet_id uuid PRIMARY KEY,
  profile_id uuid NOT NULL REFERENCES profiles(profile_id),
  name text,
  master_key_id uuid NOT NULL REFERENCES master_keys(master_key_id),
  wallet_index int NOT NULL,
  created_at timestamptz NOT NULL,
  UNIQUE (master_key_id, wallet_index)
);
CREATE INDEX wallets_profile ON wallets (profile_id, created_at, wallet_id);

CREATE TABLE wallet_blockchains (
  wallet_id uuid NOT NULL REFERENCES wallets(wallet_id),
  blockchain_id uuid NOT NULL REFERENCES blockchains(blockchain_id),
  PRIMARY KEY (wallet_id, blockchain_id)
);

CREATE TABLE addresses (
  address_id uuid PRIMARY KEY,
  wallet_id uuid NOT NULL REFERENCES wallets(wallet_id),
  blockchain_id uuid NOT NULL REFERENCES blockchains(blockchain_id),
  address_index int NOT NULL,
  address text NOT NULL,
  address_type text NOT NULL,
  public_key text NOT NULL,
  derivation_path text NOT NULL,
  created_at timestamptz NOT NULL,
  UNIQUE (wallet_id, blockchain_id, address_index),
  UNIQUE (blockchain_id, address)
);

CREATE TABLE balances (
  wallet_id uuid NOT NULL REFERENCES wallets(wallet_id),
  asset_id uuid NOT NULL REFERENCES assets(asset_id),
  amount numeric(78, 0) NOT NULL CHECK (amount >= 0),
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (wallet_id, asset_id)
);

CREATE TABLE idempotency_keys (
  profile_id uuid NOT NULL,
  idempotency_key uuid NOT NULL,
  claim_id uuid NOT NULL,
  method text NOT NULL,
  path text NOT NULL,
  request_hash text NOT NULL,
  state text NOT NULL CHECK (state IN ('IN_FLIGHT', 'DONE')),
  status_code int,
  response_body jsonb,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (profile_id, idempotency_key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

CREATE TABLE webhooks (
  webhook_id uuid PRIMARY KEY,
  profile_id uuid NOT NULL REFERENCES profiles(profile_id),
  url text NOT NULL,
  event_types jsonb NOT NULL,
  description text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz
);

CREATE TABLE audit_log (
  seq bigserial PRIMARY KEY,
  audit_id uuid NOT NULL UNIQUE,
  at timestamptz NOT NULL,
  actor_user_id uuid,
  action text NOT NULL,
  target_type text,
  target_id text,
  details jsonb NOT NULL
);
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only';
END
$$;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
`,
  },
  { version: 2, name: 'webhooks', sql: WEBHOOKS_MIGRATION_SQL },
  { version: 3, name: 'transfers', sql: TRANSFERS_MIGRATION_SQL },
  { version: 4, name: 'presignature_pool', sql: PRESIGNATURE_POOL_MIGRATION_SQL },
  {
    version: 5,
    name: 'totp_last_step',
    // RFC 6238 §5.2: the last accepted TOTP time step (floor(unix seconds / 30)) per user; a code
    // of this step or an earlier one is refused. NULL: no code accepted yet for the current secret.
    sql: 'ALTER TABLE users ADD COLUMN totp_last_step bigint',
  },
  {
    version: 6,
    name: 'device_binding',
    // Issue #26 items 7 and 10: a device's MPC peer id (libp2p, Ed25519) is pinned at enrollment
    // after a proof of possession, and the approving Admin binds the device to a user. Devices
    // enrolled before this migration have neither: a PENDING one cannot be approved (enrol again),
    // an APPROVED one gets its peer id pinned at its first hello (trust on first use, audited) and
    // cannot sign policies until it is enrolled again for a user.
    sql: `
ALTER TABLE devices ADD COLUMN mpc_peer_id text;
ALTER TABLE devices ADD COLUMN user_id uuid REFERENCES users(user_id);
CREATE UNIQUE INDEX devices_peer_live ON devices (mpc_peer_id) WHERE status IN ('PENDING', 'APPROVED');
CREATE INDEX devices_peer ON devices (mpc_peer_id);
CREATE INDEX server_signers_peer ON server_signers (peer_id);
`,
  },
  {
    version: 7,
    name: 'session_step_up_idle_api_key_cidrs',
    // #26 items 5 and 12. sessions.last_seen_at: the idle timeout counts from it (written at most
    // once a minute); existing sessions count as last seen at their creation. sessions.step_up_until:
    // end of the session's step-up window (NULL: never stepped up). api_keys.allowed_cidrs: JSON array
    // of normalised CIDR strings the key may be used from; NULL: any address.
    sql: `ALTER TABLE sessions ADD COLUMN last_seen_at timestamptz;
UPDATE sessions SET last_seen_at = created_at;
ALTER TABLE sessions ALTER COLUMN last_seen_at SET NOT NULL;
ALTER TABLE sessions ADD COLUMN step_up_until timestamptz;
ALTER TABLE api_keys ADD COLUMN allowed_cidrs jsonb;`,
  },
  { version: 8, name: 'instance_webhooks', sql: INSTANCE_WEBHOOKS_MIGRATION_SQL },
  {
    version: 9,
    name: 'transfer_lease_owner_signing_window',
    // #27 items 2 and 4. transfers.lease_owner: the pipeline process (random id per process) that
    // holds `lease_until`; a renewal or a result write of another owner does nothing.
    // transfers.signing_since: when the transfer entered PENDING_SIGNATURE (its signing window
    // counts from it); transfers waiting for a signature now count from this migration's time.
    sql: `ALTER TABLE transfers ADD COLUMN lease_owner text;
ALTER TABLE transfers ADD COLUMN signing_since timestamptz;
UPDATE transfers SET signing_since = now() WHERE status = 'PENDING_SIGNATURE';`,
  },
  {
    version: 10,
    name: 'webhook_resource_sequences',
    // #29 item "ordering": the per-resource counter behind `data.sequence` of transfer, wallet and
    // address events (webhooks/outbox.ts); incremented in each event's transaction. Resources
    // start at 1 with their first event after this migration.
    sql: `CREATE TABLE webhook_resource_sequences (
  resource_type text NOT NULL CHECK (resource_type IN ('transfer', 'wallet', 'address')),
  resource_id text NOT NULL,
  sequence bigint NOT NULL CHECK (sequence > 0),
  PRIMARY KEY (resource_type, resource_id)
);`,
  },
  {
    version: 11,
    name: 'bootstrap_token',
    // #29: the SHA-256 of the one-time token `POST /admin/v1/init` requires (users/bootstrap.ts);
    // one row while the instance waits for its first Admin, deleted by the init.
    sql: `CREATE TABLE bootstrap_token (
  id int PRIMARY KEY CHECK (id = 1),
  token_hash text NOT NULL,
  created_at timestamptz NOT NULL
);`,
  },
  {
    version: 12,
    name: 'key_lifecycle',
    // #22: refresh, reshare (replace-signer, change of t of n) and recovery drills (keys/service.ts).
    // ceremonies: the new kinds, the public result (drill signatures, backup state) and the key
    // change a RESHARE runs. master_keys.epoch counts refreshes and committed reshares;
    // refreshed_at drives the scheduled refresh. key_changes: one row per Admin-signed change
    // (document and digest as the Admin signs them; `new_parties` the coordinator's party records).
    // key_changes.pending_attestations: each new party's attestation of its pending shares (hex, in
    // `new_parties` order), sent in every RESHARE_COMMIT; uncommitted: the parties that have not yet
    // acknowledged the commit ('kind:id'). revoked_approvers / revocation_acks: devices whose
    // approval rights were revoked, and which signer (peer id, store id: '' for a signer that reports
    // none) acknowledged each revocation (pushed again before its next ceremony, and again to a
    // signer whose store is new, e.g. restored from a backup).
    sql: `ALTER TABLE ceremonies DROP CONSTRAINT IF EXISTS ceremonies_kind_check;
ALTER TABLE ceremonies ADD CONSTRAINT ceremonies_kind_check
  CHECK (kind IN ('dkg', 'sign', 'refresh', 'reshare', 'reshare_commit', 'drill'));
ALTER TABLE ceremonies ADD COLUMN result jsonb;
ALTER TABLE ceremonies ADD COLUMN key_change_id uuid;
ALTER TABLE master_keys ADD COLUMN epoch int NOT NULL DEFAULT 0;
ALTER TABLE master_keys ADD COLUMN refreshed_at timestamptz;
CREATE TABLE key_changes (
  change_id uuid PRIMARY KEY,
  master_key_id uuid NOT NULL REFERENCES master_keys(master_key_id),
  reason text NOT NULL CHECK (reason IN ('replace-signer', 'reshare')),
  status text NOT NULL CHECK (status IN ('AWAITING_SIGNATURE', 'RUNNING', 'COMMITTING', 'SUCCEEDED', 'FAILED')),
  document text NOT NULL,
  digest text NOT NULL,
  new_threshold int NOT NULL,
  new_parties jsonb NOT NULL,
  signed text,
  ceremony_id uuid,
  error text,
  blamed jsonb,
  pending_attestations jsonb,
  uncommitted jsonb,
  created_by uuid REFERENCES users(user_id),
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX key_changes_key ON key_changes (master_key_id, created_at);
CREATE TABLE revoked_approvers (
  device_id uuid PRIMARY KEY,
  public_key text NOT NULL,
  revoked_at timestamptz NOT NULL
);
CREATE TABLE revocation_acks (
  device_id uuid NOT NULL REFERENCES revoked_approvers(device_id),
  peer_id text NOT NULL,
  store_id text NOT NULL DEFAULT '',
  acked_at timestamptz NOT NULL,
  PRIMARY KEY (device_id, peer_id, store_id)
);`,
  },
  // #23 part 3: the blame signers report, as the coordinator checked it (signing/schema.ts).
  { version: 13, name: 'ceremony_blames', sql: BLAME_MIGRATION_SQL },
  {
    version: 14,
    name: 'utxo_wallets',
    // #28. master_keys.taproot_*: the FROST/Taproot master key as the signers hold it (33-byte
    // compressed public key with its Y parity, hex 66) and its chain code, from which P2TR
    // addresses derive (NULL: a key recorded before this migration; its P2TR addresses cannot be
    // created). addresses.branch: BIP44 change level, 0 external (deposit addresses) / 1 internal
    // (change); label and archived_at: the admin
    // API's address labels and archival (ADDRESS_UPDATED / ADDRESS_DELETED). wallets.archived_at /
    // deleted_at: wallet archival and deletion (WALLET_DELETED). login_networks: the networks a
    // user has logged in from (GEO_ANOMALY_DETECTED). transfers.self_spend: a transfer to the
    // wallet's own address spending exactly the outpoints given (consolidation, CPFP child).
    sql: `ALTER TABLE master_keys ADD COLUMN taproot_public_key text;
ALTER TABLE master_keys ADD COLUMN taproot_chain_code text;
ALTER TABLE addresses ADD COLUMN branch smallint NOT NULL DEFAULT 0 CHECK (branch IN (0, 1));
ALTER TABLE addresses ADD COLUMN label text;
ALTER TABLE addresses ADD COLUMN archived_at timestamptz;
ALTER TABLE addresses DROP CONSTRAINT IF EXISTS addresses_wallet_id_blockchain_id_address_index_key;
ALTER TABLE addresses ADD CONSTRAINT addresses_wallet_chain_branch_index UNIQUE (wallet_id, blockchain_id, branch, address_index);
ALTER TABLE wallets ADD COLUMN archived_at timestamptz;
ALTER TABLE wallets ADD COLUMN deleted_at timestamptz;
CREATE TABLE login_networks (
  user_id uuid NOT NULL REFERENCES users(user_id),
  network text NOT NULL,
  first_seen_at timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL,
  PRIMARY KEY (user_id, network)
);
ALTER TABLE transfers ADD COLUMN self_spend jsonb;`,
  },
  {
    version: 15,
    name: 'session_transport',
    // #24 review (cookie tossing). sessions.transport: how the session authenticates, 'bearer'
    // (Authorization header: CLI, SDK) or 'cookie' (the dashboard's session cookie); a token is
    // refused over the other transport. Existing rows are 'bearer' (a dashboard user logs in
    // again). sessions.csrf_hash: SHA-256 (hex) of the cookie session's random CSRF token.
    sql: `ALTER TABLE sessions ADD COLUMN transport text NOT NULL DEFAULT 'bearer' CHECK (transport IN ('bearer', 'cookie'));
ALTER TABLE sessions ADD COLUMN csrf_hash text;
ALTER TABLE sessions ADD CONSTRAINT sessions_csrf_hash_of_cookie CHECK ((transport = 'cookie') = (csrf_hash IS NOT NULL));`,
  },
  {
    version: 16,
    name: 'replicas',
    // #25 (several coordinator replicas on one PostgreSQL, replicas/*.ts):
    // - coordinator_replicas: one row per coordinator process (random replica_id per start), its
    //   heartbeat; a replica whose heartbeat is older than the TTL is dead (its device connections,
    //   ceremonies and leases are taken over).
    // - coordinator_leases: named singleton leases (a chain's deposit watcher, the key lifecycle
    //   scheduler, …): held by `owner` (a replica_id) until `lease_until`, renewed by the holder.
    // - replica_messages: the cross-replica bus (replicas/bus.ts): rows addressed to one replica or to
    //   '*' (every replica), announced by pg_notify('custodian_replicas', target); read by seq.
    // - device_connections: which replica holds each phone's WebSocket (devices/hub.ts).
    // - coordinator_identity: the libp2p peer id every replica must share (signers and phones pin it).
    // - ceremonies.owner_replica: the replica running a RUNNING ceremony (recovery fails only the
    //   ceremonies of dead replicas).
    sql: `CREATE TABLE coordinator_replicas (
  replica_id text PRIMARY KEY,
  host text NOT NULL,
  pid int NOT NULL,
  started_at timestamptz NOT NULL,
  heartbeat_at timestamptz NOT NULL,
  stopped_at timestamptz
);
CREATE TABLE coordinator_leases (
  name text PRIMARY KEY,
  owner text NOT NULL,
  lease_until timestamptz NOT NULL,
  acquired_at timestamptz NOT NULL
);
CREATE TABLE replica_messages (
  seq bigserial PRIMARY KEY,
  target text NOT NULL,
  topic text NOT NULL,
  sender text NOT NULL,
  body bytea NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX replica_messages_target_seq ON replica_messages (target, seq);
CREATE TABLE device_connections (
  device_id text PRIMARY KEY,
  mpc_peer_id text NOT NULL,
  replica_id text NOT NULL,
  connected_at timestamptz NOT NULL
);
CREATE TABLE coordinator_identity (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  peer_id text NOT NULL,
  created_at timestamptz NOT NULL
);
ALTER TABLE ceremonies ADD COLUMN owner_replica text;`,
  },
  {
    version: 17,
    name: 'replica_shared_state',
    // #25 (replicas; one-time and shared state):
    // - bootstrap_token.writer_*: who wrote the token (users/bootstrap.ts): the replica id (while it
    //   is alive no other replica replaces the token), its host and token file (the log of another
    //   replica names them). NULL on a row written before this migration (treated as a gone writer).
    // - watcher_cursors.version: bumped by every commit of a chain's deposit watcher
    //   (transfers/watcher-store.ts); a commit is a compare-and-set on the version it read, so two
    //   watchers of one chain (a lease handover) never both commit the same blocks.
    sql: `ALTER TABLE bootstrap_token ADD COLUMN writer_replica text;
ALTER TABLE bootstrap_token ADD COLUMN writer_host text;
ALTER TABLE bootstrap_token ADD COLUMN writer_file text;
ALTER TABLE watcher_cursors ADD COLUMN version bigint NOT NULL DEFAULT 0;`,
  },
];

/**
 * Apply every migration not yet recorded in `schema_migrations`, each in its own transaction,
 * serialised between concurrent coordinators by a transaction-scoped advisory lock.
 * @returns the versions applied by this call
 * @throws Error when the recorded history is not a prefix of {@link MIGRATIONS} (a database from a
 *   newer or diverged release)
 */
export async function migrate(db: Db, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  await db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version int PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
  const applied: number[] = [];
  const known = new Set(migrations.map((m) => m.version));
  const rows = await db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
  const foreign = rows.find((r) => !known.has(r.version));
  if (foreign !== undefined) {
    throw new Error(`database has migration ${foreign.version}, unknown to this release; refusing to start`);
  }
  for (const m of migrations) {
    const done = await db.tx(async (q) => {
      await q.query('SELECT pg_advisory_xact_lock(7261864209)');
      // Re-read under the lock: a concurrent coordinator may have applied it meanwhile.
      const has = await q.query('SELECT 1 FROM schema_migrations WHERE version = $1', [m.version]);
      if (has.length > 0) return false;
      await q.exec(m.sql);
      await q.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      return true;
    });
    if (done) applied.push(m.version);
  }
  return applied;
}

/**
 * Versions of {@link MIGRATIONS} not recorded in `schema_migrations` (empty: the schema is current).
 * @throws the database's error (unreachable; no `schema_migrations` table)
 */
export async function pendingMigrations(
  db: Queryable,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<number[]> {
  const rows = await db.query<{ version: number }>('SELECT version FROM schema_migrations');
  const have = new Set(rows.map((r) => Number(r.version)));
  return migrations.filter((m) => !have.has(m.version)).map((m) => m.version);
}
