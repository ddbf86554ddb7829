/**
 * Schema of policies, transfers, approvals and the chain watchers' state (migration "transfers").
 * Money is `numeric(78,0)` base units. Plain PostgreSQL: runs on PGlite and on a server.
 */
export const TRANSFERS_MIGRATION_SQL = `
CREATE TABLE policies (
  policy_id uuid PRIMARY KEY,
  profile_id uuid NOT NULL REFERENCES profiles(profile_id),
  name text NOT NULL,
  created_by uuid,
  created_at timestamptz NOT NULL,
  deleted_at timestamptz
);
CREATE INDEX policies_profile ON policies (profile_id, created_at, policy_id);

-- One row per version. A version takes effect (ACTIVE) only once signed by an Admin's enrolled
-- device; the previous ACTIVE version of the policy becomes SUPERSEDED at that moment.
CREATE TABLE policy_versions (
  policy_id uuid NOT NULL REFERENCES policies(policy_id),
  version int NOT NULL CHECK (version >= 1),
  document jsonb NOT NULL,
  signed jsonb,
  status text NOT NULL CHECK (status IN ('PENDING_SIGNATURE', 'ACTIVE', 'SUPERSEDED', 'DELETED')),
  created_by uuid,
  created_at timestamptz NOT NULL,
  signed_at timestamptz,
  signed_by_device uuid,
  PRIMARY KEY (policy_id, version)
);

CREATE TABLE transfers (
  transfer_id uuid PRIMARY KEY,
  profile_id uuid NOT NULL REFERENCES profiles(profile_id),
  wallet_id uuid NOT NULL REFERENCES wallets(wallet_id),
  asset_id uuid NOT NULL REFERENCES assets(asset_id),
  blockchain_id uuid NOT NULL REFERENCES blockchains(blockchain_id),
  master_key_id uuid NOT NULL REFERENCES master_keys(master_key_id),
  source_address text NOT NULL,
  destination_address text NOT NULL,
  amount numeric(78, 0) NOT NULL CHECK (amount > 0),
  external_id text,
  status text NOT NULL CHECK (status IN ('PENDING', 'PENDING_APPROVAL', 'PENDING_SIGNATURE', 'READY_TO_SEND', 'SENT',
    'REJECTED', 'REJECTED_BY_POLICY', 'NO_POLICY_FOUND', 'EXPIRED', 'FAILED')),
  sub_status text,
  day date NOT NULL,
  intent jsonb NOT NULL,
  intent_digest text NOT NULL,
  policy_id uuid,
  policy_version int,
  approvals_required int NOT NULL DEFAULT 0,
  approval_round int NOT NULL DEFAULT 0,
  approval_deadline timestamptz,
  unsigned jsonb,
  signed_tx text,
  tx_hash text,
  tx_hashes jsonb NOT NULL DEFAULT '[]'::jsonb,
  fee_bump jsonb,
  error text,
  lease_until timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  sent_at timestamptz,
  delivered_at timestamptz
);
CREATE INDEX transfers_profile ON transfers (profile_id, created_at, transfer_id);
CREATE INDEX transfers_day ON transfers (wallet_id, asset_id, day);
CREATE INDEX transfers_active ON transfers (status, updated_at)
  WHERE status IN ('PENDING', 'PENDING_APPROVAL', 'PENDING_SIGNATURE', 'READY_TO_SEND', 'SENT');

-- The row locked (SELECT … FOR UPDATE) to serialise daily-limit checks per wallet, asset and UTC day.
CREATE TABLE transfer_day_locks (
  wallet_id uuid NOT NULL,
  asset_id uuid NOT NULL,
  day date NOT NULL,
  PRIMARY KEY (wallet_id, asset_id, day)
);

-- Device decisions. Round 0 approves the transfer; round n > 0 approves its n-th fee bump.
CREATE TABLE transfer_approvals (
  transfer_id uuid NOT NULL REFERENCES transfers(transfer_id),
  round int NOT NULL,
  device_id uuid NOT NULL,
  decision text NOT NULL CHECK (decision IN ('APPROVE', 'REJECT')),
  approval jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (transfer_id, round, device_id)
);

CREATE TABLE watcher_cursors (
  chain text PRIMARY KEY,
  height int NOT NULL,
  hash text NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE TABLE watcher_seen (
  chain text NOT NULL,
  key text NOT NULL,
  PRIMARY KEY (chain, key)
);
CREATE TABLE watcher_balances (
  chain text NOT NULL,
  address text NOT NULL,
  asset text NOT NULL,
  balance numeric(78, 0) NOT NULL,
  PRIMARY KEY (chain, address, asset)
);
CREATE TABLE watcher_utxos (
  chain text NOT NULL,
  outpoint text NOT NULL,
  address text NOT NULL,
  value numeric(78, 0) NOT NULL,
  height int NOT NULL,
  PRIMARY KEY (chain, outpoint)
);
`;
