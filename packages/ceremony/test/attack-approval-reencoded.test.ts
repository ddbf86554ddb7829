/**
 * Attack (review of issue #20): a fee replacement needs approvals not used for an earlier signature
 * of the transfer; the ledger remembers used approvals by their signature string. A P-256 signature
 * decodes the same from upper-case hex, so a coordinator that re-encodes an old approval's signature
 * would make it count as fresh and replace (same nonce, fee up to the cap) without a new approval.
 * Approval and policy signatures and device keys must be lower-case hex of their exact length.
 */
import { signApproval } from '@custodian/wire';
import { describe, expect, it } from 'vitest';
import { dev1, ethContext, intent, request, signAndCommit, tempStore, verdict } from './attack-fixtures.js';

const store = tempStore('attack-approval-reencoded');

const W0 = [44, 60, 0, 0, 0];

describe('a used approval re-encoded is not a fresh one', () => {
  it('refuses a fee replacement whose approvals are the used ones with upper-cased hex', async () => {
    const i = intent();
    const approvals = [signApproval(i, 'APPROVE', 'dev-1', dev1, '2026-03-04T10:00:01.000Z')];
    const ctx = ethContext(W0);
    await signAndCommit(store(), request(i, ctx, approvals));
    const bumped = { ...ctx, maxFeePerGas: '3000000000' };
    // the same approvals as they were: not fresh
    expect(await verdict(store(), request(i, bumped, approvals))).toBe('INSUFFICIENT_APPROVALS');
    // re-encoded: still the same approvals
    for (const reencode of [
      (a: (typeof approvals)[number]) => ({ ...a, signature: a.signature.toUpperCase() }),
      (a: (typeof approvals)[number]) => ({ ...a, device_public_key: a.device_public_key.toUpperCase() }),
      (a: (typeof approvals)[number]) => ({ ...a, signature: `${a.signature.slice(0, 64)}${a.signature.slice(64)} ` }),
    ]) {
      expect(await verdict(store(), request(i, bumped, approvals.map(reencode)))).not.toBe('ACCEPTED');
    }
    // a genuinely fresh approval still allows the replacement
    const fresh = [signApproval(i, 'APPROVE', 'dev-1', dev1, '2026-03-04T10:05:00.000Z')];
    expect(await verdict(store(), request(i, bumped, fresh))).toBe('ACCEPTED');
  });
});
