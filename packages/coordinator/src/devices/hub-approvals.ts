/**
 * The device hub's approval requests: {@link ApprovalDesk} keeps each device's pending requests
 * (queued while the device is offline, re-sent on every reconnect until answered or withdrawn) and
 * verifies a device's signed `Approval` (device id and enrolled key, transfer, intent digest,
 * signature) before its listeners see it. Signers verify it again themselves.
 */
import { bytesToHex } from '@custodian/crypto';
import {
  type Approval,
  approvalDigest,
  deviceVerify,
  type TransferIntent,
  transferIntentDigest,
} from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import type { ApprovalEvent, HubLog } from './hub-types.js';

/** Pending approval requests per device, and the verification of their answers. */
export class ApprovalDesk {
  readonly #queue = new Map<string, Map<string, TransferIntent>>();
  readonly #listeners = new Set<(e: ApprovalEvent) => void>();
  /** Enrolled key of each device (filled at authentication), that approvals are checked against. */
  readonly #keys = new Map<string, string>();

  constructor(private readonly log: HubLog) {}

  /** Queue `intent` for `deviceId` (lower case) under `requestId`. */
  add(deviceId: string, requestId: string, intent: TransferIntent): void {
    let q = this.#queue.get(deviceId);
    if (!q) {
      q = new Map();
      this.#queue.set(deviceId, q);
    }
    q.set(requestId, intent);
  }

  /** Withdraw one request. */
  cancel(deviceId: string, requestId: string): void {
    this.#queue.get(deviceId)?.delete(requestId);
  }

  /** The device's pending requests, oldest first. */
  pending(deviceId: string): [string, TransferIntent][] {
    return [...(this.#queue.get(deviceId) ?? [])];
  }

  /** Drop the device's queue and remembered key (revocation). */
  forget(deviceId: string): void {
    this.#queue.delete(deviceId);
    this.#keys.delete(deviceId);
  }

  /** Remember the enrolled key (compressed P-256 hex after normalisation) of an authenticated device. */
  rememberKey(deviceId: string, publicKey: string): void {
    this.#keys.set(deviceId, p256.Point.fromHex(publicKey).toHex(true));
  }

  /** Subscribe to verified decisions; returns the unsubscribe function. */
  on(listener: (e: ApprovalEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * A device's answer (`ApprovalAnswer.approval_json`): verified, dequeued and emitted, or logged
   * and dropped.
   * @returns true when it was verified and dequeued (the request is answered), false when dropped
   */
  answer(deviceId: string, requestId: string, json: string): boolean {
    const intent = this.#queue.get(deviceId)?.get(requestId);
    if (!intent) {
      this.log('warn', 'approval for no pending request', { device: deviceId, request: requestId });
      return false;
    }
    let a: Approval;
    try {
      a = JSON.parse(json) as Approval;
    } catch {
      this.log('warn', 'approval: not JSON', { device: deviceId });
      return false;
    }
    const problem = this.#check(deviceId, intent, a);
    if (problem) {
      this.log('warn', 'approval rejected', { device: deviceId, request: requestId, reason: problem });
      return false;
    }
    this.#queue.get(deviceId)?.delete(requestId);
    for (const l of this.#listeners) {
      try {
        l({ deviceId, requestId, approval: a });
      } catch (e) {
        this.log('warn', 'approval listener failed', { err: e instanceof Error ? e.message : String(e) });
      }
    }
    return true;
  }

  #check(deviceId: string, intent: TransferIntent, a: Approval): string | undefined {
    if (typeof a !== 'object' || a === null) return 'not an object';
    if (a.device_id?.toLowerCase() !== deviceId) return 'device_id differs from the connected device';
    if (a.transfer_id !== intent.transfer_id) return 'transfer_id differs';
    if (a.decision !== 'APPROVE' && a.decision !== 'REJECT') return 'decision';
    if (a.intent_digest !== bytesToHex(transferIntentDigest(intent))) return 'intent_digest differs';
    const { signature, ...body } = a;
    try {
      const expected = this.#keys.get(deviceId);
      if (expected && expected !== a.device_public_key) return 'device_public_key differs from the enrolled key';
      // one encoding per approval (signers remember used approvals by their signature string)
      if (!/^[0-9a-f]{128}$/.test(String(signature))) return 'signature: 128 lower-case hex digits';
      if (!deviceVerify(signature, approvalDigest(body), a.device_public_key)) return 'bad signature';
    } catch {
      return 'bad signature';
    }
    return undefined;
  }
}
