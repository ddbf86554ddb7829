/**
 * Transfer policies (DESIGN §7, seed §1): default deny; a policy governs the transfers its scope
 * covers (profile; optionally a set of wallets, one blockchain, one asset) with a whitelist of
 * destination addresses, a per-transaction limit, a daily limit per wallet and asset (UTC day) and
 * an approval quorum above an amount. Limits and thresholds are integer base units of the scoped
 * asset, so a policy with any limit must scope an asset.
 *
 * Versions: creating or updating a policy writes a new `PolicyDocument` version in
 * PENDING_SIGNATURE; it takes effect only once an Admin signs it with an enrolled device
 * (`SignedPolicy`, P-256 over `policyDigest`, packages/wire evidence.ts) — then it becomes ACTIVE
 * and the previous ACTIVE version SUPERSEDED. Signers verify the same signature against the Admin
 * device keys pinned in their configuration, so an unsigned or tampered version never authorises
 * a signature.
 *
 * Deletion (issue #26 item 2) is a version too: DELETE writes a TOMBSTONE version
 * (`document.deleted: true`, the other fields those of the newest version) in PENDING_SIGNATURE,
 * and nothing changes until an Admin device signs it like any change. Once signed the tombstone's
 * status is DELETED, the previous ACTIVE version SUPERSEDED and the policy deleted (`deleted_at`):
 * it matches no transfer and takes no new version.
 *
 * Signers learn every signed version and tombstone as it takes effect ({@link
 * PolicyServiceOptions.activations}: the signing services push it, signing/policy-sync.ts), so a version
 * activated but never used to sign, or a deletion, ends the older versions there too.
 *
 * Audit: every create, update, signature, deletion request and deletion is an audit_log entry
 * (`policy.created`, `policy.updated`, `policy.signed`, `policy.deletion_requested`,
 * `policy.deleted`; target `policy` / policy id; details: version, and the device for signatures).
 *
 * Matching and precedence: among the ACTIVE versions of the profile's live policies whose scope
 * covers the transfer, the MOST SPECIFIC scope wins — specificity = 4 × (wallet_ids set) +
 * 2 × (asset_id set) + 1 × (blockchain set) — and on a tie the most recently signed version. Only
 * that one policy is evaluated (no fall-through to a less specific one). No covering policy: the
 * transfer ends NO_POLICY_FOUND.
 *
 * Input shapes, validation and views: policy-documents.ts. Longer than 400 lines (410) because
 * create, update, delete and sign share the service's lock, audit and activation helpers.
 */
import { randomUUID } from 'node:crypto';
import {
  deviceVerify,
  isPolicyTombstone,
  type PolicyDocument,
  policyCovers,
  policyDigest,
  type SignedPolicy,
  type TransferIntent,
} from '@custodian/wire';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { AuditFn } from '../audit/service.js';
import type { Db, Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import type { Page, PageRequest } from '../store.js';
import { type Clock, type Emitter, iso } from '../util.js';
import { emitEvent } from '../webhooks/outbox.js';
import {
  normalisePublicKey,
  type PolicyInput,
  type PolicyVersionView,
  type PolicyView,
  policyDocument,
  signedPolicyVersions,
  specificity,
} from './policy-documents.js';

export {
  normalisePublicKey,
  type PolicyInput,
  type PolicyVersionView,
  type PolicyView,
  signedPolicyVersions,
} from './policy-documents.js';

/** Options of {@link PolicyService}. */
export interface PolicyServiceOptions {
  /**
   * Admin device public keys (compressed P-256 hex) allowed to sign policies, mirroring the
   * signers' `trustedAdminDevices`. Checked on top of the device's user binding (never instead of
   * it); empty: the binding alone decides.
   */
  trustedAdminKeys?: readonly string[];
  /**
   * Appends an audit entry in the caller's transaction (`AuditLog.record`, audit/service.ts); absent: no audit
   * entries (embedding without the admin service only).
   */
  audit?: PolicyAudit;
  /**
   * Emits each signed version as it becomes ACTIVE, and each signed tombstone as it takes effect,
   * after the transaction committed (the root subscribes the signing services, which push it to
   * every server signer and phone). A listener reports its own failures; they never reach the Admin.
   */
  activations?: Emitter<[signed: SignedPolicy]>;
}

/** `AuditLog.record` of audit/service.ts (`details` without secrets). */
export type PolicyAudit = AuditFn;

/** What {@link PolicyService} is built from: the database, the clock and its options. */
export interface PolicyServiceComponents extends PolicyServiceOptions {
  readonly db: Db;
  readonly clock: Clock;
}

/** Policies: versions, device signatures, matching. */
export class PolicyService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly opts: PolicyServiceOptions;

  constructor(components: PolicyServiceComponents) {
    this.db = components.db;
    this.clock = components.clock;
    this.opts = components;
  }

  private async audit(
    q: Queryable,
    actor: string | null,
    action: string,
    policyId: string,
    details: Record<string, unknown>,
  ): Promise<void> {
    await this.opts.audit?.(q, actor, action, 'policy', policyId, details);
  }

  /** Create a policy and its version 1 (PENDING_SIGNATURE). Emits POLICY_CREATED. */
  async create(actor: string | null, profileId: string, input: PolicyInput): Promise<PolicyView> {
    const id = await this.db.tx(async (q) => {
      const p = await q.query('SELECT 1 FROM profiles WHERE profile_id = $1', [profileId]);
      if (p.length === 0) throw new ApiError('RESOURCE_NOT_FOUND', 'no such profile');
      const policyId = randomUUID();
      const doc = await policyDocument(q, this.clock, profileId, policyId, 1, input);
      const now = this.clock();
      await q.query(
        'INSERT INTO policies (policy_id, profile_id, name, created_by, created_at) VALUES ($1,$2,$3,$4,$5)',
        [policyId, profileId, input.name, actor, now],
      );
      await q.query(
        `INSERT INTO policy_versions (policy_id, version, document, status, created_by, created_at)
         VALUES ($1, 1, $2::jsonb, 'PENDING_SIGNATURE', $3, $4)`,
        [policyId, JSON.stringify(doc), actor, now],
      );
      await emitEvent(q, this.clock, {
        profileId,
        type: 'POLICY_CREATED',
        data: { policy_id: policyId, name: input.name, version: 1, status: 'PENDING_SIGNATURE' },
      });
      await this.audit(q, actor, 'policy.created', policyId, { profile_id: profileId, name: input.name, version: 1 });
      return policyId;
    });
    return this.get(profileId, id);
  }

  /** New version of a policy (PENDING_SIGNATURE; the ACTIVE one stays in force until it is signed). Emits POLICY_UPDATED. */
  async update(actor: string | null, profileId: string, policyId: string, input: PolicyInput): Promise<PolicyView> {
    await this.db.tx(async (q) => {
      const p = await this.lockLive(q, profileId, policyId);
      const v = await q.query<{ n: number }>(
        'SELECT COALESCE(max(version), 0)::int AS n FROM policy_versions WHERE policy_id = $1',
        [policyId],
      );
      const version = (v[0]?.n ?? 0) + 1;
      const doc = await policyDocument(q, this.clock, profileId, policyId, version, input);
      // an unsigned draft is replaced by the newer one
      await q.query(
        `UPDATE policy_versions SET status = 'DELETED' WHERE policy_id = $1 AND status = 'PENDING_SIGNATURE'`,
        [policyId],
      );
      await q.query(
        `INSERT INTO policy_versions (policy_id, version, document, status, created_by, created_at)
         VALUES ($1, $2, $3::jsonb, 'PENDING_SIGNATURE', $4, $5)`,
        [policyId, version, JSON.stringify(doc), actor, this.clock()],
      );
      if (input.name !== p.name)
        await q.query('UPDATE policies SET name = $2 WHERE policy_id = $1', [policyId, input.name]);
      await emitEvent(q, this.clock, {
        profileId,
        type: 'POLICY_UPDATED',
        data: { policy_id: policyId, name: input.name, version, status: 'PENDING_SIGNATURE' },
      });
      await this.audit(q, actor, 'policy.updated', policyId, { profile_id: profileId, name: input.name, version });
    });
    return this.get(profileId, policyId);
  }

  /**
   * Request the deletion of a policy: a tombstone version (`document.deleted: true`, the newest
   * version's other fields, next version number) in PENDING_SIGNATURE, replacing an unsigned
   * draft. Nothing changes until an Admin device signs it ({@link sign}); the ACTIVE version keeps
   * governing meanwhile. Emits POLICY_UPDATED (status PENDING_SIGNATURE, `deleted: true`); audit
   * `policy.deletion_requested`.
   * @returns the policy with the pending tombstone
   * @throws ApiError POLICY_NOT_FOUND (no such live policy)
   */
  async delete(actor: string | null, profileId: string, policyId: string): Promise<PolicyView> {
    await this.db.tx(async (q) => {
      const p = await this.lockLive(q, profileId, policyId);
      const rows = await q.query<{ version: number; status: string; document: PolicyDocument }>(
        'SELECT version, status, document FROM policy_versions WHERE policy_id = $1 ORDER BY version DESC',
        [policyId],
      );
      const version = (rows[0]?.version ?? 0) + 1;
      // the fields of the version in force (else the newest), shown to the Admin who signs the deletion
      const base = (rows.find((r) => r.status === 'ACTIVE') ?? rows[0])?.document;
      if (base === undefined) throw new ApiError('POLICY_NOT_FOUND', `policy ${policyId} has no version`);
      const { deleted: _d, ...fields } = base;
      const doc: PolicyDocument = { ...fields, version, created_at: this.clock().toISOString(), deleted: true };
      await q.query(
        `UPDATE policy_versions SET status = 'DELETED' WHERE policy_id = $1 AND status = 'PENDING_SIGNATURE'`,
        [policyId],
      );
      await q.query(
        `INSERT INTO policy_versions (policy_id, version, document, status, created_by, created_at)
         VALUES ($1, $2, $3::jsonb, 'PENDING_SIGNATURE', $4, $5)`,
        [policyId, version, JSON.stringify(doc), actor, this.clock()],
      );
      await emitEvent(q, this.clock, {
        profileId,
        type: 'POLICY_UPDATED',
        data: { policy_id: policyId, name: p.name, version, status: 'PENDING_SIGNATURE', deleted: true },
      });
      await this.audit(q, actor, 'policy.deletion_requested', policyId, { profile_id: profileId, version });
    });
    return this.get(profileId, policyId);
  }

  private async lockLive(q: Queryable, profileId: string, policyId: string) {
    const r = await q.query<{ name: string }>(
      'SELECT name FROM policies WHERE profile_id = $1 AND policy_id = $2 AND deleted_at IS NULL FOR UPDATE',
      [profileId, policyId],
    );
    if (r[0] === undefined) throw new ApiError('POLICY_NOT_FOUND', `no policy ${policyId} in this profile`);
    return r[0];
  }

  /**
   * Attach an Admin device's signature to a version; the version becomes ACTIVE — or, for a
   * tombstone, DELETED and the policy with it (see the module comment). Fail closed (issue #26
   * item 10): the device must be APPROVED and bound (at approval) to `signerUserId`, the session's
   * user, whose role is ADMIN now and who is neither blocked nor deleted; a device bound to no user
   * (enrolled before devices were bound) cannot sign. When configured, its key must also be one of
   * the trusted Admin device keys. The signature must verify over `policyDigest(document)`. Emits
   * POLICY_UPDATED (POLICY_DELETED for a tombstone); audit `policy.signed` (`policy.deleted`) by
   * `actor`; then it is emitted on `activations`.
   * @throws ApiError VALIDATION_FAILED (`body.device_id`: not such a device; `body.signature`),
   *   CONFLICT (not pending)
   */
  async sign(
    actor: string | null,
    profileId: string,
    policyId: string,
    version: number,
    input: { device_id: string; signature: string },
    signerUserId: string,
  ): Promise<PolicyView> {
    const signed = await this.db.tx(async (q) => {
      await this.lockLive(q, profileId, policyId);
      const v = (
        await q.query<{ document: PolicyDocument; status: string }>(
          'SELECT document, status FROM policy_versions WHERE policy_id = $1 AND version = $2 FOR UPDATE',
          [policyId, version],
        )
      )[0];
      if (v === undefined) throw new ApiError('POLICY_NOT_FOUND', `policy ${policyId} has no version ${version}`);
      if (v.status !== 'PENDING_SIGNATURE') throw new ApiError('CONFLICT', `version ${version} is ${v.status}`);
      const dev = (
        await q.query<{ public_key: string; status: string; user_id: string | null; admin: boolean }>(
          `SELECT d.public_key, d.status, d.user_id,
                  (u.role = 'ADMIN' AND u.blocked_at IS NULL AND u.deleted_at IS NULL) IS TRUE AS admin
           FROM devices d LEFT JOIN users u ON u.user_id = d.user_id WHERE d.device_id = $1`,
          [input.device_id.toLowerCase()],
        )
      )[0];
      if (dev === undefined || dev.status !== 'APPROVED') {
        throw new ApiError('VALIDATION_FAILED', 'device_id: not an approved enrolled device', [
          { field: 'body.device_id', message: 'not an approved enrolled device' },
        ]);
      }
      const owner = dev.user_id === null ? null : String(dev.user_id).toLowerCase();
      if (owner === null || owner !== signerUserId.toLowerCase() || !dev.admin) {
        const why =
          owner === null ? 'bound to no user: enrol it again for its Admin' : 'not a device of the signing Admin';
        throw new ApiError('VALIDATION_FAILED', `device_id: ${why}`, [{ field: 'body.device_id', message: why }]);
      }
      const pub = normalisePublicKey(dev.public_key);
      const trusted = this.opts.trustedAdminKeys ?? [];
      if (trusted.length > 0 && !trusted.includes(pub)) {
        throw new ApiError('VALIDATION_FAILED', 'device_id: not a trusted Admin device', [
          { field: 'body.device_id', message: 'not among the trusted Admin devices' },
        ]);
      }
      if (!deviceVerify(input.signature, policyDigest(v.document), pub)) {
        throw new ApiError('VALIDATION_FAILED', 'signature: does not verify over the policy digest', [
          { field: 'body.signature', message: 'P-256 r‖s over policyDigest(document), 128 hex digits' },
        ]);
      }
      const signed: SignedPolicy = {
        document: v.document,
        device_id: input.device_id.toLowerCase(),
        device_public_key: pub,
        signature: input.signature.toLowerCase(),
      };
      const tombstone = isPolicyTombstone(v.document);
      const deviceId = input.device_id.toLowerCase();
      await q.query(`UPDATE policy_versions SET status = 'SUPERSEDED' WHERE policy_id = $1 AND status = 'ACTIVE'`, [
        policyId,
      ]);
      await q.query(
        `UPDATE policy_versions SET status = $6, signed = $3::jsonb, signed_at = $4, signed_by_device = $5
         WHERE policy_id = $1 AND version = $2`,
        [policyId, version, JSON.stringify(signed), this.clock(), deviceId, tombstone ? 'DELETED' : 'ACTIVE'],
      );
      if (tombstone) {
        await q.query('UPDATE policies SET deleted_at = $2 WHERE policy_id = $1', [policyId, this.clock()]);
        await emitEvent(q, this.clock, {
          profileId,
          type: 'POLICY_DELETED',
          data: { policy_id: policyId, version, signed_by_device: deviceId },
        });
      } else {
        await emitEvent(q, this.clock, {
          profileId,
          type: 'POLICY_UPDATED',
          data: { policy_id: policyId, version, status: 'ACTIVE', signed_by_device: deviceId },
        });
      }
      await this.audit(q, actor, tombstone ? 'policy.deleted' : 'policy.signed', policyId, {
        profile_id: profileId,
        version,
        device_id: deviceId,
      });
      return signed;
    });
    this.opts.activations?.emit(signed);
    return this.get(profileId, policyId);
  }

  /** One policy with its versions. @throws ApiError POLICY_NOT_FOUND */
  async get(profileId: string, policyId: string, q: Queryable = this.db): Promise<PolicyView> {
    const p = (
      await q.query<{ policy_id: string; profile_id: string; name: string; created_at: Date; deleted_at: Date | null }>(
        'SELECT policy_id, profile_id, name, created_at, deleted_at FROM policies WHERE profile_id = $1 AND policy_id = $2',
        [profileId, policyId],
      )
    )[0];
    if (p === undefined) throw new ApiError('POLICY_NOT_FOUND', `no policy ${policyId} in this profile`);
    const vs = await q.query<{
      version: number;
      status: PolicyVersionView['status'];
      document: PolicyDocument;
      signed: SignedPolicy | null;
      created_at: Date;
      signed_at: Date | null;
    }>(
      'SELECT version, status, document, signed, created_at, signed_at FROM policy_versions WHERE policy_id = $1 ORDER BY version DESC',
      [policyId],
    );
    return {
      policy_id: p.policy_id,
      profile_id: p.profile_id,
      name: p.name,
      created_at: iso(p.created_at)!,
      deleted_at: iso(p.deleted_at),
      active_version: vs.find((v) => v.status === 'ACTIVE')?.version ?? null,
      versions: vs.map((v) => ({
        version: v.version,
        status: v.status,
        document: v.document,
        digest: bytesToHex(policyDigest(v.document)),
        signed: v.signed,
        created_at: iso(v.created_at)!,
        signed_at: iso(v.signed_at),
      })),
    };
  }

  /** Live policies of a profile, oldest first. */
  async list(profileId: string, page: PageRequest): Promise<Page<PolicyView>> {
    const ids = await this.db.query<{ policy_id: string }>(
      `SELECT policy_id FROM policies WHERE profile_id = $1 AND deleted_at IS NULL ORDER BY created_at, policy_id
       LIMIT $2 OFFSET $3`,
      [profileId, page.page_size, (page.page - 1) * page.page_size],
    );
    const total =
      (
        await this.db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM policies WHERE profile_id = $1 AND deleted_at IS NULL',
          [profileId],
        )
      )[0]?.n ?? 0;
    const data: PolicyView[] = [];
    for (const r of ids) data.push(await this.get(profileId, r.policy_id));
    return { data, page: page.page, page_size: page.page_size, total };
  }

  /**
   * The highest signed version of every policy (all profiles): the ACTIVE version of a live policy,
   * the signed tombstone of a deleted one — what a signer must hold (signing/policy-sync.ts).
   */
  async signedVersions(q: Queryable = this.db): Promise<SignedPolicy[]> {
    return signedPolicyVersions(q);
  }

  /** The policy that governs an intent (see the module comment), or null (default deny). */
  async match(q: Queryable, intent: TransferIntent): Promise<SignedPolicy | null> {
    const rows = await q.query<{ signed: SignedPolicy; signed_at: Date }>(
      `SELECT v.signed, v.signed_at FROM policy_versions v JOIN policies p USING (policy_id)
       WHERE p.profile_id = $1 AND p.deleted_at IS NULL AND v.status = 'ACTIVE' AND v.signed IS NOT NULL`,
      [intent.profile_id],
    );
    const covering = rows.filter((r) => policyCovers(r.signed.document, intent));
    covering.sort(
      (a, b) =>
        specificity(b.signed.document) - specificity(a.signed.document) ||
        new Date(b.signed_at).getTime() - new Date(a.signed_at).getTime(),
    );
    return covering[0]?.signed ?? null;
  }
}
