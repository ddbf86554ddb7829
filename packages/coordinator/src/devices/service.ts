/**
 * The devices room: mobile signer devices — the app's enrollment request (unauthenticated), the
 * Admin's decision after the out-of-band fingerprint check (approve binding the device to its
 * user, reject, remove), and the pinning of a legacy device's MPC peer id at its first hello.
 * The device hub (`hub.ts`) holds the devices' sockets; a device leaving APPROVED is reported to
 * it through {@link DeviceComponents.onDeviceRevoked}.
 */
import { randomUUID } from 'node:crypto';
import { deviceFingerprint, verifyEnrollmentProof } from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import type { AuditLog } from '../audit/service.js';
import type { Db } from '../db/db.js';
import { ApiError } from '../errors.js';
import { notFound, type Page, type PageRequest, pageOffset } from '../store.js';
import { type Clock, iso } from '../util.js';
import { emitInstanceEvent } from '../webhooks/outbox.js';
import { deviceNameProblem, ed25519PeerKey, lockPeerId, normaliseFingerprint, peerIdHolder } from './binding.js';

/** Compressed (33-byte) hex of a stored device key (hex SEC1 33/65 bytes, or base64); as stored when not a P-256 point. */
function compressedKey(stored: string): string {
  try {
    const hex = /^[0-9a-fA-F]+$/.test(stored) ? stored.toLowerCase() : Buffer.from(stored, 'base64').toString('hex');
    return p256.Point.fromHex(hex).toHex(true);
  } catch {
    return stored;
  }
}

/** Fingerprint of a device identity key (one definition for the whole product: `@custodian/wire`). */
export { deviceFingerprint };

/** Whether a version string "15.5" / "10" is at least `min` (numeric parts compared in order). */
function versionAtLeast(v: string, min: readonly number[]): boolean {
  const parts = v.split('.').map((x) => Number.parseInt(x, 10));
  for (let i = 0; i < min.length; i++) {
    const a = parts[i] ?? 0;
    const b = min[i]!;
    if (Number.isNaN(a)) return false;
    if (a !== b) return a > b;
  }
  return true;
}

/** The admin service. */

/** Dependencies of {@link DeviceService}. */
export interface DeviceComponents {
  readonly db: Db;
  readonly clock: Clock;
  readonly audit: AuditLog;
  /**
   * Called after a device's status left APPROVED (removed or rejected) has committed, with the
   * device id and the new status: the device hub's `revokeDevice` (closes the socket, drops the
   * approval queue). Must not throw. Absent: no hub in this process.
   */
  readonly onDeviceRevoked?: ((deviceId: string, status: string) => void) | undefined;
  /**
   * Push the recorded approver revocations (`revoked_approvers`) to the server signers
   * (control.proto `RevokeApprover`; signing/key-ops.ts), awaited before a removal is answered.
   * Must not throw; a signer that does not acknowledge gets it before its next ceremony.
   */
  readonly pushRevocations?: (() => Promise<unknown>) | undefined;
}

/** Mobile signer devices. */
export class DeviceService {
  constructor(private readonly c: DeviceComponents) {}

  /**
   * A mobile app's enrollment request (unauthenticated: the app knows only the instance URL).
   * The device identity key is P-256 (SEC1, 33 or 65 bytes, hex); requirements of seed §1 item 3:
   * iOS ≥ 15.5 or Android ≥ 10 (API 29) with hardware-backed key storage. The device's MPC peer id
   * (Ed25519 libp2p peer id, its party id in ceremonies) comes with `mpc_peer_proof`, the peer key's
   * Ed25519 signature over `deviceEnrollmentDigest(public_key, mpc_peer_id)` (@custodian/wire), and
   * is pinned in the device record: the device hub accepts no other id in this device's hello.
   * The name must pass {@link deviceNameProblem} (printable, 1–64 characters).
   * @throws ApiError VALIDATION_FAILED naming the field (`body.name`, `body.public_key`,
   *   `body.mpc_peer_id`, `body.mpc_peer_proof`, …); CONFLICT when the device key has a live
   *   enrollment, or the peer id is a server signer's (registered now or ever) or another live device's
   */
  async requestEnrollment(input: {
    name: string;
    platform: 'ios' | 'android';
    os_version: string;
    hardware_backed_keystore: boolean;
    public_key: string;
    mpc_peer_id: string;
    mpc_peer_proof: string;
  }) {
    const nameProblem = deviceNameProblem(input.name);
    if (nameProblem !== undefined) {
      throw new ApiError('VALIDATION_FAILED', `name: ${nameProblem}`, [{ field: 'body.name', message: nameProblem }]);
    }
    let key: Uint8Array;
    try {
      key = p256.Point.fromHex(input.public_key).toBytes(true);
    } catch {
      throw new ApiError('VALIDATION_FAILED', 'public_key is not a valid P-256 public key', [
        { field: 'body.public_key', message: 'must be a SEC1-encoded P-256 point in hex' },
      ]);
    }
    const min = input.platform === 'ios' ? [15, 5] : [10];
    if (!versionAtLeast(input.os_version, min)) {
      throw new ApiError('VALIDATION_FAILED', `${input.platform} ${min.join('.')} or later is required`, [
        { field: 'body.os_version', message: `must be at least ${min.join('.')}` },
      ]);
    }
    if (!input.hardware_backed_keystore) {
      throw new ApiError('VALIDATION_FAILED', 'hardware-backed key storage is required', [
        { field: 'body.hardware_backed_keystore', message: 'must be true' },
      ]);
    }
    const peerKey = ed25519PeerKey(input.mpc_peer_id, 'body.mpc_peer_id', 'mpc_peer_id');
    if (!verifyEnrollmentProof(input.mpc_peer_proof, key, input.mpc_peer_id, peerKey)) {
      throw new ApiError('VALIDATION_FAILED', 'mpc_peer_proof: not the peer key’s signature over this enrollment', [
        {
          field: 'body.mpc_peer_proof',
          message: 'Ed25519 signature by the mpc_peer_id key over deviceEnrollmentDigest(public_key, mpc_peer_id)',
        },
      ]);
    }
    const pub = Buffer.from(key).toString('hex');
    const fingerprint = deviceFingerprint(key);
    return this.c.db.tx(async (q) => {
      await lockPeerId(q, input.mpc_peer_id);
      const dup = await q.query(`SELECT 1 FROM devices WHERE public_key = $1 AND status IN ('PENDING','APPROVED')`, [
        pub,
      ]);
      if (dup.length > 0) throw new ApiError('CONFLICT', 'this device key already has an enrollment');
      const holder = await peerIdHolder(q, input.mpc_peer_id);
      if (holder !== undefined) throw new ApiError('CONFLICT', `this MPC peer id belongs to a ${holder}`);
      const id = randomUUID();
      const now = this.c.clock();
      await q.query(
        `INSERT INTO devices (device_id, name, platform, os_version, public_key, fingerprint, status, created_at, mpc_peer_id)
         VALUES ($1,$2,$3,$4,$5,$6,'PENDING',$7,$8)`,
        [id, input.name, input.platform, input.os_version, pub, fingerprint, now, input.mpc_peer_id],
      );
      await this.c.audit.record(q, null, 'device.enrollment_requested', 'device', id, {
        fingerprint,
        mpc_peer_id: input.mpc_peer_id,
      });
      await emitInstanceEvent(q, this.c.clock, 'DEVICE_CREATED', {
        device_id: id,
        name: input.name,
        platform: input.platform,
        status: 'PENDING',
        fingerprint,
      });
      return {
        device_id: id,
        status: 'PENDING' as const,
        fingerprint,
        mpc_peer_id: input.mpc_peer_id,
        created_at: iso(now),
      };
    });
  }

  /** One device (any status). @throws ApiError RESOURCE_NOT_FOUND */
  async getDevice(id: string) {
    const r = (
      await this.c.db.query<
        { device_id: string; status: string; fingerprint: string; created_at: Date; decided_at: Date | null } & Record<
          string,
          unknown
        >
      >(
        `SELECT device_id, name, platform, os_version, public_key, fingerprint, mpc_peer_id, user_id, status, created_at,
                decided_at, decided_by
         FROM devices WHERE device_id = $1`,
        [id],
      )
    )[0];
    if (r === undefined) throw notFound('device');
    return { ...r, created_at: iso(r.created_at), decided_at: iso(r.decided_at) };
  }

  /** One page of devices, oldest first, optionally of one status (PENDING, APPROVED, REJECTED, REMOVED). */
  async listDevices(p: PageRequest, status?: string) {
    const where = status ? 'WHERE status = $1' : '';
    const args: unknown[] = status ? [status] : [];
    const rows = await this.c.db.query<{ device_id: string }>(
      `SELECT device_id FROM devices ${where} ORDER BY created_at, device_id
       LIMIT $${args.length + 1} OFFSET $${args.length + 2}`,
      [...args, p.page_size, pageOffset(p)],
    );
    const [count] = await this.c.db.query<{ n: string }>(`SELECT COUNT(*)::text AS n FROM devices ${where}`, args);
    const data = await Promise.all(rows.map((r) => this.getDevice(r.device_id)));
    const page: Page<(typeof data)[number]> = {
      data,
      page: p.page,
      page_size: p.page_size,
      total: Number(count?.n ?? 0),
    };
    return page;
  }

  /**
   * Approve a PENDING device after the administrator compared the fingerprint shown on the phone
   * (out of band) with the one typed here; a mismatch is a 422 and the device stays PENDING. The
   * approval binds the device to `userId`, the dashboard user who holds the phone (it must exist,
   * not be deleted nor blocked): only devices bound to an Admin sign that Admin's policy versions.
   * Reject (a PENDING device) and remove (any) commit the new status, then call
   * {@link DeviceComponents.onDeviceRevoked} so the device hub closes its socket and drops its queue.
   * @throws ApiError RESOURCE_NOT_FOUND; VALIDATION_FAILED (`body.fingerprint`, `body.user_id`);
   *   CONFLICT (not PENDING; enrolled before MPC peer ids were bound — it must enrol again)
   */
  async decideDevice(
    actor: string,
    id: string,
    decision: 'approve' | 'reject' | 'remove',
    fingerprint?: string,
    userId?: string,
  ) {
    const out = await this.c.db.tx(async (q) => {
      const d = (
        await q.query<{
          status: string;
          fingerprint: string;
          name: string;
          platform: string;
          mpc_peer_id: string | null;
          public_key: string;
        }>(
          'SELECT status, fingerprint, name, platform, mpc_peer_id, public_key FROM devices WHERE device_id = $1 FOR UPDATE',
          [id],
        )
      )[0];
      if (d === undefined) throw notFound('device');
      let next: string;
      if (decision === 'remove') {
        if (d.status === 'REMOVED') throw new ApiError('CONFLICT', 'the device is already removed');
        next = 'REMOVED';
      } else {
        if (d.status !== 'PENDING') throw new ApiError('CONFLICT', `the device is ${d.status}, not PENDING`);
        if (decision === 'approve') {
          if (fingerprint === undefined || normaliseFingerprint(fingerprint) !== normaliseFingerprint(d.fingerprint)) {
            throw new ApiError('VALIDATION_FAILED', 'the fingerprint does not match the device key; do not approve', [
              { field: 'body.fingerprint', message: 'does not match the enrolled device key' },
            ]);
          }
          if (d.mpc_peer_id === null) {
            throw new ApiError('CONFLICT', 'the device was enrolled without an MPC peer id; it must enrol again');
          }
          const u = (
            await q.query<{ blocked_at: Date | null }>(
              'SELECT blocked_at FROM users WHERE user_id = $1 AND deleted_at IS NULL',
              [userId ?? null],
            )
          )[0];
          if (u === undefined || u.blocked_at !== null) {
            throw new ApiError('VALIDATION_FAILED', 'user_id: the device must belong to an existing, unblocked user', [
              { field: 'body.user_id', message: u === undefined ? 'no such user' : 'the user is blocked' },
            ]);
          }
          next = 'APPROVED';
        } else next = 'REJECTED';
      }
      if (next === 'APPROVED') {
        await q.query(
          'UPDATE devices SET status = $2, decided_at = $3, decided_by = $4, user_id = $5 WHERE device_id = $1',
          [id, next, this.c.clock(), actor, userId],
        );
      } else {
        await q.query('UPDATE devices SET status = $2, decided_at = $3, decided_by = $4 WHERE device_id = $1', [
          id,
          next,
          this.c.clock(),
          actor,
        ]);
      }
      if (d.status === 'APPROVED' && next !== 'APPROVED') {
        // issue #22: the signers stop accepting this device's approvals (pushed after the commit,
        // before the answer; again before a signer's next ceremony until it acknowledged)
        await q.query(
          `INSERT INTO revoked_approvers (device_id, public_key, revoked_at) VALUES ($1,$2,$3)
           ON CONFLICT (device_id) DO NOTHING`,
          [id, compressedKey(d.public_key), this.c.clock()],
        );
      }
      await this.c.audit.record(
        q,
        actor,
        `device.${decision === 'approve' ? 'approved' : decision === 'reject' ? 'rejected' : 'removed'}`,
        'device',
        id,
        next === 'APPROVED' ? { user_id: userId, mpc_peer_id: d.mpc_peer_id } : {},
      );
      const data = {
        device_id: id,
        name: d.name,
        platform: d.platform,
        status: next,
        previous_status: d.status,
        fingerprint: d.fingerprint,
      };
      if (decision === 'remove') await emitInstanceEvent(q, this.c.clock, 'DEVICE_REMOVED', data);
      else await emitInstanceEvent(q, this.c.clock, 'DEVICE_STATUS_CHANGED', data);
      if (next === 'APPROVED') await emitInstanceEvent(q, this.c.clock, 'CERTIFICATE_READY', data);
      return next === 'APPROVED' ? { device_id: id, status: next, user_id: userId } : { device_id: id, status: next };
    });
    // after the commit: the device hub closes the socket and drops the queue at once
    if (out.status !== 'APPROVED') {
      this.c.onDeviceRevoked?.(out.device_id, out.status);
      await this.c.pushRevocations?.().catch(() => undefined);
    }
    return out;
  }

  /**
   * Pin the MPC peer id of an APPROVED device enrolled before peer ids were bound (migration 6) at
   * its first authenticated hello (trust on first use; audited as `device.mpc_peer_pinned`). Refused
   * when the device already has one, is not APPROVED, or the id is a server signer's (now or ever)
   * or another live device's.
   * @returns true when `peerId` is now the device's pinned id
   */
  async pinLegacyPeerId(deviceId: string, peerId: string): Promise<boolean> {
    return this.c.db.tx(async (q) => {
      await lockPeerId(q, peerId);
      if ((await peerIdHolder(q, peerId, deviceId)) !== undefined) return false;
      const r = await q.query(
        `UPDATE devices SET mpc_peer_id = $2
         WHERE device_id = $1 AND mpc_peer_id IS NULL AND status = 'APPROVED' RETURNING 1`,
        [deviceId, peerId],
      );
      if (r.length === 0) return false;
      await this.c.audit.record(q, null, 'device.mpc_peer_pinned', 'device', deviceId, { mpc_peer_id: peerId });
      return true;
    });
  }
}
