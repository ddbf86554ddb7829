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

/**
 * Migration 13 (`ceremony_blames`, issue #23 part 3): one row per blame a signer reported in an
 * aborted ceremony, as the coordinator checked it (signing/blame.ts). `ceremony_id`: the
 * `ceremonies` UUID (master key and lifecycle ceremonies) or the 48-hex-digit SIGN ceremony id of
 * `signing_attempts`; `kind` the ceremony kind (`sign`, `dkg`, `refresh`, `reshare`, `drill`, …).
 * `verified`: the coordinator checked the evidence itself; `culprit` is then the proven culprit's
 * peer id, else NULL (a dispute: nobody is named; the accuser's claim is in `claimed_culprit`).
 * The evidence bytes are NOT stored: a point-to-point message's one-message key opens a payload
 * that may carry a secret share meant for the accuser.
 */
export const BLAME_MIGRATION_SQL = `
CREATE TABLE ceremony_blames (
  blame_id bigserial PRIMARY KEY,
  ceremony_id text NOT NULL,
  kind text NOT NULL,
  verified boolean NOT NULL,
  culprit text CHECK ((culprit IS NOT NULL) = verified),
  claimed_culprit text NOT NULL,
  accuser text NOT NULL,
  check_name text NOT NULL,
  round int NOT NULL,
  protocol text NOT NULL,
  detail text NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX ceremony_blames_by_ceremony ON ceremony_blames (ceremony_id, blame_id);
`;
