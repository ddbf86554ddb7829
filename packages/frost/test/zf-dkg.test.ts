/**
 * ZcashFoundation FROST DKG vectors (vectors_dkg.json: a 2-of-3 run) THROUGH our DKG rounds, for
 * ed25519, secp256k1 and secp256k1-tr. Each party's polynomial is injected through its
 * RandomSource: noble's round1 draws a_i0, then a_i1 (48 bytes each, mapped to a scalar by
 * RFC 9380 §5 / noble `mapHashToField`: (int(bytes) mod (q−1)) + 1, so we feed the encoding of
 * a − 1), then the proof nonce. The vectors' proofs of knowledge are checked with our blame
 * verifier (their nonces are not published).
 */
import { readFileSync } from 'node:fs';
import { bigintToBytes, type RandomSource } from '@custodian/crypto';
import { seededRandom } from '@custodian/crypto/testing';
import { describe, expect, it } from 'vitest';
import { getSuite, type KeyShare, type SuiteName, taprootTweak } from '../src/index.js';
import { hex, runDkg, unhex } from './helpers.js';

const root = new URL('../../../test-vectors/zf-frost/', import.meta.url);

function scalarRng(suite: SuiteName, scalars: bigint[], rest: RandomSource): RandomSource {
  const le = suite === 'ed25519';
  const queue = scalars.map((a) => {
    const be = bigintToBytes(a - 1n, 48);
    return le ? be.reverse() : be;
  });
  return (length) => {
    const next = queue.shift();
    if (next) {
      if (length !== 48) throw new Error('unexpected rng request');
      return next;
    }
    return rest(length);
  };
}

describe.each(['ed25519', 'secp256k1', 'secp256k1-tr'] as SuiteName[])('ZF vectors_dkg.json %s', (name) => {
  const v = JSON.parse(readFileSync(new URL(`${name}/vectors_dkg.json`, root), 'utf8'));
  const suite = getSuite(name);
  const Fn = suite.frost.utils.Fn;
  // biome-ignore lint/suspicious/noExplicitAny: JSON vector
  const parties: any[] = [1, 2, 3].map((i) => v.inputs[String(i)]);

  it('proofs of knowledge verify under our blame verifier; tampered ones do not', () => {
    for (const p of parties) {
      const pok = unhex(p.proof_of_knowledge);
      expect(suite.verifyProofOfKnowledge(BigInt(p.identifier), unhex(p.vss_commitments[0]), pok)).toBe(true);
      const bad = Uint8Array.from(pok);
      bad[bad.length - 1] = (bad[bad.length - 1] as number) ^ 1;
      expect(suite.verifyProofOfKnowledge(BigInt(p.identifier), unhex(p.vss_commitments[0]), bad)).toBe(false);
      // bound to the identifier
      expect(suite.verifyProofOfKnowledge(BigInt(p.identifier) + 1n, unhex(p.vss_commitments[0]), pok)).toBe(false);
    }
  });

  it('our DKG rounds reproduce commitments, shares and the key package', () => {
    const sent: { from: number; to?: number; round: number; body: unknown }[] = [];
    const r = runDkg(name, 2, 3, `zf:${name}`, {
      rng: (i) =>
        scalarRng(
          name,
          [Fn.fromBytes(unhex(parties[i].signing_key)), Fn.fromBytes(unhex(parties[i].coefficient))],
          seededRandom(`zf:${i}`),
        ),
      intercept: (d) => {
        sent.push(d.message);
        return [d];
      },
    });
    expect(r.aborted).toEqual([undefined, undefined, undefined]);
    for (const m of sent.filter((m) => m.round === 0)) {
      const c = (m.body as { commitment: Uint8Array[] }).commitment.map(hex);
      expect(c).toEqual(parties[m.from].vss_commitments);
    }
    for (const m of sent.filter((m) => m.round === 1 && m.to !== undefined)) {
      // signing_shares[j] of party i is the share i RECEIVED from j
      const expected = parties[m.to as number].signing_shares[String(m.from + 1)];
      expect([m.from, m.to, hex((m.body as { share: Uint8Array }).share)]).toEqual([m.from, m.to, expected]);
    }
    const outs = r.outputs as KeyShare[];
    outs.forEach((o, i) => {
      const p = parties[i];
      if (name === 'secp256k1-tr') {
        // frost-secp256k1-tr's DKG output is the BIP341 output key for an empty script tree
        // (even-Y internal key + TapTweak); we keep the internal key and tweak at signing time.
        const tw = taprootTweak(o.groupPublicKey.slice(1), new Uint8Array(0));
        expect(hex(tw.outputKey)).toBe(v.inputs.verifying_key.slice(2));
      } else {
        expect(hex(o.signingShare === 0n ? new Uint8Array(32) : Fn.toBytes(o.signingShare))).toBe(p.signing_share);
        expect(hex(o.verifyingShares[i] as Uint8Array)).toBe(p.verifying_share);
        expect(hex(o.groupPublicKey)).toBe(v.inputs.verifying_key);
      }
    });
  });
});
