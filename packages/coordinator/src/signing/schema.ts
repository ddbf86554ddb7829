/**
 * Tables of the coordinator-side presignature pool (signing/presignature-pool.ts), migration 4.
 *
 * - `presignatures`: the CGGMP21 presignature ids that every signer of a signing set stored (the
 *   `presignatureIds` common to all parties' PRESIGN results), per signer key id and signing set
 *   (`signing_set`: the parties as `kind:id`, lower case, sorted, joined by `,`). A row is deleted in
 *   the transaction that records the signing attempt using it, so an id is handed out once.
 * - `presignature_refills`: one row per (key, set) whose `lease_until` serialises the PRESIGN
 *   ceremonies of a set across coordinator replicas, and holds the back-off after a failed one.
 * - `signing_attempts`: every SIGN ceremony the gateway started (ceremony id hex, key, algorithm,
 *   set, transfer, the pooled presignature id or NULL for cold signing, outcome).
 */
export const PRESIGNATURE_POOL_MIGRATION_SQL = `
CREATE TABLE presignatures (
  presignature_id text PRIMARY KEY,
  key_id text NOT NULL,
  signing_set text NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX presignatures_by_set ON presignatures (key_id, signing_set, created_at);

CREATE TABLE presignature_refills (
  key_id text NOT NULL,
  signing_set text NOT NULL,
  lease_until timestamptz,
  last_error text,
  PRIMARY KEY (key_id, signing_set)
);

CREATE TABLE signing_attempts (
  ceremony_id text PRIMARY KEY,
  key_id text NOT NULL,
  algorithm text NOT NULL,
  signing_set text NOT NULL,
  transfer_id text,
  presignature_id text,
  started_at timestamptz NOT NULL,
  finished_at timestamptz,
  outcome text
);
CREATE INDEX signing_attempts_by_transfer ON signing_attempts (transfer_id, started_at);
`;
