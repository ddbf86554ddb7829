/**
 * The recovery DRILL (issue #22, `custodian admin keys drill`): a signing set of a key signs the
 * fixed digest `testSignatureDigest('drill', keyId, ceremonyId)` under every key of the master key,
 * verified here with noble independently of the signers (Ed25519 under the master key, BIP340 under
 * the BIP86 output key of the Taproot internal key, ECDSA under the master key), consuming no pooled
 * presignature and writing nothing but the audit record. Real in-process signers on LevelDB.
 */
import { taprootOutputKey } from '@custodian/chains';
import { bytesToHex } from '@custodian/crypto';
import { CeremonyKind, KeyAlgorithm, Outcome, refusalOf, testSignatureDigest } from '@custodian/wire';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { afterAll, describe, expect, it } from 'vitest';
import { runCeremony, type Sublevel } from '../src/index.js';
import { Cluster, held, runAt, start } from './lifecycle-harness.js';

const cluster = new Cluster(false);
afterAll(() => cluster.close());

async function counts(s: { ctx: { store: { keys(sl: Sublevel): Promise<string[]> } } }) {
  const out: Record<string, number> = {};
  for (const sl of ['shares', 'presignatures', 'ledger', 'pending', 'ceremonies'] as const)
    out[sl] = (await s.ctx.store.keys(sl)).length;
  return out;
}

describe('DRILL: test signatures under every key of a master key', () => {
  it('any threshold of the key signs the drill digest under all three keys; nothing is written but the audit record; foreign or too few parties are refused', async () => {
    const signers = await cluster.add(4);
    for (const s of signers.slice(0, 3)) await cluster.seedPrimes(s);
    const [a, b, c, outsider] = signers as [
      (typeof signers)[0],
      (typeof signers)[0],
      (typeof signers)[0],
      (typeof signers)[0],
    ];
    const made = await runAt(runCeremony, start(CeremonyKind.MASTER_KEY, [a, b, c], { threshold: 2 }), [a, b, c]);
    expect(made.map((r) => r.outcome)).toEqual([Outcome.OK, Outcome.OK, Outcome.OK]);
    const keyId = made[0]?.keyId as string;
    const rec = await held(a, keyId);
    expect(rec?.keys.map((k) => k.algorithm).sort()).toEqual(
      [KeyAlgorithm.ED25519, KeyAlgorithm.SECP256K1_TAPROOT, KeyAlgorithm.SECP256K1_ECDSA].sort(),
    );
    const before = await Promise.all([c, a].map(counts));

    const req = start(CeremonyKind.DRILL, [c, a], { keyId });
    const res = await runAt(runCeremony, req, [c, a]);
    expect(
      res.map((r) => r.outcome),
      res.map((r) => r.error).join('; '),
    ).toEqual([Outcome.OK, Outcome.OK]);
    const digest = testSignatureDigest('drill', keyId, req.ceremonyId);
    const sigs = res[0]?.signatures ?? [];
    expect(sigs).toHaveLength(3);
    for (const s of sigs) {
      const k = rec?.keys.find((x) => x.algorithm === s.algorithm);
      expect(bytesToHex(s.digest)).toBe(bytesToHex(digest));
      if (s.algorithm === KeyAlgorithm.ED25519) {
        expect(bytesToHex(s.publicKey)).toBe(k?.publicKey);
        expect(ed25519.verify(s.signature, digest, s.publicKey)).toBe(true);
      } else if (s.algorithm === KeyAlgorithm.SECP256K1_TAPROOT) {
        const output = taprootOutputKey(Uint8Array.from(Buffer.from(k?.publicKey as string, 'hex')));
        expect(bytesToHex(s.publicKey)).toBe(bytesToHex(output));
        expect(schnorr.verify(s.signature, digest, output)).toBe(true);
      } else {
        expect(bytesToHex(s.publicKey)).toBe(k?.publicKey);
        expect(secp256k1.verify(s.signature, digest, s.publicKey, { prehash: false })).toBe(true);
      }
    }
    // the other party reports the same signatures
    expect(res[1]?.signatures?.map((s) => bytesToHex(s.signature))).toEqual(sigs.map((s) => bytesToHex(s.signature)));
    // nothing written but the audit record (shares, presignatures, ledger, pending untouched)
    const after = await Promise.all([c, a].map(counts));
    for (const [i, x] of after.entries())
      expect(x).toEqual({ ...before[i], ceremonies: (before[i]?.ceremonies ?? 0) + 1 });

    // a party that is not a party of the key, too few parties, an unknown key: refused
    const foreign = await runCeremony(outsider.ctx, start(CeremonyKind.DRILL, [a, outsider], { keyId }));
    expect(refusalOf(foreign.refusal)).toBe('KEY_UNKNOWN');
    const withForeign = await runCeremony(a.ctx, start(CeremonyKind.DRILL, [a, outsider], { keyId }));
    expect(withForeign.outcome).toBe(Outcome.REFUSED);
    expect(refusalOf(withForeign.refusal)).toBe('REQUEST_INVALID');
    const alone = await runCeremony(a.ctx, start(CeremonyKind.DRILL, [a], { keyId }));
    expect(refusalOf(alone.refusal)).toBe('REQUEST_INVALID');
    const unknown = await runCeremony(a.ctx, start(CeremonyKind.DRILL, [a, b], { keyId: 'ab'.repeat(16) }));
    expect(refusalOf(unknown.refusal)).toBe('KEY_UNKNOWN');
  });
});
