/**
 * The signer's side of the presignature reconciliation (issue #27 [faults] item 7;
 * presignatures.ts {@link heldPresignatures}, {@link deletePresignatures}) on a real encrypted
 * store with real CGGMP21 presignatures (fixture shares): the inventory lists ids (with their age
 * from the PRESIGN ceremony's record), never contents; a deletion is durable and final (the id is
 * tombstoned in memory, never taken or warmed again); an id a SIGN is taking is neither listed nor
 * deleted, and that signature completes and verifies.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { combineSignature, type Presignature, signShare } from '@custodian/cggmp';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { afterAll, describe, expect, it } from 'vitest';
import {
  deletePresignatures,
  heldPresignatures,
  PreparedPresignatures,
  presignaturePuts,
  presignPrefix,
  takePresignature,
} from '../src/index.js';
import { SecureStore } from '../src/level-store/index.js';
import { tempDir as makeTemp } from './helpers.js';
import { presignFixture as presign } from './in-process.js';

const signers = [0, 1];
const cid = (c: string) => c.repeat(24);
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function openStore(label: string): Promise<SecureStore> {
  const dir = makeTemp(label);
  dirs.push(dir);
  return SecureStore.open(join(dir, 'db'), 'pass', { N: 1 << 10, r: 8, p: 1 });
}

/** The record a PRESIGN ceremony writes with its presignatures (ceremonies.ts `record`), stored `agoMs` ago. */
async function ceremonyRecord(store: SecureStore, ceremonyHex: string, agoMs: number): Promise<void> {
  await store.put(
    'ceremonies',
    ceremonyHex,
    new TextEncoder().encode(
      JSON.stringify({ ceremonyId: ceremonyHex, kind: 4, at: new Date(Date.now() - agoMs).toISOString() }),
    ),
  );
}

describe('presignature inventory and deletion at a signer', () => {
  it('lists the ids of a key and signing set with their ages; deletes some for good', async () => {
    const store = await openStore('inventory');
    const made = [presign(), presign(), presign()];
    const puts = presignaturePuts('key1', [
      { id: `${cid('a1')}.0`, presignature: made[0][0] },
      { id: `${cid('a1')}.1`, presignature: made[1][0] },
      { id: `${cid('b2')}.0`, presignature: made[2][0] },
    ]);
    await store.batch(puts);
    await ceremonyRecord(store, cid('a1'), 20 * 60_000);
    await ceremonyRecord(store, cid('b2'), 0);
    // another key and another signing set are not listed
    await store.batch(presignaturePuts('key2', [{ id: `${cid('c3')}.0`, presignature: presign()[0] }]));
    const prepared = new PreparedPresignatures(8);
    prepared.add(puts);
    expect(prepared.size).toBe(3);

    const held = await heldPresignatures(store, 'key1', signers);
    expect(held.map((h) => h.id).sort()).toEqual([`${cid('a1')}.0`, `${cid('a1')}.1`, `${cid('b2')}.0`]);
    const age = Object.fromEntries(held.map((h) => [h.id, h.ageMs]));
    expect(age[`${cid('a1')}.0`]).toBeGreaterThanOrEqual(20 * 60_000);
    expect(age[`${cid('b2')}.0`]).toBeLessThan(20 * 60_000);
    expect(await heldPresignatures(store, 'key1', [0, 2])).toEqual([]);

    // one held, one never made: one deleted, durably, and gone from memory for good
    const r = await deletePresignatures(store, 'key1', signers, [`${cid('a1')}.1`, `${cid('ff')}.0`], prepared);
    expect(r).toEqual({ deleted: 1, inUse: [] });
    expect(prepared.size).toBe(2);
    expect(await store.get('presignatures', `${presignPrefix('key1', signers)}${cid('a1')}.1`)).toBeUndefined();
    expect(await takePresignature(store, 'key1', signers, `${cid('a1')}.1`, prepared)).toBeUndefined();
    expect(prepared.taken(`${presignPrefix('key1', signers)}${cid('a1')}.1`)).toBe(true);
    expect((await heldPresignatures(store, 'key1', signers)).map((h) => h.id).sort()).toEqual([
      `${cid('a1')}.0`,
      `${cid('b2')}.0`,
    ]);
    expect((await heldPresignatures(store, 'key2', signers)).map((h) => h.id)).toEqual([`${cid('c3')}.0`]);
    await store.close();
  });

  it('an id a SIGN is taking is not listed and not deleted, and that signature completes', async () => {
    const store = await openStore('in-use');
    const [mine, theirs] = presign();
    const id = `${cid('d4')}.0`;
    const puts = presignaturePuts('key3', [{ id, presignature: mine }]);
    await store.batch(puts);
    await ceremonyRecord(store, cid('d4'), 60 * 60_000);
    const prepared = new PreparedPresignatures(8);
    prepared.add(puts);
    // the SIGN takes it; its deletion (with the ceremony's pending record) is still being written
    let write!: () => void;
    const gate = new Promise<void>((r) => {
      write = r;
    });
    const taken = await takePresignature(store, 'key3', signers, id, prepared, async (ops) => {
      await gate;
      await store.batch(ops);
    });
    expect(taken).toBeDefined();
    // meanwhile the coordinator's reconciliation lists and deletes
    expect(await heldPresignatures(store, 'key3', signers)).toEqual([]);
    expect(await deletePresignatures(store, 'key3', signers, [id], prepared)).toEqual({ deleted: 0, inUse: [id] });
    // the SIGN goes on: its share is computed, released once its deletion is durable, and combines
    const digest = new Uint8Array(32).fill(7);
    const share = signShare(taken?.presignature as Presignature, digest);
    write();
    await taken?.deleted;
    const sig = combineSignature(
      theirs.public,
      digest,
      new Map([
        [0, share],
        [1, signShare(theirs, digest)],
      ]),
    );
    expect(secp256k1.verify(sig.compact, digest, sig.publicKey, { prehash: false })).toBe(true);
    expect(await store.get('presignatures', puts[0]?.key as string)).toBeUndefined();
    await store.close();
  });

  it('a deletion started first makes a SIGN asking for the id refuse it (never both)', async () => {
    const store = await openStore('delete-first');
    const id = `${cid('e5')}.0`;
    await store.batch(presignaturePuts('key4', [{ id, presignature: presign()[0] }]));
    const prepared = new PreparedPresignatures(8);
    const [deleted, taken] = await Promise.all([
      deletePresignatures(store, 'key4', signers, [id], prepared),
      takePresignature(store, 'key4', signers, id, prepared),
    ]);
    expect(deleted).toEqual({ deleted: 1, inUse: [] });
    expect(taken).toBeUndefined();
    expect(await prepared.warm(store)).toBe(0);
    await store.close();
  });
});
