/**
 * Proactive refresh (zero-constant re-sharing). No public vectors exist: the deterministic runs
 * below (seededRandom) are committed as `fixtures/refresh-vectors.json` and checked here.
 * Regenerate (only when the format changes on purpose): `UPDATE_FIXTURES=1 npx vitest run
 * --project unit packages/frost/test/refresh.test.ts`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { reconstructSecretForTest } from '@custodian/crypto/testing';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr, secp256k1_FROST } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import { decodeKeyShare, encodeKeyShare, getSuite, type KeyShare, type SuiteName } from '../src/index.js';
import { dkgShares, runRefresh, runSign, signOk } from './helpers.js';

const fixtureUrl = new URL('fixtures/refresh-vectors.json', import.meta.url);
const td = new TextDecoder();
const te = new TextEncoder();

interface Case {
  suite: SuiteName;
  threshold: number;
  n: number;
  seed: string;
  before: unknown[];
  after: unknown[];
}

const configs: [SuiteName, number, number][] = [
  ['ed25519', 2, 3],
  ['secp256k1', 2, 3],
  ['secp256k1-tr', 3, 5],
];

function refresh(before: KeyShare[], seed: string): KeyShare[] {
  const r = runRefresh(before, seed);
  expect(r.aborted.every((a) => a === undefined)).toBe(true);
  return r.outputs as KeyShare[];
}

function generate(): { description: string; cases: Case[] } {
  return {
    description:
      'FROST refresh vectors (custodian): key shares before (from a seeded DKG) and after one zero-constant re-sharing run with session "session:refresh:<seed>" and party i using seededRandom("<seed>:r<i>"). Key shares in format custodian.frost.keyshare v1.',
    cases: configs.map(([suite, t, n]) => {
      const seed = `refresh-vector:${suite}:${t}of${n}`;
      const before = dkgShares(suite, t, n, seed);
      const after = refresh(before, seed);
      const enc = (s: KeyShare) => JSON.parse(td.decode(encodeKeyShare(s)));
      return { suite, threshold: t, n, seed, before: before.map(enc), after: after.map(enc) };
    }),
  };
}

if (process.env.UPDATE_FIXTURES === '1') writeFileSync(fixtureUrl, `${JSON.stringify(generate(), null, 1)}\n`);
const fixture = JSON.parse(readFileSync(fixtureUrl, 'utf8')) as { cases: Case[] };

function verify(suite: SuiteName, sig: Uint8Array, m: Uint8Array, pk: Uint8Array): boolean {
  if (suite === 'ed25519') return ed25519.verify(sig, m, pk);
  if (suite === 'secp256k1-tr') return schnorr.verify(sig, m, pk);
  return secp256k1_FROST.verify(sig, m, pk);
}

describe.each(fixture.cases.map((c) => [c.suite, c] as const))('refresh vectors %s', (_name, c) => {
  const load = (o: unknown) => decodeKeyShare(te.encode(JSON.stringify(o)));
  const before = c.before.map(load);
  const after = c.after.map(load);

  it('reproduces the committed vector', () => {
    const ours = refresh(before, c.seed);
    expect(ours.map((s) => JSON.parse(td.decode(encodeKeyShare(s))))).toEqual(c.after);
  });

  it('same group key and chain code, every share and verifying share changed, epoch + 1', () => {
    const G = getSuite(c.suite).group;
    after.forEach((s, i) => {
      const old = before[i] as KeyShare;
      expect(s.groupPublicKey).toEqual(old.groupPublicKey);
      expect(s.chainCode).toEqual(old.chainCode);
      expect(s.signingShare).not.toBe(old.signingShare);
      for (const [j, y] of s.verifyingShares.entries()) expect(y).not.toEqual(old.verifyingShares[j]);
      expect(s.epoch).toBe(old.epoch + 1);
    });
    const ids = after.slice(0, c.threshold).map((s) => s.identifier);
    const x0 = reconstructSecretForTest(
      G,
      ids,
      before.slice(0, c.threshold).map((s) => s.signingShare),
    );
    const x1 = reconstructSecretForTest(
      G,
      ids,
      after.slice(0, c.threshold).map((s) => s.signingShare),
    );
    expect(x1).toBe(x0);
  });

  it('refreshed shares sign; a signer still holding its old share is named', () => {
    const m = te.encode('after refresh');
    const signers = Array.from({ length: c.threshold }, (_, k) => k);
    const out = signOk(runSign(after, signers, m, `refreshed:${c.suite}`, { derivationPath: 'm/1/2' }));
    expect(verify(c.suite, out.signature, m, out.verifyingKey)).toBe(true);
    // party 0 still uses its pre-refresh share (with the new public package of the others)
    const mixed = after.map((s, i) =>
      i === 0 ? { ...(before[0] as KeyShare), verifyingShares: s.verifyingShares, vssCommitment: s.vssCommitment } : s,
    );
    const r = runSign(mixed, signers, m, `mixed:${c.suite}`);
    expect(r.aborted[1]?.culprits.map((x) => x.party)).toEqual([0]);
  });
});
