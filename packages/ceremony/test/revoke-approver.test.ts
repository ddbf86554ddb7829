/**
 * `revokeApprover` (issue #22): the device is matched by id or by its P-256 key, dropped from every
 * key record and every pending reshare record in one batch, remembered, and never put back by a
 * later key ceremony — a RESHARE whose signed change still lists it, its commit, or a new master
 * key. Bad input is refused (REQUEST_INVALID). In-process signers on real LevelDB, FROST keys only.
 */
import { CeremonyKind, KeyAlgorithm, Outcome } from '@custodian/wire';
import { afterAll, describe, expect, it } from 'vitest';
import { listPending, revokeApprover, revokedApprovers, runCeremony, SignerError } from '../src/index.js';
import { Cluster, held, keyChange, reshareStart, runAt, type Signer, start, testDevices } from './lifecycle-harness.js';

const cluster = new Cluster(true);
afterAll(() => cluster.close());

const algorithms = [KeyAlgorithm.ED25519];

describe('revokeApprover', () => {
  it('matches by id or key, strips held and pending records, and no later ceremony re-adds the device', async () => {
    const [a, b, c] = (await cluster.add(3)) as [Signer, Signer, Signer];
    const [d1, d2] = testDevices(2) as [ReturnType<typeof testDevices>[0], ReturnType<typeof testDevices>[0]];
    const made = await runAt(
      runCeremony,
      start(CeremonyKind.MASTER_KEY, [a, b], { threshold: 2, algorithms, approverDevices: [d1, d2] }),
      [a, b],
    );
    expect(made.map((r) => r.outcome)).toEqual([Outcome.OK, Outcome.OK]);
    const keyId = made[0]?.keyId as string;
    const rec = await held(a, keyId);
    if (!rec) throw new Error('no key');

    // a reshare to {a, b, c} whose signed change lists both devices; d1 is revoked while it is pending
    const doc = keyChange(rec, [a, b, c], 2, [d1, d2]);
    const req = reshareStart(doc, [a, b, c], [a, b, c], [d1, d2]);
    const res = await runAt(runCeremony, req, [a, b, c]);
    expect(
      res.map((r) => r.outcome),
      res.map((r) => r.error).join('; '),
    ).toEqual([Outcome.OK, Outcome.OK, Outcome.OK]);
    // by key only (another id): the held record and the pending one at a; the pending one at c
    expect(await revokeApprover(a.ctx.store, 'renamed-phone', d1.publicKey, a.ctx)).toBe(2);
    expect(await revokeApprover(c.ctx.store, d1.deviceId, undefined, c.ctx)).toBe(1);
    expect(await revokeApprover(b.ctx.store, d1.deviceId, d1.publicKey, b.ctx)).toBe(2);
    for (const s of [a, b, c]) {
      const p = (await listPending(s.ctx.store))[0];
      expect(p?.record?.approverDevices?.map((d) => d.deviceId)).toEqual([d2.deviceId]);
    }
    expect((await held(a, keyId))?.approverDevices?.map((d) => d.deviceId)).toEqual([d2.deviceId]);
    expect((await revokedApprovers(a.ctx.store)).map((r) => r.deviceId)).toEqual(['renamed-phone']);

    // the commit does not bring it back
    const commit = start(CeremonyKind.RESHARE_COMMIT, [a, b, c], { keyId, reshareCeremonyId: req.ceremonyId });
    expect((await runAt(runCeremony, commit, [a, b, c])).map((r) => r.outcome)).toEqual([
      Outcome.OK,
      Outcome.OK,
      Outcome.OK,
    ]);
    for (const s of [a, b, c])
      expect((await held(s, keyId))?.approverDevices?.map((d) => d.deviceId)).toEqual([d2.deviceId]);

    // nor a later reshare whose change lists it, nor a new master key
    const rec2 = (await held(a, keyId)) as NonNullable<Awaited<ReturnType<typeof held>>>;
    const again = reshareStart(keyChange(rec2, [a, b, c], 3, [d1, d2]), [a, b, c], [a, b, c], [d1, d2]);
    expect((await runAt(runCeremony, again, [a, b, c])).map((r) => r.outcome)).toEqual([
      Outcome.OK,
      Outcome.OK,
      Outcome.OK,
    ]);
    for (const s of [a, b, c])
      expect((await listPending(s.ctx.store))[0]?.record?.approverDevices?.map((d) => d.deviceId)).toEqual([
        d2.deviceId,
      ]);
    const fresh = await runAt(
      runCeremony,
      start(CeremonyKind.MASTER_KEY, [a, c], { threshold: 2, algorithms, approverDevices: [d1, d2] }),
      [a, c],
    );
    expect((await held(a, fresh[0]?.keyId as string))?.approverDevices?.map((d) => d.deviceId)).toEqual([d2.deviceId]);

    // bad input
    await expect(revokeApprover(a.ctx.store, '')).rejects.toBeInstanceOf(SignerError);
    await expect(revokeApprover(a.ctx.store, 'x', new Uint8Array(32))).rejects.toThrow(/33-byte/);
  });
});
