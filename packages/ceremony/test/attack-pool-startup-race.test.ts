/**
 * Attack (issue #20 item 6): the presignature pool's start-up race. A control request takes a
 * pooled presignature before the background pre-loading (`PreparedPresignatures.warm`) has started;
 * while its deletion is still being written, the pre-loading reads the store, finds it and puts it
 * back into memory, and a second request for the same id is handed the same presignature: two
 * signature shares with one nonce share k_i. Must hold: a taken presignature never comes back.
 * The interleaving is forced with a deletion write that the test releases.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Presignature } from '@custodian/cggmp';
import { afterAll, describe, expect, it } from 'vitest';
import { PreparedPresignatures, presignaturePuts, takePresignature } from '../src/index.js';
import { SecureStore } from '../src/level-store/index.js';
import { tempDir as makeTemp } from './helpers.js';
import { presignFixture as presign } from './in-process.js';

const signers = [0, 1];

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('attack: presignature pool start-up race', () => {
  it('a presignature taken before the pre-loading starts is never handed out again', async () => {
    const dir = makeTemp('startup-race');
    dirs.push(dir);
    const store = await SecureStore.open(join(dir, 'db'), 'pass', { N: 1 << 10, r: 8, p: 1 });
    const made = presign();
    await store.batch(presignaturePuts('key', [{ id: 'c0.0', presignature: made[0] as Presignature }]));
    const prepared = new PreparedPresignatures(8); // a node just started: nothing pre-loaded yet

    // request 1 takes c0.0; its deletion is written only when the test says so
    let writeDeletion!: () => void;
    const paused = new Promise<void>((r) => {
      writeDeletion = r;
    });
    const first = await takePresignature(store, 'key', signers, 'c0.0', prepared, async (ops) => {
      await paused;
      await store.batch(ops);
    });
    expect(first !== undefined, 'request 1 gets the presignature').toBe(true);

    // the pre-loading runs now, while request 1's deletion is not written yet
    await prepared.warm(store);
    writeDeletion();
    await first?.deleted;

    // request 2 for the same id
    const second = await takePresignature(store, 'key', signers, 'c0.0', prepared);
    // (a boolean: the test output must never print a presignature's secret fields)
    expect(second === undefined, 'a taken presignature handed out a second time').toBe(true);
    await store.close();
  });

  it('a presignature taken and dropped unsigned (a refused request) before the pre-loading is not put back', async () => {
    const dir = makeTemp('startup-race-dropped');
    dirs.push(dir);
    const store = await SecureStore.open(join(dir, 'db'), 'pass', { N: 1 << 10, r: 8, p: 1 });
    const made = presign();
    await store.batch(presignaturePuts('key', [{ id: 'c1.0', presignature: made[0] as Presignature }]));
    const prepared = new PreparedPresignatures(8);
    let writeDeletion!: () => void;
    const paused = new Promise<void>((r) => {
      writeDeletion = r;
    });
    const first = await takePresignature(store, 'key', signers, 'c1.0', prepared, async (ops) => {
      await paused;
      await store.batch(ops);
    });
    expect(first !== undefined, 'request 1 gets the presignature').toBe(true);
    // request 1 is refused after the take and drops the handle without signing (as a collected
    // handle is: the package's registry then no longer knows it): only the pool's tombstone is left
    first?.presignature.discard();
    expect(await prepared.warm(store), 'presignatures put back by the pre-loading').toBe(0);
    writeDeletion();
    await first?.deleted;
    const second = await takePresignature(store, 'key', signers, 'c1.0', prepared);
    expect(second === undefined, 'a taken presignature handed out a second time').toBe(true);
    await store.close();
  });
});
