/**
 * What a device is bound to at enrollment (issue #26 items 7, 10, 11), shared by the devices room
 * (enrollment, approval), the signers room (server signer registration) and the device hub (hello):
 *
 * - **MPC peer id**: one libp2p peer id (Ed25519) names one party. A device's is pinned in its
 *   `devices.mpc_peer_id` at enrollment after a proof of possession (`verifyEnrollmentProof` of
 *   @custodian/wire), and may never be a server signer's (live or ever registered) nor another live
 *   (PENDING or APPROVED) device's; a server signer may never take a peer id any device was given.
 *   Both sides take {@link lockPeerId} first, so a concurrent enrollment and registration of the
 *   same id cannot both pass.
 * - **Device name**: shown to the approving Admin next to the fingerprint, written to the audit log
 *   and to webhooks, so it must display as what it is: {@link deviceNameProblem}.
 */

import { peerIdFromString } from '@libp2p/peer-id';
import type { Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';

/** Normalise a fingerprint typed by a person: drop spaces and colons, uppercase. */
export function normaliseFingerprint(s: string): string {
  return s.replace(/[\s:]/g, '').toUpperCase();
}

/**
 * The raw Ed25519 public key (32 bytes) of a libp2p peer id (base58btc), as a device's MPC peer id
 * and a server signer's peer id must be.
 * @param field the request field the 422 names, e.g. `body.peer_id`
 * @param label how its message names the field (default `field`)
 * @throws ApiError VALIDATION_FAILED when it does not parse or is not an Ed25519 peer id
 */
export function ed25519PeerKey(peerId: string, field: string, label = field): Uint8Array {
  let key: Uint8Array | undefined;
  try {
    const pid = peerIdFromString(peerId);
    if (pid.type === 'Ed25519') key = pid.publicKey.raw;
  } catch {
    key = undefined;
  }
  if (key === undefined) {
    throw new ApiError('VALIDATION_FAILED', `${label}: not an Ed25519 libp2p peer id`, [
      { field, message: 'not an Ed25519 libp2p peer id' },
    ]);
  }
  return key;
}

/** Longest device name, in Unicode code points. */
export const DEVICE_NAME_MAX_CHARS = 64;

/**
 * Code points a device name may not hold: control (Cc), format (Cf: bidi embeddings, overrides
 * U+202A–U+202E and isolates U+2066–U+2069, marks U+200E/U+200F, zero-width characters, U+FEFF),
 * surrogates (Cs), private use (Co), unassigned (Cn), and the line / paragraph separators.
 */
const FORBIDDEN = /[\p{C}\p{Zl}\p{Zp}]/u;

/**
 * Why `name` is not an acceptable device name, or undefined when it is: 1 to
 * {@link DEVICE_NAME_MAX_CHARS} code points of printable text without leading or trailing white
 * space and without any {@link FORBIDDEN} code point (so no emoji ZWJ sequences either).
 */
export function deviceNameProblem(name: string): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return 'must not be empty';
  const chars = [...name];
  if (chars.length > DEVICE_NAME_MAX_CHARS) return `at most ${DEVICE_NAME_MAX_CHARS} characters`;
  if (FORBIDDEN.test(name)) return 'printable characters only (no control, format or bidi override characters)';
  if (/^\s|\s$/u.test(name)) return 'no leading or trailing white space';
  return undefined;
}

/**
 * Serialise every transaction that binds `peerId` (device enrollment, legacy pinning at hello,
 * server signer registration) with a transaction-scoped advisory lock on the id.
 */
export async function lockPeerId(q: Queryable, peerId: string): Promise<void> {
  await q.query(`SELECT pg_advisory_xact_lock(hashtext('custodian/mpc-peer-id/' || $1))`, [peerId]);
}

/**
 * Who holds `peerId` already: a server signer (registered now or ever), a live (PENDING or
 * APPROVED) device other than `exceptDevice`, or nobody.
 */
export async function peerIdHolder(
  q: Queryable,
  peerId: string,
  exceptDevice?: string,
): Promise<'server signer' | 'device' | undefined> {
  const s = await q.query('SELECT 1 FROM server_signers WHERE peer_id = $1 LIMIT 1', [peerId]);
  if (s.length > 0) return 'server signer';
  const d = await q.query(
    `SELECT 1 FROM devices WHERE mpc_peer_id = $1 AND status IN ('PENDING', 'APPROVED')
       AND ($2::uuid IS NULL OR device_id <> $2::uuid) LIMIT 1`,
    [peerId, exceptDevice ?? null],
  );
  return d.length > 0 ? 'device' : undefined;
}
