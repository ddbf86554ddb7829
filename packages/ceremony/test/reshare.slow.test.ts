/**
 * RESHARE and RESHARE_COMMIT at the signers (issue #22), in process on real LevelDB stores with
 * real protocols: a 3-of-4 key (Ed25519, Taproot, ECDSA) has one party replaced. The new set's
 * test signatures verify under the unchanged keys; until the commit the old set signs and the new
 * party holds nothing usable; the commit (idempotent) promotes the new shares, deletes the key's
 * presignatures and the leaving party's shares; the new set then signs (DRILL), the replaced party
 * refuses. A reshare that fails midway (a party killed) keeps nothing and leaves the old set
 * signing; a retry completes.
 */
import { bytesToHex } from '@custodian/crypto';
import type { CeremonyResult } from '@custodian/wire';
import { CeremonyKind, KeyAlgorithm, Outcome, refusalOf, testSignatureDigest } from '@custodian/wire';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { afterAll, describe, expect, it } from 'vitest';
import { pendingReshares, runCeremony, verifyTestSignature } from '../src/index.js';
import { Cluster, held, keyChange, reshareStart, runAt, type Signer, start, testDevices } from './lifecycle-harness.js';

const clusters: Cluster[] = [];
afterAll(async () => {
  for (const c of clusters) await c.close();
});

/** Every result OK, else the errors. */
function allOk(res: readonly CeremonyResult[]): void {
  expect(
    res.map((r) => r.outcome),
    res.map((r) => `${r.error ?? ''} ${JSON.stringify(r.blame ?? [])}`).join(' | '),
  ).toEqual(res.map(() => Outcome.OK));
}

async function drillOk(signers: readonly Signer[], keyId: string): Promise<CeremonyResult[]> {
  const res = await runAt(runCeremony, start(CeremonyKind.DRILL, signers, { keyId }), signers);
  allOk(res);
  for (const s of res[0]?.signatures ?? []) expect(verifyTestSignature(s)).toBe(true);
  return res;
}

describe('RESHARE 3-of-4 → 3-of-4, one party replaced', () => {
  it('same public keys, pending until commit, commit idempotent, presignatures gone, new set signs, replaced party refuses', {
    timeout: 400_000,
  }, async () => {
    const cluster = new Cluster(true);
    clusters.push(cluster);
    const [a, b, c, d, e] = (await cluster.add(5)) as [Signer, Signer, Signer, Signer, Signer];
    for (const s of [a, b, c, d]) await cluster.seedPrimes(s);
    const made = await runAt(runCeremony, start(CeremonyKind.MASTER_KEY, [a, b, c, d], { threshold: 3 }), [a, b, c, d]);
    allOk(made);
    const keyId = made[0]?.keyId as string;
    const rec = await held(a, keyId);
    if (!rec) throw new Error('no key');
    // a presignature pool for the signing set {b, c, d}
    const pre = await runAt(runCeremony, start(CeremonyKind.PRESIGN, [b, c, d], { keyId, presignCount: 1 }), [b, c, d]);
    allOk(pre);
    expect((await b.ctx.store.keys('presignatures', `${keyId}/`)).length).toBeGreaterThan(0);

    // e replaces a (takes its position); new members need fresh primes for the new aux info
    for (const s of [b, c, d, e]) await cluster.seedPrimes(s);
    const devices = testDevices(2);
    const newSet = [e, b, c, d];
    const doc = keyChange(rec, newSet, 3, devices);
    const req = reshareStart(doc, [a, b, c, d, e], newSet, devices);
    const res = await runAt(runCeremony, req, [a, b, c, d, e]);
    allOk(res);
    const want = made[0]?.publicKeys?.map((k) => bytesToHex(k.publicKey));
    for (const r of res) expect(r.publicKeys?.map((k) => bytesToHex(k.publicKey))).toEqual(want);
    // the new members report verified test signatures under every key; the leaving party none
    const digest = testSignatureDigest('reshare', keyId, req.ceremonyId);
    expect(res[0]?.signatures ?? []).toEqual([]);
    for (const r of res.slice(1)) {
      expect(r.signatures).toHaveLength(3);
      for (const s of r.signatures ?? []) {
        expect(bytesToHex(s.digest)).toBe(bytesToHex(digest));
        if (s.algorithm === KeyAlgorithm.ED25519) expect(ed25519.verify(s.signature, digest, s.publicKey)).toBe(true);
        else if (s.algorithm === KeyAlgorithm.SECP256K1_TAPROOT)
          expect(schnorr.verify(s.signature, digest, s.publicKey)).toBe(true);
        else expect(secp256k1.verify(s.signature, digest, s.publicKey, { prehash: false })).toBe(true);
        if (s.algorithm !== KeyAlgorithm.SECP256K1_TAPROOT)
          expect(bytesToHex(s.publicKey)).toBe(rec.keys.find((k) => k.algorithm === s.algorithm)?.publicKey);
      }
    }
    const rid = bytesToHex(req.ceremonyId);
    for (const s of [a, b, c, d, e]) expect((await pendingReshares(s.ctx.store)).get(keyId)).toBe(rid);

    // before the commit: the old set signs, the new party holds no usable key
    await drillOk([a, b, c], keyId);
    const early = await runCeremony(e.ctx, start(CeremonyKind.DRILL, [e, b, c], { keyId }));
    expect(refusalOf(early.refusal)).toBe('KEY_UNKNOWN');
    expect((await held(b, keyId))?.epoch).toBe(0);

    // a commit of a ceremony that is not pending is refused
    const bogus = await runCeremony(
      b.ctx,
      start(CeremonyKind.RESHARE_COMMIT, [b], { keyId, reshareCeremonyId: new Uint8Array(16).fill(7) }),
    );
    expect(refusalOf(bogus.refusal)).toBe('RESHARE_NOT_PENDING');

    const all = [a, b, c, d, e];
    // the commit; again under a new id; and the first request sent again (its answers lost)
    const commit = start(CeremonyKind.RESHARE_COMMIT, all, { keyId, reshareCeremonyId: req.ceremonyId });
    allOk(await runAt(runCeremony, commit, all));
    allOk(await runAt(runCeremony, { ...commit, ceremonyId: new Uint8Array(16).fill(9) }, all));
    allOk(await runAt(runCeremony, commit, all));
    for (const s of [b, c, d, e]) {
      const r = await held(s, keyId);
      expect(r?.parties).toEqual(newSet.map((x) => x.id.peerId));
      expect(r?.threshold).toBe(3);
      expect(r?.epoch).toBe(1);
      expect(r?.approverDevices?.map((x) => x.deviceId)).toEqual(devices.map((x) => x.deviceId));
      expect(r?.keys.map((k) => k.publicKey)).toEqual(rec.keys.map((k) => k.publicKey));
      expect(await s.ctx.store.keys('presignatures', `${keyId}/`)).toEqual([]);
      expect(await s.ctx.store.keys('pending', 'p/')).toEqual([]);
    }
    // the replaced party: no share, no record, refuses
    expect(await a.ctx.store.keys('shares', `${keyId}/`)).toEqual([]);
    const gone = await runCeremony(a.ctx, start(CeremonyKind.DRILL, [a, b, c], { keyId }));
    expect(refusalOf(gone.refusal)).toBe('KEY_UNKNOWN');
    // b, c, d refuse to sign with the old party a
    const withOld = await runCeremony(b.ctx, start(CeremonyKind.DRILL, [a, b, c], { keyId }));
    expect(withOld.outcome).toBe(Outcome.REFUSED);

    // the new set signs, the same keys; also after a restart (nothing only in memory)
    const after = await drillOk([e, c, d], keyId);
    expect(after[0]?.publicKeys?.map((k) => bytesToHex(k.publicKey))).toEqual(want);
    await cluster.restart(e);
    await drillOk([b, d, e], keyId);
  });

  it('a reshare that fails midway (a party killed) keeps nothing, the old set still signs, and a retry completes', {
    timeout: 400_000,
  }, async () => {
    const cluster = new Cluster(true);
    clusters.push(cluster);
    const [a, b, c, d] = (await cluster.add(4)) as [Signer, Signer, Signer, Signer];
    for (const s of [a, b, c]) await cluster.seedPrimes(s);
    const made = await runAt(runCeremony, start(CeremonyKind.MASTER_KEY, [a, b, c], { threshold: 2 }), [a, b, c]);
    allOk(made);
    const keyId = made[0]?.keyId as string;
    const rec = await held(a, keyId);
    if (!rec) throw new Error('no key');
    for (const s of [b, c, d]) await cluster.seedPrimes(s);
    const newSet = [d, b, c];
    const doc = keyChange(rec, newSet, 2);
    // c dies as soon as it sent its first resharing message (no further message of c arrives)
    const failing = reshareStart(doc, [a, b, c, d], newSet, [], undefined, 15_000);
    let killed = false;
    cluster.net.onSend = (from) => {
      if (from === c.id.peerId && !killed) {
        killed = true;
        c.ctx.runner.cancelGroup(bytesToHex(failing.ceremonyId), 'killed');
        cluster.net.runners.delete(c.id.peerId);
      }
    };
    const failed = await runAt(runCeremony, failing, [a, b, d]);
    cluster.net.onSend = undefined;
    for (const r of failed) expect(r.outcome).not.toBe(Outcome.OK);
    for (const s of [a, b, c, d]) expect(await s.ctx.store.keys('pending')).toEqual([]);
    expect(await d.ctx.store.keys('shares')).toEqual([]);

    // c restarts; the old set signs
    await cluster.restart(c);
    await drillOk([a, b, c].slice(0, 2), keyId);
    await drillOk([b, c], keyId);

    // the retry (new ceremony id, primes refilled) completes and commits
    for (const s of [b, c, d]) await cluster.seedPrimes(s);
    const retry = reshareStart(doc, [a, b, c, d], newSet);
    allOk(await runAt(runCeremony, retry, [a, b, c, d]));
    const commit = start(CeremonyKind.RESHARE_COMMIT, [a, b, c, d], { keyId, reshareCeremonyId: retry.ceremonyId });
    allOk(await runAt(runCeremony, commit, [a, b, c, d]));
    await drillOk([d, c], keyId);
    expect(refusalOf((await runCeremony(a.ctx, start(CeremonyKind.DRILL, [a, b], { keyId }))).refusal)).toBe(
      'KEY_UNKNOWN',
    );
  });
});
