/**
 * Every CGGMP21 round body travels as its own protobuf message (proto/custodian/v1/cggmp.proto,
 * registered in @custodian/wire): each protocol runs with every message encoded by its registered
 * type and decoded again before delivery, and the decoded body is exactly the body sent.
 */
import { type Canonical, canonicalEncode, type Delivery, equalBytes, secp256k1Group as G } from '@custodian/crypto';
import { bytesToCanonical, CGGMP_SIGN_SCHEMA, canonicalToBytes, PROTOCOL_SCHEMAS, roundType } from '@custodian/wire';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import {
  type CoreKeyShare,
  type EcdsaReshareOutput,
  type EcdsaSignature,
  type KeyShare,
  type Presignature,
  refreshProtocol,
  reshareProtocol,
} from '../src/index.js';
import {
  fixtureShares,
  runAux,
  runKeygen,
  runParties,
  runPresign,
  runPresignCheating,
  runSign,
  SECURITY_112,
  testPrimes,
} from './helpers.js';

const schemaOf = (tag: string) => {
  const s = PROTOCOL_SCHEMAS.find((p) => p.protocol === tag);
  if (!s) throw new Error(`${tag}: no registered schema`);
  return s;
};

/**
 * Interceptor: encode with the registered type, decode, deliver the decoded body; records the types
 * used. The echo round is `rounds.length`, as the signer's runner gives it (signing never reaches it).
 */
function overTheWire(tag: string) {
  const echoRound = schemaOf(tag).rounds.length;
  const used = new Set<string>();
  const intercept = (d: Delivery): Delivery[] => {
    const { round, kind, body } = d.message;
    const type = roundType(tag, round, kind, echoRound);
    const name = type.fullName.replace(/^\./, '');
    // the self-describing fallback is not a round message type
    expect(name, `${tag} round ${round} ${kind}`).not.toBe('custodian.v1.Value');
    const encoded = canonicalToBytes(type, body);
    const decoded = bytesToCanonical(type, encoded);
    if (!decoded.ok) throw new Error(`${tag} round ${round} ${kind}: ${decoded.rejection.reason}`);
    expect(equalBytes(canonicalEncode(decoded.value), canonicalEncode(body as Canonical))).toBe(true);
    used.add(`${round}:${kind}:${name}`);
    return [{ ...d, message: { ...d.message, body: decoded.value } }];
  };
  return { intercept, used };
}

/** Every registered (round, part) of `tag`, plus the echo round unless it has none. */
function expected(tag: string): string[] {
  const schema = schemaOf(tag);
  const out = schema.rounds.flatMap((r, i) => [
    ...(r.broadcast ? [`${i}:broadcast:${r.broadcast}`] : []),
    ...(r.p2p ? [`${i}:p2p:${r.p2p}`] : []),
  ]);
  if (tag !== CGGMP_SIGN_SCHEMA.protocol) out.push(`${schema.rounds.length}:broadcast:custodian.v1.EchoRound`);
  return out.sort();
}

describe('CGGMP21 round messages over the wire (typed protobuf, proto/custodian/v1/cggmp.proto)', () => {
  it('key generation 2-of-3 and aux info: every round part has its own type and round-trips exactly', () => {
    const kg = overTheWire('custodian.cggmp.keygen.v1');
    const keys = runKeygen(2, 3, 'wire-kg', kg.intercept);
    expect(keys.aborted).toEqual([undefined, undefined, undefined]);
    expect(keys.outputs[0]?.publicKey.equals(keys.outputs[2]?.publicKey as never)).toBe(true);
    expect([...kg.used].sort()).toEqual(expected('custodian.cggmp.keygen.v1'));

    const aux = overTheWire('custodian.cggmp.aux.v1');
    const res = runAux(3, SECURITY_112, 'wire-aux', aux.intercept);
    expect(res.aborted).toEqual([undefined, undefined, undefined]);
    expect(res.outputs.every((o) => o !== undefined)).toBe(true);
    expect([...aux.used].sort()).toEqual(expected('custodian.cggmp.aux.v1'));
  });

  it('presigning and signing 2-of-3: the signature verifies; a tampered typed field is still blamed', () => {
    const shares = fixtureShares('2of3');
    const pre = overTheWire('custodian.cggmp.presign.v1');
    const presigs = runPresign(shares, [0, 2], 'wire-pre', pre.intercept);
    expect(presigs.aborted).toEqual([undefined, undefined]);
    // identification (rounds 3–4) runs only after a failed output check: party 1 broadcasts a wrong δ_1
    const pre2 = overTheWire('custodian.cggmp.presign.v1');
    const ident = runPresignCheating(fixtureShares('2of3'), [0, 1, 2], 'wire-pre-ident', {
      cheater: 1,
      cheat: 'delta',
      intercept: pre2.intercept,
    });
    expect(ident.aborted[0]?.culprits.map((c) => [c.party, c.check])).toEqual([[1, 'proof.dec']]);
    expect([...new Set([...pre.used, ...pre2.used])].sort()).toEqual(expected('custodian.cggmp.presign.v1'));

    const digest = new Uint8Array(32).fill(9);
    const sg = overTheWire('custodian.cggmp.sign.v1');
    const sigs = runSign(presigs.outputs as Presignature[], digest, 'wire-sign', { intercept: sg.intercept });
    expect(sigs.aborted).toEqual([undefined, undefined]);
    expect([...sg.used].sort()).toEqual(expected('custodian.cggmp.sign.v1'));
    const sig = sigs.outputs[0] as EcdsaSignature;
    expect(sig.publicKey).toEqual(G.encodePoint((shares[0] as KeyShare).core.publicKey));
    expect(secp256k1.verify(sig.compact, digest, sig.publicKey, { prehash: false })).toBe(true);

    // a wrong σ_i that still fits SignRound0Broadcast reaches the protocol and is blamed on its sender
    // (a presignature signs once: a fresh one)
    const presigs2 = runPresign(shares, [0, 2], 'wire-pre-2');
    const bad = overTheWire('custodian.cggmp.sign.v1');
    const blamed = runSign(presigs2.outputs as Presignature[], digest, 'wire-sign-bad', {
      intercept: (d) =>
        bad.intercept(
          d.message.from === 1 ? { ...d, message: { ...d.message, body: { sigma: G.encodeScalar(5n) } } } : d,
        ),
    });
    expect(blamed.aborted[0]?.culprits).toMatchObject([{ party: 1, reason: 'invalid signature share σ_j' }]);
  });

  it('key refresh 2-of-3 over the wire keeps the public key', () => {
    const shares = fixtureShares('2of3');
    const rf = overTheWire('custodian.cggmp.refresh.v1');
    const res = runParties<KeyShare>(
      (i) =>
        refreshProtocol({
          share: shares[i] as KeyShare,
          primes: testPrimes(SECURITY_112, i + 3),
          checkPrimality: false,
        }),
      3,
      'wire-refresh',
      rf.intercept,
    );
    expect(res.aborted).toEqual([undefined, undefined, undefined]);
    expect(res.outputs[1]?.core.publicKey.equals((shares[1] as KeyShare).core.publicKey)).toBe(true);
    expect([...rf.used].sort()).toEqual(expected('custodian.cggmp.refresh.v1'));
  });
});

describe('CGGMP21 reshare over the wire (typed protobuf)', () => {
  it('2-of-3 → 3-of-4 reshare: every round part has its own type and round-trips exactly', () => {
    const old = fixtureShares('2of3').map((s) => s.core);
    const tag = 'custodian.cggmp.reshare.v1';
    const rs = overTheWire(tag);
    const seats = [{ oldIndex: 0 }, { oldIndex: 2, newIndex: 0 }, { newIndex: 1 }, { newIndex: 2 }, { newIndex: 3 }];
    const res = runParties<EcdsaReshareOutput>(
      (i) =>
        reshareProtocol({
          ...(seats[i]?.oldIndex !== undefined ? { core: old[seats[i]?.oldIndex as number] as CoreKeyShare } : {}),
          parties: seats,
          newN: 4,
          newThreshold: 3,
          expectedPublicKey: (old[0] as CoreKeyShare).publicKey,
          expectedChainCode: (old[0] as CoreKeyShare).chainCode,
          context: new Uint8Array(32).fill(2),
        }),
      seats.length,
      'wire-reshare',
      rs.intercept,
    );
    expect(res.aborted.every((a) => a === undefined)).toBe(true);
    const cores = res.outputs.flatMap((o) => (o?.core ? [o.core] : []));
    expect(cores.length).toBe(4);
    for (const c of cores) expect(c.publicKey.equals((old[0] as CoreKeyShare).publicKey)).toBe(true);
    expect([...rs.used].sort()).toEqual(expected(tag));
  });
});
