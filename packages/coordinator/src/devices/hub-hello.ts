/**
 * The check of a device's hello (DESIGN §1, §5; proto `custodian/v1/relay.proto`): the answer to
 * the hub's `DeviceChallenge` is `DeviceHello { device_id, mpc_peer_id, signature }`, the signature
 * (P-256, 64-byte r‖s) over `deviceHelloDigest(nonce, coordinator_peer_id, device_id, mpc_peer_id)`
 * by the device key of an **APPROVED** enrolled device, naming the MPC peer id pinned at its
 * enrollment (issue #26 item 7: never another, never a server signer's; a device enrolled before
 * peer ids were bound gets the id of its first hello pinned, when the hub may pin).
 */
import { bytesToHex } from '@custodian/crypto';
import { type DeviceFrame, deviceHelloDigest } from '@custodian/signer-client';
import { deviceVerify } from '@custodian/wire';
import { peerIdFromString } from '@libp2p/peer-id';
import type { DeviceHubComponents, HubDeviceRecord } from './hub-types.js';

/** Outcome of {@link checkHello}. */
export type HelloVerdict =
  | { ok: true; deviceId: string; mpcPeerId: string; record: HubDeviceRecord; pinned: boolean }
  /** `revoked`: the device is REMOVED or REJECTED (told DEVICE_REVOKED, so it stops reconnecting). */
  | { ok: false; why: string; revoked: boolean };

/**
 * Check a hello against the enrolled record (status, peer id, signature; pins a legacy device's
 * peer id through `pinLegacyPeer`). Does not check the hub's own state (a peer id another
 * connected device uses).
 */
export async function checkHello(
  c: Pick<DeviceHubComponents, 'devices' | 'coordinator' | 'isSignerPeer' | 'signerPeerRegistered' | 'pinLegacyPeer'>,
  nonce: Uint8Array,
  hello: NonNullable<DeviceFrame['hello']>,
): Promise<HelloVerdict> {
  const fail = (why: string, revoked = false): HelloVerdict => ({ ok: false, why, revoked });
  if (!/^[0-9a-f-]{36}$/i.test(hello.deviceId)) return fail('unknown device');
  const deviceId = hello.deviceId.toLowerCase();
  const rec = await c.devices.hubRecord(deviceId);
  if (!rec) return fail('unknown device');
  // final: the device is told it was revoked (it stops reconnecting), then refused as any other
  if (rec.status === 'REMOVED' || rec.status === 'REJECTED') return fail(`device is ${rec.status}, not APPROVED`, true);
  if (rec.status !== 'APPROVED') return fail(`device is ${rec.status}, not APPROVED`);
  try {
    const pid = peerIdFromString(hello.mpcPeerId);
    if (pid.type !== 'Ed25519') return fail('mpc_peer_id: not an Ed25519 peer id');
  } catch {
    return fail('mpc_peer_id: not a peer id');
  }
  const digest = deviceHelloDigest(nonce, c.coordinator.peerId, hello.deviceId, hello.mpcPeerId);
  if (!deviceVerify(bytesToHex(hello.signature), digest, rec.publicKey)) return fail('bad signature');
  // the peer id is the one bound at enrollment, never a server signer's (issue #26 item 7)
  // (registered through any replica: the store is read when this replica's list lacks it)
  if (c.isSignerPeer(hello.mpcPeerId) || (await c.signerPeerRegistered?.(hello.mpcPeerId)))
    return fail("mpc_peer_id is a server signer's");
  let pinned = false;
  if (rec.mpcPeerId === null) {
    const pin = c.pinLegacyPeer;
    if (!pin || !(await pin(deviceId, hello.mpcPeerId))) {
      return fail('mpc_peer_id: none bound at enrollment and this one cannot be pinned; enrol again');
    }
    pinned = true;
  } else if (rec.mpcPeerId !== hello.mpcPeerId) {
    return fail('mpc_peer_id differs from the one bound at enrollment');
  }
  return { ok: true, deviceId, mpcPeerId: hello.mpcPeerId, record: rec, pinned };
}
