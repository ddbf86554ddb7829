/**
 * FROST resharing over the wire: every round part of `custodian.frost.reshare` is encoded with its
 * registered protobuf type (proto/custodian/v1/frost.proto Reshare*), decoded again and the decoded
 * body delivered; the decoded body is exactly the body sent. Also sealed/opened end to end by
 * SessionWire for Ed25519 (signed envelopes, AEAD-encrypted shares).
 */
import {
  type Canonical,
  canonicalEncode,
  type Delivery,
  equalBytes,
  type OutgoingMessage,
  Party,
  simulate,
} from '@custodian/crypto';
import { seededRandom } from '@custodian/crypto/testing';
import { dkgProtocol, type FrostReshareOutput, type KeyShare, reshareProtocol, type SuiteName } from '@custodian/frost';
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { bytesToCanonical, canonicalToBytes, PROTOCOL_SCHEMAS, roundType, SessionWire } from '../src/index.js';

const TAG = 'custodian.frost.reshare';
const sid = (label: string) => new TextEncoder().encode(`session:${label}`.padEnd(32, '.'));

function dkg(suite: SuiteName, t: number, n: number, seed: string): KeyShare[] {
  const ps = Array.from(
    { length: n },
    (_, i) =>
      new Party(dkgProtocol({ suite, threshold: t }), {
        self: i,
        n,
        sessionId: sid(`dkg:${seed}`),
        rng: seededRandom(`${seed}:${i}`),
      }),
  );
  const r = simulate(ps);
  if (r.aborted.some((a) => a)) throw new Error('dkg aborted');
  return r.outputs as KeyShare[];
}

// 2-of-3 → 3-of-4: old parties 0 and 2 deal (2 stays as new id 1), three new parties
const seats = [{ old: 0 }, { old: 2, newId: 1n }, { newId: 2n }, { newId: 3n }, { newId: 4n }];

function reshareParties(old: KeyShare[], seed: string) {
  const first = old[0] as KeyShare;
  const parties = seats.map((s) => ({
    ...(s.old !== undefined ? { oldIdentifier: (old[s.old] as KeyShare).identifier } : {}),
    ...(s.newId !== undefined ? { newIdentifier: s.newId } : {}),
  }));
  return seats.map(
    (s, k) =>
      new Party(
        reshareProtocol({
          suite: first.suite,
          ...(s.old !== undefined ? { keyShare: old[s.old] as KeyShare } : {}),
          parties,
          newThreshold: 3,
          expectedPublicKey: first.groupPublicKey,
          expectedChainCode: first.chainCode,
          context: new Uint8Array(32).fill(1),
        }),
        { self: k, n: seats.length, sessionId: sid(`reshare:${seed}`), rng: seededRandom(`${seed}:r${k}`) },
      ),
  );
}

describe('FROST reshare round messages over the wire (typed protobuf)', () => {
  it.each(['ed25519', 'secp256k1', 'secp256k1-tr'] as SuiteName[])(
    '%s: every round part has its own type and round-trips exactly',
    (suite) => {
      const schema = PROTOCOL_SCHEMAS.find((p) => p.protocol === TAG);
      expect(schema).toBeDefined();
      const echoRound = schema?.rounds.length as number;
      const used = new Set<string>();
      const intercept = (d: Delivery): Delivery[] => {
        const { round, kind, body } = d.message;
        const type = roundType(TAG, round, kind, echoRound);
        const name = type.fullName.replace(/^\./, '');
        expect(name).not.toBe('custodian.v1.Value');
        const decoded = bytesToCanonical(type, canonicalToBytes(type, body));
        if (!decoded.ok) throw new Error(`${round} ${kind}: ${decoded.rejection.reason}`);
        expect(equalBytes(canonicalEncode(decoded.value), canonicalEncode(body as Canonical))).toBe(true);
        used.add(`${round}:${kind}:${name}`);
        return [{ ...d, message: { ...d.message, body: decoded.value } }];
      };
      const old = dkg(suite, 2, 3, `wire-reshare-${suite}`);
      const r = simulate(reshareParties(old, `wire-${suite}`), { intercept });
      expect(r.aborted.every((a) => a === undefined)).toBe(true);
      const outs = r.outputs as FrostReshareOutput[];
      expect(outs.filter((o) => o.keyShare).length).toBe(4);
      for (const o of outs) expect(o.publicPackage.vssCommitment[0]).toEqual((old[0] as KeyShare).groupPublicKey);
      expect([...used].sort()).toEqual(
        [
          '0:broadcast:custodian.v1.frost.ReshareRound0Broadcast',
          '0:p2p:custodian.v1.frost.ReshareRound0Direct',
          '1:broadcast:custodian.v1.frost.ReshareRound1Broadcast',
          '2:broadcast:custodian.v1.EchoRound',
        ].sort(),
      );
    },
  );

  it('ed25519: sealed and opened by SessionWire (signed envelopes, encrypted shares)', () => {
    const old = dkg('ed25519', 2, 3, 'wire-reshare-sealed');
    const ps = reshareParties(old, 'sealed');
    const keys = ps.map((_, k) => {
      const secretKey = new Uint8Array(32).fill(40 + k);
      return { secretKey, publicKey: ed25519.getPublicKey(secretKey) };
    });
    const ws = ps.map(
      (p, k) =>
        new SessionWire({
          sessionId: p.ctx.sessionId,
          protocol: TAG,
          rounds: 2,
          parties: keys.map((x) => x.publicKey),
          self: k,
          secretKey: (keys[k] as { secretKey: Uint8Array }).secretKey,
        }),
    );
    const queue: { to: number; bytes: Uint8Array }[] = [];
    const route = (from: number, out: readonly OutgoingMessage[]) => {
      for (const m of out) {
        const bytes = (ws[from] as SessionWire).seal(m);
        const targets = m.kind === 'p2p' ? [m.to as number] : ps.map((_, j) => j).filter((j) => j !== from);
        for (const to of targets) queue.push({ to, bytes });
      }
    };
    for (const [k, p] of ps.entries()) route(k, p.start().messages);
    while (queue.length) {
      const { to, bytes } = queue.shift() as { to: number; bytes: Uint8Array };
      const opened = (ws[to] as SessionWire).open(bytes);
      if (!opened.ok) throw new Error(opened.rejection.reason);
      const step = (ps[to] as Party<unknown, FrostReshareOutput>).receive(opened.value.message);
      if (step.rejected) throw new Error(step.rejected.reason);
      route(to, step.messages);
    }
    for (const p of ps) {
      expect(p.aborted).toBeUndefined();
      expect(p.output?.publicPackage.vssCommitment[0]).toEqual((old[0] as KeyShare).groupPublicKey);
    }
  });
});
