import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import {
  CeremonyKind,
  type KeyChangeDocument,
  keyChangeDigest,
  keyChangeSignedByTrustedAdmin,
  openControlRequest,
  signControlRequest,
  signKeyChange,
  testSignatureDigest,
} from '../src/index.js';

const doc: KeyChangeDocument = {
  kind: 'custodian.key-change',
  change_id: '6f1c1f5e-4d53-4a43-9b4b-0f5a8f0f3c11',
  key_id: '00112233445566778899aabbccddeeff',
  public_keys: [{ algorithm: 'ED25519', public_key: 'aa'.repeat(32), chain_code: 'bb'.repeat(32) }],
  new_parties: ['12D3KooWA', '12D3KooWB', '12D3KooWC'],
  new_threshold: 2,
  approver_devices: [{ device_id: 'd1', public_key: `02${'cc'.repeat(32)}` }],
  base: { epoch: 0, parties: ['12D3KooWA', '12D3KooWB', '12D3KooWD'], threshold: 2 },
  expires_at: '2026-11-27T00:00:00.000Z',
  reason: 'replace-signer',
  created_at: '2026-11-26T00:00:00.000Z',
};

describe('key changes signed by an Admin device', () => {
  it('verifies under the trusted key only, and not once any field changes', () => {
    const sk = p256.utils.randomSecretKey();
    const signed = signKeyChange(doc, 'admin-phone', sk);
    const trusted = [bytesToHex(p256.getPublicKey(sk, true))];
    expect(keyChangeSignedByTrustedAdmin(signed, trusted)).toBe(true);
    expect(keyChangeSignedByTrustedAdmin(signed, [])).toBe(false);
    const other = signKeyChange(doc, 'x', p256.utils.randomSecretKey());
    expect(keyChangeSignedByTrustedAdmin(other, trusted)).toBe(false);
    for (const tampered of [
      { ...doc, new_threshold: 1 },
      { ...doc, base: { ...doc.base, epoch: 1 } },
      { ...doc, expires_at: '2027-01-01T00:00:00.000Z' },
      { ...doc, new_parties: [...doc.new_parties, '12D3KooWEvil'] },
      { ...doc, approver_devices: [{ device_id: 'd1', public_key: `03${'cc'.repeat(32)}` }] },
    ]) {
      expect(keyChangeSignedByTrustedAdmin({ ...signed, document: tampered }, trusted)).toBe(false);
    }
    expect(keyChangeSignedByTrustedAdmin(null as never, trusted)).toBe(false);
    expect(keyChangeDigest(doc)).toHaveLength(32);
  });

  it('test-signature digests are distinct per purpose, key and ceremony', () => {
    const c = new Uint8Array(16).fill(1);
    const a = bytesToHex(testSignatureDigest('drill', doc.key_id, c));
    expect(bytesToHex(testSignatureDigest('reshare', doc.key_id, c))).not.toBe(a);
    expect(bytesToHex(testSignatureDigest('drill', doc.key_id, new Uint8Array(16).fill(2)))).not.toBe(a);
    expect(bytesToHex(testSignatureDigest('drill', doc.key_id, c))).toBe(a);
  });

  it('a RESHARE request and a revocation round-trip through the signed control request', () => {
    const coord = ed25519.utils.randomSecretKey();
    const start = {
      ceremonyId: new Uint8Array(16).fill(3),
      kind: CeremonyKind.RESHARE,
      parties: [{ peerId: 'a' }, { peerId: 'b' }],
      threshold: 2,
      deadlineUnixMs: 1_800_000_000_000,
      keyId: doc.key_id,
      reshare: {
        newParties: [{ peerId: 'a' }, { peerId: 'b' }],
        newThreshold: 2,
        approverDevices: [{ deviceId: 'd1', publicKey: new Uint8Array(33).fill(2) }],
        keyChangeJson: '{}',
      },
    };
    const opened = openControlRequest(
      signControlRequest({ version: 1, issuedUnixMs: 1, start }, coord),
      ed25519.getPublicKey(coord),
    );
    expect(opened.ok).toBe(true);
    if (!opened.ok) return;
    expect(opened.value.start?.reshare?.newThreshold).toBe(2);
    expect(opened.value.start?.reshare?.newParties.map((p) => p.peerId)).toEqual(['a', 'b']);
    const revoke = openControlRequest(
      signControlRequest({ version: 1, issuedUnixMs: 1, revokeApprover: { deviceId: 'd1' } }, coord),
      ed25519.getPublicKey(coord),
    );
    expect(revoke.ok && revoke.value.revokeApprover?.deviceId).toBe('d1');
  });
});
