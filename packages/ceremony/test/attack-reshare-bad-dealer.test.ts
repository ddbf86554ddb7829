/**
 * Attack (issue #22 "identifiable abort where a dealer misbehaves"): an old party of the key deals
 * a wrong share to the party new to the key during a RESHARE (a signer whose process was taken
 * over: its protocol messages are properly signed, only the share is wrong). The new party must
 * abort and NAME that dealer (its peer id in the result's blame, for the coordinator's FAILED
 * ceremony), nobody may keep anything, and the old set must still sign.
 *
 * Real path: in-process signers on real LevelDB stores; the dishonest dealer runs the real FROST
 * reshare protocol, with its outgoing p2p share to the new party altered before it is signed and
 * sent (a runner wrapper around its spec's first round).
 */
import { bytesToHex } from '@custodian/crypto';
import { FROST_RESHARE_TAG } from '@custodian/frost';
import { CeremonyKind, KeyAlgorithm, Outcome } from '@custodian/wire';
import { afterAll, describe, expect, it } from 'vitest';
import { type CeremonyRunner, runCeremony, type SessionParams } from '../src/index.js';
import { Cluster, held, keyChange, reshareStart, runAt, type Signer, start } from './lifecycle-harness.js';

const cluster = new Cluster(true);
afterAll(() => cluster.close());

/** A runner that alters the FROST reshare share this party deals to runtime index `victim`. */
function dishonest(runner: CeremonyRunner, victim: number): CeremonyRunner {
  return {
    run: <T>(p: SessionParams<T>) => {
      if (p.spec.name !== FROST_RESHARE_TAG) return runner.run(p);
      const spec = p.spec;
      return runner.run({
        ...p,
        spec: {
          ...spec,
          start(rc) {
            const first = spec.start(rc);
            const p2p = new Map(first.send.p2p ?? []);
            const body = p2p.get(victim) as { share: Uint8Array } | undefined;
            if (body && body.share.length === 32) {
              const share = Uint8Array.from(body.share);
              share[31] = (share[31] as number) ^ 1; // big-endian secp256k1 scalar: still in range
              p2p.set(victim, { share });
            }
            return { state: first.state, send: { ...first.send, p2p } };
          },
        },
      });
    },
    cancelGroup: (g: string, r: string) => runner.cancelGroup(g, r),
  } as unknown as CeremonyRunner;
}

describe('attack: a dealer sends the new party a bad share', () => {
  it('the new party aborts naming the dealer; nothing is kept; the old set still signs', {
    timeout: 300_000,
  }, async () => {
    const [a, b, c, d] = (await cluster.add(4)) as [Signer, Signer, Signer, Signer];
    const made = await runAt(
      runCeremony,
      start(CeremonyKind.MASTER_KEY, [a, b, c], { threshold: 2, algorithms: [KeyAlgorithm.SECP256K1_TAPROOT] }),
      [a, b, c],
    );
    expect(made.map((r) => r.outcome)).toEqual([Outcome.OK, Outcome.OK, Outcome.OK]);
    const keyId = made[0]?.keyId as string;
    const rec = await held(a, keyId);
    if (!rec) throw new Error('no key');
    const newSet = [a, b, d];
    const req = reshareStart(keyChange(rec, newSet, 2), [a, b, c, d], newSet, [], undefined, 20_000);
    const evil = { ...a.ctx, runner: dishonest(a.ctx.runner, 3) }; // d is runtime index 3
    const [, , , atD] = await Promise.all([
      runCeremony(evil, req),
      runCeremony(b.ctx, req),
      runCeremony(c.ctx, req),
      runCeremony(d.ctx, req),
    ]);
    expect(atD?.outcome).toBe(Outcome.ABORTED);
    expect(atD?.blame?.map((x) => x.peerId)).toEqual([a.id.peerId]);
    for (const s of [a, b, c, d]) expect(await s.ctx.store.keys('pending')).toEqual([]);
    expect(await d.ctx.store.keys('shares')).toEqual([]);
    // the old set signs, with the dealer's own honest runner
    const drill = await runAt(runCeremony, start(CeremonyKind.DRILL, [b, c], { keyId }), [b, c]);
    expect(drill.map((r) => r.outcome)).toEqual([Outcome.OK, Outcome.OK]);
    expect(bytesToHex(drill[0]?.publicKeys?.[0]?.publicKey as Uint8Array)).toBe(rec.keys[0]?.publicKey);
  });
});
