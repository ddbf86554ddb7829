/**
 * RFC 9591 Appendix E vectors (Ed25519, secp256k1) and ZcashFoundation FROST vectors
 * (vectors.json, vectors-big-identifier.json for ed25519, secp256k1, secp256k1-tr) run THROUGH
 * our signing rounds: the vectors' nonce randomness is injected as each party's RandomSource
 * (noble's commit() draws hiding then binding randomness, 32 bytes each — RFC 9591 §4.1), and the
 * nonce commitments, signature shares and final signature must equal the vectors'.
 */
import { readFileSync } from 'node:fs';
import type { OutgoingMessage as OutgoingMessageLike } from '@custodian/crypto';
import { Party, type RandomSource, simulate, vssEvaluateCommitments } from '@custodian/crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr, secp256k1_FROST } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import {
  getSuite,
  type KeyShare,
  type SignOutput,
  type SuiteName,
  signProtocol,
  validateKeyShare,
} from '../src/index.js';
import { hex, sid, unhex } from './helpers.js';

const root = new URL('../../../test-vectors/', import.meta.url);
const load = (p: string) => JSON.parse(readFileSync(new URL(p, root), 'utf8'));

interface Vector {
  config: { MAX_PARTICIPANTS: string; MIN_PARTICIPANTS: string; NUM_PARTICIPANTS: string };
  inputs: {
    participant_list: number[];
    group_secret_key: string;
    message: string;
    share_polynomial_coefficients: string[];
    participant_shares: { identifier: number; participant_share: string }[];
  };
  round_one_outputs: {
    outputs: {
      identifier: number;
      hiding_nonce_randomness: string;
      binding_nonce_randomness: string;
      hiding_nonce_commitment: string;
      binding_nonce_commitment: string;
    }[];
  };
  round_two_outputs: { outputs: { identifier: number; sig_share: string }[] };
  final_output: { sig: string };
}

/** Key shares of the vector's trusted-dealer polynomial, in our KeyShare format. */
export function vectorShares(suiteName: SuiteName, v: Vector): KeyShare[] {
  const suite = getSuite(suiteName);
  const G = suite.group;
  const Fn = suite.frost.utils.Fn;
  const coeffs = [v.inputs.group_secret_key, ...v.inputs.share_polynomial_coefficients].map((h) =>
    Fn.fromBytes(unhex(h)),
  );
  const C = coeffs.map((a) => G.mulBase(a));
  const ids = v.inputs.participant_shares.map((p) => BigInt(p.identifier));
  const verifyingShares = ids.map((id) => G.encodePoint(vssEvaluateCommitments(G, C, id)));
  return v.inputs.participant_shares.map((p) => ({
    version: 1 as const,
    suite: suiteName,
    threshold: Number(v.config.MIN_PARTICIPANTS),
    identifiers: ids,
    identifier: BigInt(p.identifier),
    signingShare: Fn.fromBytes(unhex(p.participant_share)),
    groupPublicKey: G.encodePoint(C[0]),
    vssCommitment: C.map((c) => G.encodePoint(c)),
    verifyingShares,
    chainCode: new Uint8Array(32),
    epoch: 0,
  }));
}

/** A RandomSource replaying exactly the given byte strings, then failing. */
function replay(chunks: Uint8Array[]): RandomSource {
  const queue = [...chunks];
  return (length) => {
    const next = queue.shift();
    if (!next || next.length !== length) throw new Error(`replay rng: unexpected request of ${length} bytes`);
    return next;
  };
}

function runVector(suiteName: SuiteName, v: Vector, taproot?: { merkleRoot: Uint8Array }) {
  const shares = vectorShares(suiteName, v);
  for (const s of shares.filter((s) => v.inputs.participant_list.includes(Number(s.identifier)))) validateKeyShare(s);
  const signers = v.inputs.participant_list.map(BigInt);
  const message = unhex(v.inputs.message);
  const r1 = v.round_one_outputs.outputs;
  const sent: OutgoingMessageLike[] = [];
  const parties = signers.map((id, k) => {
    const out = r1.find((o) => BigInt(o.identifier) === id);
    if (!out) throw new Error('vector lacks round one output');
    return new Party(
      signProtocol({
        keyShare: shares.find((s) => s.identifier === id) as KeyShare,
        signers,
        message,
        ...(taproot ? { taproot } : {}),
      }),
      {
        self: k,
        n: signers.length,
        sessionId: sid('rfc9591'),
        rng: replay([unhex(out.hiding_nonce_randomness), unhex(out.binding_nonce_randomness)]),
      },
    );
  });
  const result = simulate(parties, {
    intercept: (d) => {
      sent.push(d.message);
      return [d];
    },
  });
  expect(result.aborted).toEqual(signers.map(() => undefined));
  // round 0: nonce commitments as in the vector
  for (const m of sent.filter((m) => m.round === 0)) {
    const o = r1.find((x) => BigInt(x.identifier) === signers[m.from]);
    const body = m.body as { hiding: Uint8Array; binding: Uint8Array };
    expect(hex(body.hiding)).toBe(o?.hiding_nonce_commitment);
    expect(hex(body.binding)).toBe(o?.binding_nonce_commitment);
  }
  // round 1: signature shares as in the vector
  for (const m of sent.filter((m) => m.round === 1)) {
    const o = v.round_two_outputs.outputs.find((x) => BigInt(x.identifier) === signers[m.from]);
    expect(hex((m.body as { share: Uint8Array }).share)).toBe(o?.sig_share);
  }
  const outputs = result.outputs as SignOutput[];
  for (const o of outputs) expect(hex(o.signature)).toBe(v.final_output.sig);
  return outputs[0] as SignOutput;
}

describe('RFC 9591 Appendix E through our signing rounds', () => {
  it('FROST(Ed25519, SHA-512) — E.1', () => {
    const v = load('rfc9591-frost/frost-ed25519-sha512.json');
    const out = runVector('ed25519', v);
    expect(ed25519.verify(out.signature, out.message, out.verifyingKey)).toBe(true);
  });
  it('FROST(secp256k1, SHA-256) — E.5', () => {
    const v = load('rfc9591-frost/frost-secp256k1-sha256.json');
    const out = runVector('secp256k1', v);
    expect(secp256k1_FROST.verify(out.signature, out.message, out.verifyingKey)).toBe(true);
  });
});

describe('ZcashFoundation FROST vectors through our signing rounds', () => {
  for (const file of ['vectors.json', 'vectors-big-identifier.json']) {
    it(`ed25519/${file}`, () => {
      const out = runVector('ed25519', load(`zf-frost/ed25519/${file}`));
      expect(ed25519.verify(out.signature, out.message, out.verifyingKey)).toBe(true);
    });
    it(`secp256k1/${file}`, () => {
      const out = runVector('secp256k1', load(`zf-frost/secp256k1/${file}`));
      expect(secp256k1_FROST.verify(out.signature, out.message, out.verifyingKey)).toBe(true);
    });
    it(`secp256k1-tr/${file} (BIP340 signature)`, () => {
      const out = runVector('secp256k1-tr', load(`zf-frost/secp256k1-tr/${file}`));
      expect(schnorr.verify(out.signature, out.message, out.verifyingKey)).toBe(true);
    });
  }
});
