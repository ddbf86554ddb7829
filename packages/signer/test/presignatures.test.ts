import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  combineSignature,
  type KeyShare,
  keyShareFromJson,
  Presignature,
  type PresignatureData,
  presignProtocol,
  signShare,
} from '@custodian/cggmp';
import { bytesToHex, deriveSecp256k1, secp256k1Group as G, Party, simulate, systemRandom } from '@custodian/crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  decodePresignature,
  derivedChild,
  encodePresignature,
  PreparedPresignatures,
  presignaturePuts,
  presignPrefix,
  SecureStore,
  type StoreOp,
  takePresignature,
} from '../src/index.js';
import { tempDir as makeTemp } from './cluster.js';

const fixture = JSON.parse(
  readFileSync(new URL('../../cggmp/test/fixtures/test-only-key-shares.json', import.meta.url), 'utf8'),
) as { sets: Record<string, unknown[]> };
const shares = (fixture.sets['2of3'] as unknown[]).map((j) => keyShareFromJson(j)) as KeyShare[];
const signers = [0, 1];

function presign(): PresignatureData[] {
  const sessionId = systemRandom(32);
  const res = simulate(
    signers.map(
      (_, j) =>
        new Party(presignProtocol({ share: shares[j] as KeyShare, signers }), {
          self: j,
          n: signers.length,
          sessionId,
          rng: systemRandom,
        }),
    ),
  );
  expect(res.aborted.every((a) => a === undefined)).toBe(true);
  return res.outputs as PresignatureData[];
}

/** Fresh point instances, as decoded from storage (no fixed-base tables). */
const fromStorage = (d: PresignatureData) => decodePresignature(encodePresignature(d));

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('prepared presignatures (decoded, with R’s table, in memory)', () => {
  it('a prepared presignature is taken without a read; one not held is read from the store', async () => {
    const dir = makeTemp('prepared');
    dirs.push(dir);
    const store = await SecureStore.open(join(dir, 'db'), 'pass', { N: 1 << 10, r: 8, p: 1 });
    const [a, b] = [presign(), presign()] as [PresignatureData[], PresignatureData[]];
    const prepared = new PreparedPresignatures(1);
    // party 0's copies, stored and then remembered, as a PRESIGN ceremony does
    const items = [
      { id: 'c1.0', data: fromStorage(a[0] as PresignatureData) },
      { id: 'c1.1', data: fromStorage(b[0] as PresignatureData) },
    ];
    await store.batch(presignaturePuts('key1', items));
    prepared.add('key1', items);
    expect(prepared.size).toBe(1); // limit 1: c1.0 went first, c1.1 is held

    // held: the very instance (with R's table), its deletion started before takePresignature returned
    let committed: StoreOp[] | undefined;
    const taken1 = await takePresignature(store, 'key1', signers, 'c1.1', prepared, (ops) => {
      committed = ops;
      return store.batch(ops);
    });
    expect(committed).toEqual([
      { type: 'del', sublevel: 'presignatures', key: `${presignPrefix('key1', signers)}c1.1` },
    ]);
    expect(taken1?.data).toBe(items[1]?.data);
    await taken1?.deleted;
    expect(prepared.size).toBe(0);
    // not held (evicted): read and decoded from the store
    const taken0 = await takePresignature(store, 'key1', signers, 'c1.0', prepared);
    await taken0?.deleted;
    expect(taken0?.data.R).not.toBe(items[0]?.data.R);
    expect(taken0?.data.R.equals(a[0]?.R as never)).toBe(true);
    expect(taken0?.data.k).toBe(a[0]?.k);
    // taken means gone, from the store and from memory
    for (const id of ['c1.0', 'c1.1']) {
      expect(await takePresignature(store, 'key1', signers, id, prepared)).toBeUndefined();
      expect(await store.get('presignatures', `${presignPrefix('key1', signers)}${id}`)).toBeUndefined();
    }

    // a signature from a prepared presignature and one from a plain decoded one both verify
    const digest = new Uint8Array(32).fill(3);
    const p0 = new Presignature(taken1?.data as PresignatureData);
    const p1 = new Presignature(fromStorage(b[1] as PresignatureData));
    const sig = combineSignature(
      p0.public,
      digest,
      new Map([
        [0, signShare(p0, digest)],
        [1, signShare(p1, digest)],
      ]),
    );
    expect(secp256k1.verify(sig.compact, digest, sig.publicKey, { prehash: false })).toBe(true);
    await store.close();
  });

  it('a presignature taken while warm() has read it is not put back by warm()', async () => {
    const dir = makeTemp('warm-race');
    dirs.push(dir);
    const store = await SecureStore.open(join(dir, 'db'), 'pass', { N: 1 << 10, r: 8, p: 1 });
    const made = presign();
    await store.batch(presignaturePuts('key4', [{ id: 'c4.0', data: made[0] as PresignatureData }]));
    const key = `${presignPrefix('key4', signers)}c4.0`;
    // warm()'s read of c4.0 returns only once the presignature has been taken (read, deleted)
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let warmRead = false;
    const get = store.get.bind(store);
    store.get = async (sublevel, k) => {
      const v = await get(sublevel, k);
      if (k === key && !warmRead) {
        warmRead = true;
        await held;
      }
      return v;
    };
    const prepared = new PreparedPresignatures(8);
    const warming = prepared.warm(store);
    while (!warmRead) await new Promise((r) => setImmediate(r));
    const taken = await takePresignature(store, 'key4', signers, 'c4.0', prepared);
    expect(taken?.data.k).toBe(made[0]?.k);
    await taken?.deleted;
    release();
    expect(await warming).toBe(0);
    expect(prepared.size).toBe(0);
    expect(await takePresignature(store, 'key4', signers, 'c4.0', prepared)).toBeUndefined();
    await store.close();
  });

  it('warm() prepares what a restarted node finds in its store, up to the limit', async () => {
    const dir = makeTemp('warm');
    dirs.push(dir);
    const store = await SecureStore.open(join(dir, 'db'), 'pass', { N: 1 << 10, r: 8, p: 1 });
    const made = [presign(), presign(), presign()];
    await store.batch(
      presignaturePuts(
        'key2',
        made.map((m, i) => ({ id: `c2.${i}`, data: m[0] as PresignatureData })),
      ),
    );
    await store.put('presignatures', `${presignPrefix('key2', signers)}broken`, new TextEncoder().encode('{}'));
    const prepared = new PreparedPresignatures(2);
    expect(await prepared.warm(store)).toBe(2); // limit 2 (the broken one is skipped, not fatal)
    const aborted = new AbortController();
    aborted.abort();
    expect(await new PreparedPresignatures(8).warm(store, undefined, aborted.signal)).toBe(0);
    await store.close();
  });

  it('a presignature asked for by two requests at once goes to one of them; a failed deletion keeps it', async () => {
    const dir = makeTemp('take-race');
    dirs.push(dir);
    const store = await SecureStore.open(join(dir, 'db'), 'pass', { N: 1 << 10, r: 8, p: 1 });
    const made = presign();
    await store.batch(presignaturePuts('key3', [{ id: 'c3.0', data: made[0] as PresignatureData }]));
    // both start before either has read: only one may get the secret (k_i, χ_i)
    const both = await Promise.all([
      takePresignature(store, 'key3', signers, 'c3.0'),
      takePresignature(store, 'key3', signers, 'c3.0'),
    ]);
    expect(both.filter((t) => t !== undefined)).toHaveLength(1);
    await both.find((t) => t !== undefined)?.deleted;
    expect(await takePresignature(store, 'key3', signers, 'c3.0')).toBeUndefined();

    // the deletion's batch fails (e.g. the ceremony id was used): the presignature stays, unclaimed
    await store.batch(presignaturePuts('key3', [{ id: 'c3.1', data: made[0] as PresignatureData }]));
    const failing = await takePresignature(store, 'key3', signers, 'c3.1', undefined, () =>
      Promise.reject(new Error('ceremony id already used')),
    );
    await expect(failing?.deleted).rejects.toThrow(/already used/);
    const again = await takePresignature(store, 'key3', signers, 'c3.1');
    expect(again?.data.k).toBe(made[0]?.k);
    await again?.deleted;
    await store.close();
  });
});

describe('derivation memo', () => {
  it('gives the child of deriveSecp256k1 for any path, deriving from memoised prefixes (fast-check)', () => {
    const Y = (shares[0] as KeyShare).core.publicKey;
    const cc = (shares[0] as KeyShare).core.chainCode;
    fc.assert(
      fc.property(fc.array(fc.nat(5), { minLength: 0, maxLength: 4 }), (path) => {
        const want = deriveSecp256k1(G.encodePoint(Y), cc, path);
        const got = derivedChild(Y, cc, path);
        expect(got.tweak).toBe(want.tweak);
        expect(bytesToHex(got.publicKey)).toBe(bytesToHex(want.publicKey));
        expect(bytesToHex(G.encodePoint(got.point))).toBe(bytesToHex(want.publicKey));
        expect(bytesToHex(got.chainCode)).toBe(bytesToHex(want.chainCode));
      }),
      { numRuns: 60 },
    );
  });
});
