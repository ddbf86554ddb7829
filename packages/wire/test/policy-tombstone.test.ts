/**
 * Policy tombstones (issue #26 item 2) in the policy digest: `deleted: true` is bound, and a
 * document without it encodes exactly as before the field existed — versions signed earlier still
 * verify.
 */
import { bytesToHex, canonicalEncode } from '@custodian/crypto';
import { p256 } from '@noble/curves/nist.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { describe, expect, it } from 'vitest';
import {
  type PolicyDocument,
  policyDigest,
  policySignedByTrustedAdmin,
  signPolicy,
  verifyTransferEvidence,
} from '../src/index.js';

const doc: PolicyDocument = {
  policy_id: '44444444-4444-4444-8444-444444444444',
  version: 3,
  profile_id: '11111111-1111-4111-8111-111111111111',
  scope: { wallet_ids: ['22222222-2222-4222-8222-222222222222'], blockchain: 'ethereum-local', asset_id: null },
  whitelist: ['0x70997970C51812dc3A010C7d01b50e0d17dc79C8'],
  per_transaction_limit: '100',
  daily_limit: null,
  approvals: { quorum: 2, above_amount: '50' },
  created_at: '2026-01-01T00:00:00.000Z',
};

/** The digest as it was computed before tombstones existed (packages/wire evidence.ts at a7bd69f). */
function digestBeforeTombstones(d: PolicyDocument): string {
  const c = {
    ...d,
    scope: { ...d.scope, wallet_ids: d.scope.wallet_ids ? [...d.scope.wallet_ids] : null },
    whitelist: [...d.whitelist],
    approvals: { ...d.approvals },
  };
  return bytesToHex(sha256(canonicalEncode(['custodian.policy.v1', c])));
}

describe('policy tombstones in the digest', () => {
  it('a document without the flag keeps its digest, so an old signature still verifies', () => {
    const admin = p256.utils.randomSecretKey();
    const old = signPolicy(doc, 'admin-phone', admin);
    expect(bytesToHex(policyDigest(doc))).toBe(digestBeforeTombstones(doc));
    expect(policySignedByTrustedAdmin(old, [old.device_public_key])).toBe(true);
    // a flag that is not exactly true is left out, like an absent one
    const notTrue = { ...doc, deleted: false } as unknown as PolicyDocument;
    expect(bytesToHex(policyDigest(notTrue))).toBe(digestBeforeTombstones(doc));
  });

  it('the tombstone flag is bound: it can be neither added to nor stripped from a signed version', () => {
    const admin = p256.utils.randomSecretKey();
    const tomb: PolicyDocument = { ...doc, deleted: true };
    expect(bytesToHex(policyDigest(tomb))).not.toBe(bytesToHex(policyDigest(doc)));
    const signedTomb = signPolicy(tomb, 'admin-phone', admin);
    const signedDoc = signPolicy(doc, 'admin-phone', admin);
    const keys = [signedTomb.device_public_key];
    expect(policySignedByTrustedAdmin(signedTomb, keys)).toBe(true);
    // strip the flag from the tombstone, add it to the version: neither verifies
    const { deleted: _d, ...stripped } = tomb;
    expect(policySignedByTrustedAdmin({ ...signedTomb, document: stripped }, keys)).toBe(false);
    expect(policySignedByTrustedAdmin({ ...signedDoc, document: tomb }, keys)).toBe(false);
    expect(policySignedByTrustedAdmin(signedTomb, [])).toBe(false);
  });

  it('a signed tombstone authorises no transfer (POLICY_DELETED)', () => {
    const admin = p256.utils.randomSecretKey();
    const signedTomb = signPolicy({ ...doc, deleted: true }, 'admin-phone', admin);
    const r = verifyTransferEvidence({
      intent: {} as never,
      policy: signedTomb,
      approvals: [],
      trustedAdminKeys: [signedTomb.device_public_key],
      approverKeys: new Map(),
      spentToday: 0n,
    });
    expect(r).toEqual({ ok: false, refusal: 'POLICY_DELETED' });
  });
});
