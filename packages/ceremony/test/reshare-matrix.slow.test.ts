/**
 * RESHARE matrix at the signers (issue #22), in process on real LevelDB stores with real protocols
 * and every key type (Ed25519, Taproot, ECDSA with new aux info): 2-of-3 → 3-of-5, committed, then
 * 3-of-5 → 2-of-3 dealt by four of the five (one old party offline). After each commit any t' of
 * the new set signs (DRILL, verified with noble), fewer are refused, the public keys never change,
 * and parties that left hold nothing of the key.
 */
import { bytesToHex } from '@custodian/crypto';
import { CeremonyKind, type CeremonyResult, Outcome, refusalOf } from '@custodian/wire';
import { afterAll, describe, expect, it } from 'vitest';
import { runCeremony, verifyTestSignature } from '../src/index.js';
import { Cluster, held, keyChange, reshareStart, runAt, type Signer, start } from './lifecycle-harness.js';

const cluster = new Cluster(true);
afterAll(() => cluster.close());

function allOk(res: readonly CeremonyResult[]): void {
  expect(
    res.map((r) => r.outcome),
    res.map((r) => `${r.error ?? ''} ${JSON.stringify(r.blame ?? [])}`).join(' | '),
  ).toEqual(res.map(() => Outcome.OK));
}

async function drill(signers: readonly Signer[], keyId: string, want: readonly string[]): Promise<void> {
  const res = await runAt(runCeremony, start(CeremonyKind.DRILL, signers, { keyId }), signers);
  allOk(res);
  expect(res[0]?.signatures).toHaveLength(3);
  for (const s of res[0]?.signatures ?? []) expect(verifyTestSignature(s)).toBe(true);
  expect(res[0]?.publicKeys?.map((k) => bytesToHex(k.publicKey))).toEqual(want);
}

describe('RESHARE matrix: 2-of-3 → 3-of-5 → 2-of-3', () => {
  it('each reshare keeps the keys; any t′ of the new set signs, fewer cannot; leavers hold nothing', async () => {
    const s = (await cluster.add(5)) as [Signer, Signer, Signer, Signer, Signer];
    const [s0, s1, s2, s3, s4] = s;
    for (const x of [s0, s1, s2]) await cluster.seedPrimes(x);
    const made = await runAt(runCeremony, start(CeremonyKind.MASTER_KEY, [s0, s1, s2], { threshold: 2 }), [s0, s1, s2]);
    allOk(made);
    const keyId = made[0]?.keyId as string;
    const want = (made[0]?.publicKeys ?? []).map((k) => bytesToHex(k.publicKey));

    // 2-of-3 → 3-of-5
    for (const x of s) await cluster.seedPrimes(x);
    const rec1 = await held(s0, keyId);
    if (!rec1) throw new Error('no key');
    const up = reshareStart(keyChange(rec1, s, 3), s, s);
    allOk(await runAt(runCeremony, up, s));
    allOk(
      await runAt(runCeremony, start(CeremonyKind.RESHARE_COMMIT, s, { keyId, reshareCeremonyId: up.ceremonyId }), s),
    );
    for (const x of s) expect((await held(x, keyId))?.threshold).toBe(3);
    await drill([s4, s2, s3], keyId, want);
    await drill([s0, s1, s4], keyId, want);
    const two = await runCeremony(s3.ctx, start(CeremonyKind.DRILL, [s3, s4], { keyId }));
    expect(refusalOf(two.refusal)).toBe('REQUEST_INVALID');

    // 3-of-5 → 2-of-3: s2 is offline (not in the session), four dealers; s1 leaves
    const rec2 = await held(s0, keyId);
    if (!rec2) throw new Error('no key');
    const newSet = [s3, s4, s0];
    for (const x of newSet) await cluster.seedPrimes(x);
    const session = [s0, s1, s3, s4];
    const down = reshareStart(keyChange(rec2, newSet, 2), session, newSet);
    allOk(await runAt(runCeremony, down, session));
    allOk(
      await runAt(
        runCeremony,
        start(CeremonyKind.RESHARE_COMMIT, session, { keyId, reshareCeremonyId: down.ceremonyId }),
        session,
      ),
    );
    for (const x of newSet) {
      const r = await held(x, keyId);
      expect(r?.threshold).toBe(2);
      expect(r?.parties).toEqual(newSet.map((y) => y.id.peerId));
      expect(r?.epoch).toBe(2);
    }
    await drill([s4, s0], keyId, want);
    await drill([s3, s4], keyId, want);
    expect(await s1.ctx.store.keys('shares', `${keyId}/`)).toEqual([]);
    // the offline old party never dealt: it has nothing pending to commit, and the new set refuses it
    const late = await runCeremony(
      s2.ctx,
      start(CeremonyKind.RESHARE_COMMIT, [s2], { keyId, reshareCeremonyId: down.ceremonyId }),
    );
    expect(refusalOf(late.refusal)).toBe('RESHARE_NOT_PENDING');
    const mixed = await runCeremony(s3.ctx, start(CeremonyKind.DRILL, [s2, s3], { keyId }));
    expect(mixed.outcome).toBe(Outcome.REFUSED);
  });
});
