/**
 * Policy documents as admins submit and read them (DESIGN §7 "Policies"; docs/transfers.md
 * "Policies"): the input and view shapes, the validation of an input into a `PolicyDocument`
 * version (422 naming the field), the specificity that decides precedence, and the key and
 * signed-version helpers the signing services and approvals share. The service is policies.ts.
 */
import type { PolicyDocument, SignedPolicy } from '@custodian/wire';
import type { Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import type { Clock } from '../util.js';

/** Policy rules as an admin submits them (limits in base units of the scoped asset, decimal strings). */
export interface PolicyInput {
  name: string;
  scope?: { wallet_ids?: string[] | null; blockchain?: string | null; asset_id?: string | null };
  whitelist: string[];
  per_transaction_limit?: string | null;
  daily_limit?: string | null;
  approvals?: { quorum: number; above_amount: string };
}

/** One version of a policy as the admin API shows it. */
export interface PolicyVersionView {
  version: number;
  /**
   * PENDING_SIGNATURE (awaiting an Admin device), ACTIVE (in force), SUPERSEDED (replaced by a
   * newer signed version), DELETED: a signed tombstone (`document.deleted: true`, `signed` set — the
   * policy is deleted) or an unsigned draft replaced by a newer one (`signed` null).
   */
  status: 'PENDING_SIGNATURE' | 'ACTIVE' | 'SUPERSEDED' | 'DELETED';
  /** The version's rules; `deleted: true` marks the tombstone (the deletion) of the policy. */
  document: PolicyDocument;
  /** Hex SHA-256 digest the Admin device signs (`policyDigest`). */
  digest: string;
  signed: SignedPolicy | null;
  created_at: string;
  signed_at: string | null;
}

/** A policy with its versions, newest first. */
export interface PolicyView {
  policy_id: string;
  profile_id: string;
  name: string;
  created_at: string;
  deleted_at: string | null;
  active_version: number | null;
  versions: PolicyVersionView[];
}

const INT = /^(0|[1-9][0-9]{0,77})$/;

/** Precedence of a scope: 4 × wallet_ids set + 2 × asset_id set + 1 × blockchain set. */
export function specificity(d: PolicyDocument): number {
  return (
    (d.scope.wallet_ids !== null ? 4 : 0) + (d.scope.asset_id !== null ? 2 : 0) + (d.scope.blockchain !== null ? 1 : 0)
  );
}

/** Validate input into a document of `version`. @throws ApiError VALIDATION_FAILED naming the field */
export async function policyDocument(
  q: Queryable,
  clock: Clock,
  profileId: string,
  policyId: string,
  version: number,
  input: PolicyInput,
): Promise<PolicyDocument> {
  const scope = {
    wallet_ids: input.scope?.wallet_ids
      ? [...new Set(input.scope.wallet_ids.map((w) => w.toLowerCase()))].sort()
      : null,
    blockchain: input.scope?.blockchain ?? null,
    asset_id: input.scope?.asset_id?.toLowerCase() ?? null,
  };
  const field = (f: string, m: string) => new ApiError('VALIDATION_FAILED', `${f}: ${m}`, [{ field: f, message: m }]);
  if (scope.wallet_ids !== null) {
    if (scope.wallet_ids.length === 0) throw field('body.scope.wallet_ids', 'null or at least one wallet');
    const r = await q.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM wallets WHERE profile_id = $1 AND wallet_id = ANY($2::uuid[])',
      [profileId, scope.wallet_ids],
    );
    if ((r[0]?.n ?? 0) !== scope.wallet_ids.length) throw field('body.scope.wallet_ids', 'unknown wallet');
  }
  if (scope.blockchain !== null) {
    const r = await q.query('SELECT 1 FROM blockchains WHERE key = $1', [scope.blockchain]);
    if (r.length === 0) throw field('body.scope.blockchain', 'unknown blockchain key');
  }
  if (scope.asset_id !== null) {
    const r = await q.query<{ key: string }>(
      'SELECT b.key FROM assets a JOIN blockchains b USING (blockchain_id) WHERE a.asset_id = $1',
      [scope.asset_id],
    );
    if (r[0] === undefined) throw field('body.scope.asset_id', 'unknown asset');
    if (scope.blockchain !== null && r[0].key !== scope.blockchain)
      throw field('body.scope.asset_id', 'not an asset of scope.blockchain');
  }
  const per = input.per_transaction_limit ?? null;
  const daily = input.daily_limit ?? null;
  const approvals = input.approvals ?? { quorum: 1, above_amount: '0' };
  for (const [f, v] of [
    ['body.per_transaction_limit', per],
    ['body.daily_limit', daily],
    ['body.approvals.above_amount', approvals.above_amount],
  ] as const) {
    if (v !== null && !INT.test(v)) throw field(f, 'integer base units of the scoped asset, decimal string');
  }
  if (!Number.isInteger(approvals.quorum) || approvals.quorum < 1 || approvals.quorum > 16)
    throw field('body.approvals.quorum', '1..16 distinct devices');
  const hasAmounts = per !== null || daily !== null || approvals.above_amount !== '0';
  if (hasAmounts && scope.asset_id === null)
    throw field('body.scope.asset_id', 'limits are base units of one asset: scope the policy to an asset');
  const whitelist = [...new Set(input.whitelist)];
  return {
    policy_id: policyId,
    version,
    profile_id: profileId,
    scope,
    whitelist,
    per_transaction_limit: per,
    daily_limit: daily,
    approvals: { quorum: approvals.quorum, above_amount: approvals.above_amount },
    created_at: clock().toISOString(),
  };
}

/** The highest signed version of every policy, oldest policy first (see {@link PolicyService.signedVersions}). */
export async function signedPolicyVersions(q: Queryable): Promise<SignedPolicy[]> {
  const rows = await q.query<{ signed: SignedPolicy }>(
    `SELECT DISTINCT ON (policy_id) policy_id, signed FROM policy_versions WHERE signed IS NOT NULL
     ORDER BY policy_id, version DESC`,
  );
  return rows.map((r) => r.signed);
}

/** Device keys are stored as enrolled; policies and approvals name them as compressed hex. */
export function normalisePublicKey(stored: string): string {
  const s = stored.trim();
  if (/^0[23][0-9a-fA-F]{64}$/.test(s)) return s.toLowerCase();
  if (/^[0-9a-fA-F]+$/.test(s)) return s.toLowerCase();
  // base64 / base64url forms
  return Buffer.from(s, s.includes('-') || s.includes('_') ? 'base64url' : 'base64').toString('hex');
}

/**
 * The document of one version of a live policy of `profileId`, whatever its status (a draft in
 * PENDING_SIGNATURE, ACTIVE, SUPERSEDED): what the admin dry-run of a version evaluates. Reads only.
 * @throws ApiError POLICY_NOT_FOUND (no such live policy in this profile, or no such version),
 *   CONFLICT (the version is a tombstone: a deletion governs no transfer)
 */
export async function policyVersionDocument(
  q: Queryable,
  profileId: string,
  policyId: string,
  version: number,
): Promise<PolicyDocument> {
  const r = (
    await q.query<{ document: PolicyDocument }>(
      `SELECT v.document FROM policy_versions v JOIN policies p USING (policy_id)
       WHERE p.profile_id = $1 AND p.policy_id = $2 AND p.deleted_at IS NULL AND v.version = $3`,
      [profileId, policyId, version],
    )
  )[0];
  if (r === undefined)
    throw new ApiError('POLICY_NOT_FOUND', `no version ${version} of policy ${policyId} in this profile`);
  if (r.document.deleted === true) throw new ApiError('CONFLICT', `version ${version} is a deletion (tombstone)`);
  return r.document;
}
