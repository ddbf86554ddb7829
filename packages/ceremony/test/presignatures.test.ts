import { rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  combineSignature,
  type KeyShare,
  type Presignature,
  PresignatureSpentError,
  signShare,
} from '@custodian/cggmp';
import { bytesToHex, derivedChild, deriveSecp256k1, secp256k1Group as G } from '@custodian/crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  decodePresignature,
  PreparedPresignatures,
  presignaturePuts,
  presignPrefix,
  type StoreOp,
  takePresignature,
} from '../src/index.js';
import { SecureStore } from '../src/level-store/index.js';
import { tempDir as makeTemp } from './helpers.js';
import { fixtureShares2of3, presignFixture as presign } from './in-process.js';

const shares = fixtureShares2of3;
const signers = [0, 1];

/** A valid signature of both parties' handles (party 0's from the store, party 1's as made). */
function signsValidly(p0: Presignature, p1: Presignature, digest: Uint8Array): boolean {
  const sig = combineSignature(
    p0.public,
    digest,
    new Map([
      [0, signShare(p0, digest)],
      [1, signShare(p1, digest)],
    ]),
  );
  return secp256k1.verify(sig.compact, digest, sig.publicKey, { prehash: false });
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('prepared presignatures (decoded, with R’s table, in memory)', () => {
  it('a prepared presignature is taken without a read; one not held is read from the store', async () => {
    const dir = makeTemp('prepared');
    dirs.push(dir);
    const store = await SecureStore.open(join(dir, 'db'), 'pass', { N: 1 << 10, r: 8, p: 1 });
    const [a, b] = [presign(), presign()];
    const prepared = new PreparedPresignatures(1);
    // party 0's handles, stored (exported: sealed) and then remembered, as a PRESIGN ceremony does
    const puts = presignaturePuts('key1', [
      { id: 'c1.0', presignature: a[0] },
      { id: 'c1.1', presignature: b[0] },
    ]);
    expect(a[0].spent && b[0].spent).toBe(true);
    await store.batch(puts);
    prepared.add(puts);
    expect(prepared.size).toBe(1); // limit 1: c1.0 went first, c1.1 is held

    // held: its deletion started before takePresignature returned
    let committed: StoreOp[] | undefined;
    const taken1 = await takePresignature(store, 'key1', signers, 'c1.1', prepared, (ops) => {
      committed = ops;
      return store.batch(ops);
    });
    expect(committed).toEqual([
      { type: 'del', sublevel: 'presignatures', key: `${presignPrefix('key1', signers)}c1.1` },
    ]);
    expect(taken1?.presignature.id).toBe(b[0].id);
    await taken1?.deleted;
    expect(prepared.size).toBe(0);
    // not held (evicted, its handle discarded): read and decoded from the store
    const taken0 = await takePresignature(store, 'key1', signers, 'c1.0', prepared);
    await taken0?.deleted;
    expect(taken0?.presignature.public.R).not.toBe(a[0].public.R);
    expect(taken0?.presignature.public.R.equals(a[0].public.R)).toBe(true);
    // taken means gone, from the store and from memory
    for (const id of ['c1.0', 'c1.1']) {
      expect(await takePresignature(store, 'key1', signers, id, prepared)).toBeUndefined();
      expect(await store.get('presignatures', `${presignPrefix('key1', signers)}${id}`)).toBeUndefined();
    }

    // a signature from a prepared presignature and one read from the store both verify
    expect(signsValidly(taken1?.presignature as Presignature, b[1], new Uint8Array(32).fill(3))).toBe(true);
    expect(signsValidly(taken0?.presignature as Presignature, a[1], new Uint8Array(32).fill(4))).toBe(true);
    await store.close();
  });

  it('a presignature taken while warm() has read it is not put back by warm()', async () => {
    const dir = makeTemp('warm-race');
    dirs.push(dir);
    const store = await SecureStore.open(join(dir, 'db'), 'pass', { N: 1 << 10, r: 8, p: 1 });
    const made = presign();
    await store.batch(presignaturePuts('key4', [{ id: 'c4.0', presignature: made[0] }]));
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
    expect(taken?.presignature.id).toBe(made[0].id);
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
        made.map((m, i) => ({ id: `c2.${i}`, presignature: m[0] })),
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
    await store.batch(presignaturePuts('key3', [{ id: 'c3.0', presignature: made[0] }]));
    // both start before either has read: only one may get the secret (k_i, χ_i)
    const both = await Promise.all([
      takePresignature(store, 'key3', signers, 'c3.0'),
      takePresignature(store, 'key3', signers, 'c3.0'),
    ]);
    expect(both.filter((t) => t !== undefined)).toHaveLength(1);
    await both.find((t) => t !== undefined)?.deleted;
    expect(await takePresignature(store, 'key3', signers, 'c3.0')).toBeUndefined();

    // the deletion's batch fails (e.g. the ceremony id was used): the presignature stays, unclaimed,
    // and the handle that was given out is sealed (it must not sign: the store still holds it)
    const other = presign();
    await store.batch(presignaturePuts('key3', [{ id: 'c3.1', presignature: other[0] }]));
    const failing = await takePresignature(store, 'key3', signers, 'c3.1', undefined, () =>
      Promise.reject(new Error('ceremony id already used')),
    );
    await expect(failing?.deleted).rejects.toThrow(/already used/);
    expect(failing?.presignature.spent).toBe(true);
    const again = await takePresignature(store, 'key3', signers, 'c3.1');
    expect(again?.presignature.id).toBe(other[0].id);
    await again?.deleted;
    await store.close();
  });

  it('a presignature that signed in this process cannot be taken again, even if its deletion failed', async () => {
    const dir = makeTemp('take-signed');
    dirs.push(dir);
    const store = await SecureStore.open(join(dir, 'db'), 'pass', { N: 1 << 10, r: 8, p: 1 });
    const made = presign();
    const puts = presignaturePuts('key5', [{ id: 'c5.0', presignature: made[0] }]);
    await store.batch(puts);
    // signed while its deletion was being written, and the deletion then failed (the share never left)
    let fail!: (e: Error) => void;
    const taken = await takePresignature(
      store,
      'key5',
      signers,
      'c5.0',
      undefined,
      () =>
        new Promise<void>((_, reject) => {
          fail = reject;
        }),
    );
    signShare(taken?.presignature as Presignature, new Uint8Array(32).fill(5));
    fail(new Error('disk full'));
    await expect(taken?.deleted).rejects.toThrow(/disk full/);
    expect(await store.get('presignatures', puts[0]?.key as string)).toBeDefined();
    expect(await takePresignature(store, 'key5', signers, 'c5.0')).toBeUndefined();
    expect(() => decodePresignature((puts[0] as { value: Uint8Array }).value)).toThrow(PresignatureSpentError);
    await store.close();
  });

  it('reads records of the released storage format (custodian.signer.presignature v1)', async () => {
    const made = presign();
    const o = JSON.parse(new TextDecoder().decode(made[0].export())) as Record<string, unknown>;
    expect(o.format).toBe('custodian.cggmp.presignature');
    const legacy = new TextEncoder().encode(JSON.stringify({ ...o, format: 'custodian.signer.presignature' }));
    const p = decodePresignature(legacy);
    expect(p.id).toBe(made[1].id);
    expect(signsValidly(p, made[1], new Uint8Array(32).fill(6))).toBe(true);
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
