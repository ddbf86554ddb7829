/**
 * A party killed at each round of a RESHARE (issue #22 "kill -9 of any party at each round of a
 * reshare: the old set still signs; a retry completes"), in process on real LevelDB stores: the
 * victim — the party new to the key, or a dealer leaving the key — stops the moment it hands its
 * first message of a given protocol round to the transport (no further message of it arrives, its
 * store is closed and reopened as after a crash). Each time: no party keeps new shares (a leaving
 * dealer that finished its part may keep only a pending `leave` entry, which no commit follows),
 * the old set signs, and at the end a retry completes and commits.
 */
import { bytesToHex } from '@custodian/crypto';
import { CeremonyKind, KeyAlgorithm, messageType, Outcome } from '@custodian/wire';
import { afterAll, describe, expect, it } from 'vitest';
import { listPending, runCeremony } from '../src/index.js';
import { Cluster, held, keyChange, reshareStart, runAt, type Signer, start } from './lifecycle-harness.js';

const SignedEnvelope = messageType('custodian.v1.SignedEnvelope');
const Envelope = messageType('custodian.v1.Envelope');
function roundOf(bytes: Uint8Array): string {
  const outer = SignedEnvelope.decode(bytes) as unknown as { envelope: Uint8Array };
  const env = Envelope.decode(outer.envelope) as unknown as { protocol: string; round: number };
  return `${env.protocol}#${env.round}`;
}

const cluster = new Cluster(true);
afterAll(() => cluster.close());

describe('RESHARE with a party killed at each round', () => {
  it('old set signs after every failure; a retry completes', { timeout: 1_200_000 }, async () => {
    const [a, b, c, d] = (await cluster.add(4)) as [Signer, Signer, Signer, Signer];
    const algorithms = [KeyAlgorithm.ED25519, KeyAlgorithm.SECP256K1_TAPROOT];
    const made = await runAt(runCeremony, start(CeremonyKind.MASTER_KEY, [a, b, c], { threshold: 2, algorithms }), [
      a,
      b,
      c,
    ]);
    expect(made.map((r) => r.outcome)).toEqual([Outcome.OK, Outcome.OK, Outcome.OK]);
    const keyId = made[0]?.keyId as string;
    const rec = await held(a, keyId);
    if (!rec) throw new Error('no key');
    const newSet = [d, b, c]; // d replaces a
    const doc = keyChange(rec, newSet, 2);
    const session = [a, b, c, d];
    // a party new to the key first sends in the confirm round; a dealer leaving the key sends no confirmation
    const points: { victim: Signer; at: string }[] = [
      { victim: d, at: 'custodian.ceremony.reshare-roles#0' },
      { victim: d, at: 'custodian.frost.reshare#1' },
      { victim: d, at: 'custodian.frost.reshare#2' },
      { victim: d, at: 'custodian.frost.sign#0' },
      { victim: a, at: 'custodian.ceremony.reshare-roles#0' },
      { victim: a, at: 'custodian.frost.reshare#0' },
      { victim: a, at: 'custodian.frost.reshare#2' },
    ];
    for (const { victim, at } of points) {
      const req = reshareStart(doc, session, newSet, [], undefined, 8_000);
      let killed = false;
      cluster.net.onSend = (from, _to, bytes) => {
        if (killed || from !== victim.id.peerId || roundOf(bytes) !== at) return;
        killed = true;
        cluster.net.runners.delete(victim.id.peerId);
        victim.ctx.runner.cancelGroup(bytesToHex(req.ceremonyId), 'killed');
      };
      const res = await runAt(runCeremony, req, session);
      cluster.net.onSend = undefined;
      expect(killed, at).toBe(true);
      // nobody keeps new shares; only a leaving dealer may hold a `leave` entry
      for (const s of session) {
        const pend = await listPending(s.ctx.store);
        expect(
          pend.filter((p) => p.role === 'member'),
          `${at}`,
        ).toEqual([]);
      }
      expect(
        res.filter((_r, i) => session[i] !== a).map((r) => r.outcome),
        at,
      ).not.toContain(Outcome.OK);
      await cluster.restart(victim);
      // the old set signs
      for (const pair of [
        [a, b],
        [b, c],
      ] as const) {
        const drill = await runAt(runCeremony, start(CeremonyKind.DRILL, pair, { keyId }), pair);
        expect(
          drill.map((r) => r.outcome),
          `${at}: ${drill.map((r) => r.error).join('; ')}`,
        ).toEqual([Outcome.OK, Outcome.OK]);
      }
    }
    // the retry completes and commits; the new set signs
    const retry = reshareStart(doc, session, newSet);
    const ok = await runAt(runCeremony, retry, session);
    expect(
      ok.map((r) => r.outcome),
      ok.map((r) => r.error).join('; '),
    ).toEqual(session.map(() => Outcome.OK));
    const commit = start(CeremonyKind.RESHARE_COMMIT, session, { keyId, reshareCeremonyId: retry.ceremonyId });
    expect((await runAt(runCeremony, commit, session)).map((r) => r.outcome)).toEqual(session.map(() => Outcome.OK));
    for (const s of session) expect(await listPending(s.ctx.store)).toEqual([]);
    const drill = await runAt(runCeremony, start(CeremonyKind.DRILL, [d, c], { keyId }), [d, c]);
    expect(drill.map((r) => r.outcome)).toEqual([Outcome.OK, Outcome.OK]);
  });
});
