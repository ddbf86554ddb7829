/**
 * Attacks on the key lifecycle by a coordinator that holds signed key changes and the signers'
 * answers (review H1, H2, L8, L9), in process on real LevelDB stores with real protocols:
 * - H1: a signed key change already committed is replayed to move the key back; expired and
 *   too-long-lived changes;
 * - H2: three runs of one signed change committed at different parties (a split key), and a
 *   leaving dealer told to commit without the new parties' attestations;
 * - L8: a commit sent under the id of another ceremony;
 * - L9: presignatures that finish after a commit replaced the shares they were made with.
 * Ed25519-only keys where the attack does not need ECDSA (faster), all three where it does.
 */
import { CeremonyKind, type CeremonyResult, KeyAlgorithm, Outcome, refusalOf } from '@custodian/wire';
import { afterAll, describe, expect, it } from 'vitest';
import { listPending, runCeremony } from '../src/index.js';
import {
  attestationsOf,
  Cluster,
  held,
  keyChange,
  reshareStart,
  runAt,
  type Signer,
  start,
  testDevices,
} from './lifecycle-harness.js';

const clusters: Cluster[] = [];
afterAll(async () => {
  for (const c of clusters) await c.close();
});

function allOk(res: readonly CeremonyResult[]): void {
  expect(
    res.map((r) => r.outcome),
    res.map((r) => `${r.error ?? ''} ${JSON.stringify(r.blame ?? [])}`).join(' | '),
  ).toEqual(res.map(() => Outcome.OK));
}

/** A 2-of-3 Ed25519 key at a, b, c of a fresh cluster of four. */
async function ed25519Key(): Promise<{ s: [Signer, Signer, Signer, Signer]; keyId: string }> {
  const cluster = new Cluster(true);
  clusters.push(cluster);
  const s = (await cluster.add(4)) as [Signer, Signer, Signer, Signer];
  const [a, b, c] = s;
  const made = await runAt(
    runCeremony,
    start(CeremonyKind.MASTER_KEY, [a, b, c], { threshold: 2, algorithms: [KeyAlgorithm.ED25519] }),
    [a, b, c],
  );
  allOk(made);
  return { s, keyId: made[0]?.keyId as string };
}

const commitAt = (at: readonly Signer[], keyId: string, rid: Uint8Array, extra = {}) =>
  runAt(runCeremony, start(CeremonyKind.RESHARE_COMMIT, at, { keyId, reshareCeremonyId: rid, ...extra }), at);

async function shares(x: Signer, keyId: string): Promise<number> {
  return (await x.ctx.store.keys('shares', `${keyId}/`)).length;
}

describe('H1: a signed key change applies once, before it expires', () => {
  it('C0 then C1 committed; C0 replayed to bring c back is refused by every holder', { timeout: 300_000 }, async () => {
    const {
      s: [a, b, c, d],
      keyId,
    } = await ed25519Key();
    const devices = testDevices(2);
    // C0: {a,b,c} -> {a,b,c}, committed
    const doc0 = keyChange((await held(a, keyId))!, [a, b, c], 2, devices);
    const r0 = reshareStart(doc0, [a, b, c], [a, b, c], devices);
    allOk(await runAt(runCeremony, r0, [a, b, c]));
    allOk(await commitAt([a, b, c], keyId, r0.ceremonyId));
    // C1: c (compromised) replaced by d, committed: c holds nothing
    const doc1 = keyChange((await held(a, keyId))!, [a, b, d], 2, devices);
    const r1 = reshareStart(doc1, [a, b, c, d], [a, b, d], devices);
    allOk(await runAt(runCeremony, r1, [a, b, c, d]));
    allOk(await commitAt([a, b, c, d], keyId, r1.ceremonyId));
    expect(await shares(c, keyId)).toBe(0);
    // the replay of the same signed C0 (same signature) under a new ceremony id
    // (short deadline: c, new to the key, waits for dealers that refuse)
    const replay = start(CeremonyKind.RESHARE, [a, b, d, c], { keyId, reshare: r0.reshare }, 5_000);
    const res = await runAt(runCeremony, replay, [a, b, d, c]);
    for (const r of res.slice(0, 3)) expect(refusalOf(r.refusal)).toBe('KEY_CHANGE_NOT_AUTHORIZED');
    expect(res[3]?.outcome).not.toBe(Outcome.OK);
    for (const x of [a, b, d, c]) expect(await listPending(x.ctx.store)).toEqual([]);
    // nothing moved: a and d sign, c (the replaced party) cannot
    allOk(await runAt(runCeremony, start(CeremonyKind.DRILL, [a, d], { keyId }), [a, d]));
    expect(refusalOf((await runCeremony(c.ctx, start(CeremonyKind.DRILL, [a, c], { keyId }))).refusal)).toBe(
      'KEY_UNKNOWN',
    );
  });

  it('an expired change, and one valid for more than 24 h, are refused by every party', async () => {
    const {
      s: [a, b, c, d],
      keyId,
    } = await ed25519Key();
    const rec = (await held(a, keyId))!;
    for (const ms of [-1000, 25 * 3_600_000]) {
      const doc = keyChange(rec, [a, b, d], 2, [], ms);
      const res = await runAt(runCeremony, reshareStart(doc, [a, b, c, d], [a, b, d]), [a, b, c, d]);
      for (const r of res) expect(refusalOf(r.refusal), r.error).toBe('KEY_CHANGE_NOT_AUTHORIZED');
    }
  });
});

describe('H2: a commit needs every new party to hold its pending shares', () => {
  it('three runs of one change committed at different parties: only the newest is pending anywhere', {
    timeout: 300_000,
  }, async () => {
    const {
      s: [a, b, c, d],
      keyId,
    } = await ed25519Key();
    const doc = keyChange((await held(a, keyId))!, [a, b, d], 2);
    const runs = [];
    for (let i = 0; i < 3; i++) {
      const x = reshareStart(doc, [a, b, c, d], [a, b, d]);
      allOk(await runAt(runCeremony, x, [a, b, c, d]));
      runs.push(x);
    }
    const [r0, r1, r2] = runs as [(typeof runs)[0], (typeof runs)[0], (typeof runs)[0]];
    // the reviewer's split: a and c commit run 0, b run 1, d run 2 — each with its run's attestations
    for (const [x, r] of [
      [a, r0],
      [c, r0],
      [b, r1],
    ] as const) {
      const [out] = await commitAt([x], keyId, r.ceremonyId);
      expect(refusalOf(out?.refusal)).toBe('RESHARE_NOT_PENDING');
    }
    expect(await shares(c, keyId)).toBeGreaterThan(0);
    expect((await held(a, keyId))?.epoch).toBe(0);
    // run 2 commits everywhere, and the new set signs
    allOk(await commitAt([a, b, c, d], keyId, r2.ceremonyId));
    expect(await shares(c, keyId)).toBe(0);
    allOk(await runAt(runCeremony, start(CeremonyKind.DRILL, [b, d], { keyId }), [b, d]));
  });

  it('a leaving dealer told to commit without (or with bad) attestations keeps its share', {
    timeout: 300_000,
  }, async () => {
    const {
      s: [a, b, c, d],
      keyId,
    } = await ed25519Key();
    const doc = keyChange((await held(a, keyId))!, [a, b, d], 2);
    const req = reshareStart(doc, [a, b, c, d], [a, b, d]);
    const res = await runAt(runCeremony, req, [a, b, c, d]);
    allOk(res);
    expect(res[2]?.pendingAttestation).toBeUndefined(); // c leaves: it attests nothing
    for (const r of [res[0], res[1], res[3]]) expect(r?.pendingAttestation).toHaveLength(64);
    const good = attestationsOf(req.ceremonyId) as Uint8Array[];
    const forged = good.map((x) => Uint8Array.from(x));
    (forged[2] as Uint8Array)[0] ^= 1;
    for (const bad of [[], good.slice(0, 2), [good[1], good[0], good[2]], forged]) {
      const [out] = await commitAt([c], keyId, req.ceremonyId, { pendingAttestations: bad });
      expect(refusalOf(out?.refusal), out?.error).toBe('REQUEST_INVALID');
      expect(await shares(c, keyId)).toBeGreaterThan(0);
    }
    // with every attestation it leaves
    allOk(await commitAt([a, b, c, d], keyId, req.ceremonyId, { pendingAttestations: good }));
    expect(await shares(c, keyId)).toBe(0);
  });

  it('a commit is refused once the key record it started from changed (a refresh between)', {
    timeout: 300_000,
  }, async () => {
    const {
      s: [a, b, c, d],
      keyId,
    } = await ed25519Key();
    const req = reshareStart(keyChange((await held(a, keyId))!, [a, b, d], 2), [a, b, c, d], [a, b, d]);
    allOk(await runAt(runCeremony, req, [a, b, c, d]));
    allOk(await runAt(runCeremony, start(CeremonyKind.REFRESH, [a, b, c], { keyId }), [a, b, c]));
    const res = await commitAt([a, b, c], keyId, req.ceremonyId);
    for (const r of res) expect(refusalOf(r.refusal), r.error).toBe('RESHARE_NOT_PENDING');
    expect(await shares(c, keyId)).toBeGreaterThan(0);
  });
});

describe('L8: a commit reuses a ceremony id only for the same commit', () => {
  it('under the id of the reshare itself, or of another commit, it is refused', { timeout: 300_000 }, async () => {
    const {
      s: [a, b, c, d],
      keyId,
    } = await ed25519Key();
    const req = reshareStart(keyChange((await held(a, keyId))!, [a, b, d], 2), [a, b, c, d], [a, b, d]);
    allOk(await runAt(runCeremony, req, [a, b, c, d]));
    const list = attestationsOf(req.ceremonyId) as Uint8Array[];
    const under = {
      ...start(CeremonyKind.RESHARE_COMMIT, [c], { keyId, reshareCeremonyId: req.ceremonyId }),
      ceremonyId: req.ceremonyId,
      pendingAttestations: list,
    };
    const out = await runCeremony(c.ctx, under);
    expect(out.error).toMatch(/ceremony id already used/);
    expect(await shares(c, keyId)).toBeGreaterThan(0);
    // the same commit sent twice under one id is answered twice
    const commit = start(CeremonyKind.RESHARE_COMMIT, [a, b, c, d], {
      keyId,
      reshareCeremonyId: req.ceremonyId,
      pendingAttestations: list,
    });
    allOk(await runAt(runCeremony, commit, [a, b, c, d]));
    allOk(await runAt(runCeremony, commit, [a, b, c, d]));
  });
});

describe('L9: presignatures made with replaced shares are never stored', () => {
  it('a PRESIGN under way when the key record moves to a new epoch stores nothing at that signer', {
    timeout: 400_000,
  }, async () => {
    const cluster = new Cluster(true);
    clusters.push(cluster);
    const [a, b, c] = (await cluster.add(3)) as [Signer, Signer, Signer];
    for (const s of [a, b, c]) await cluster.seedPrimes(s);
    const made = await runAt(
      runCeremony,
      start(CeremonyKind.MASTER_KEY, [a, b, c], { threshold: 2, algorithms: [KeyAlgorithm.SECP256K1_ECDSA] }),
      [a, b, c],
    );
    allOk(made);
    const keyId = made[0]?.keyId as string;
    const rec = (await held(a, keyId))!;
    // the interleaving, made deterministic: when a sends its first presigning message, the key
    // record at a moves to epoch + 1 (what a RESHARE_COMMIT or REFRESH writes), in a real store write
    let moved: Promise<void> | undefined;
    cluster.net.onSend = (from) => {
      if (from !== a.id.peerId || moved) return;
      moved = a.ctx.store.put(
        'shares',
        `${keyId}/meta`,
        new TextEncoder().encode(JSON.stringify({ ...rec, epoch: 1 })),
      );
    };
    const res = await runAt(runCeremony, start(CeremonyKind.PRESIGN, [a, b], { keyId, presignCount: 1 }), [a, b]);
    cluster.net.onSend = undefined;
    await moved;
    expect(res[0]?.outcome).toBe(Outcome.ABORTED);
    expect(res[0]?.error).toMatch(/key changed during presigning/);
    expect(await a.ctx.store.keys('presignatures', `${keyId}/`)).toEqual([]);
    // b's record did not move: it stores its presignature (the coordinator reconciles orphans)
    expect(res[1]?.outcome).toBe(Outcome.OK);
    expect((await b.ctx.store.keys('presignatures', `${keyId}/`)).length).toBeGreaterThan(0);
  });
});
