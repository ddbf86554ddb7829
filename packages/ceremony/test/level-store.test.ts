/** The LevelDB `CeremonyStore` (level-store/store.ts): sealed values, atomic synced batches, close, passphrase check. */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SecureStore, StoreIntegrityError } from '../src/level-store/index.js';
import { tempDir as makeTemp } from './helpers.js';

const dirs: string[] = [];
const tempDir = (label: string) => {
  const d = makeTemp(label);
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const fast = { N: 1 << 10, r: 8, p: 1 };
const secret = new TextEncoder().encode('SECRET-SHARE-BYTES-0123456789abcdef');

describe('SecureStore (LevelDB, encrypted at rest)', () => {
  it('round-trips values, writes batches atomically, keeps nothing in the clear', async () => {
    const dir = join(tempDir('store'), 'db');
    const s = await SecureStore.open(dir, 'pass', fast);
    await s.batch([
      { type: 'put', sublevel: 'shares', key: 'k1/ed25519', value: secret },
      { type: 'put', sublevel: 'shares', key: 'k1/meta', value: new TextEncoder().encode('{"keyId":"k1"}') },
      { type: 'put', sublevel: 'ceremonies', key: 'c1', value: new Uint8Array([1]) },
    ]);
    expect(await s.get('shares', 'k1/ed25519')).toEqual(secret);
    expect(await s.keys('shares', 'k1/')).toEqual(['k1/ed25519', 'k1/meta']);
    await s.batch([{ type: 'del', sublevel: 'shares', key: 'k1/ed25519' }]);
    expect(await s.get('shares', 'k1/ed25519')).toBeUndefined();
    await s.put('presignatures', 'p', secret);
    await s.close();
    for (const f of readdirSync(dir)) {
      const content = readFileSync(join(dir, f));
      expect(content.includes(Buffer.from('SECRET-SHARE-BYTES'))).toBe(false);
      expect(content.includes(Buffer.from('keyId'))).toBe(false);
    }
    const again = await SecureStore.open(dir, 'pass', fast);
    expect(await again.get('presignatures', 'p')).toEqual(secret);
    await again.close();
  });

  it('close() waits for unsynced and deferred batches (a final ceremony record is never dropped by a stop)', async () => {
    const dir = join(tempDir('store'), 'db');
    const s = await SecureStore.open(dir, 'pass', fast);
    const later = s.batchLater([{ type: 'put', sublevel: 'ceremonies', key: 'c2', value: new Uint8Array([2]) }], {
      sync: false,
    });
    const unsynced = s.batch([{ type: 'put', sublevel: 'ceremonies', key: 'c3', value: new Uint8Array([3]) }], {
      sync: false,
    });
    await s.close(); // neither was awaited
    await Promise.all([later, unsynced]);
    const again = await SecureStore.open(dir, 'pass', fast);
    expect(await again.get('ceremonies', 'c2')).toEqual(new Uint8Array([2]));
    expect(await again.get('ceremonies', 'c3')).toEqual(new Uint8Array([3]));
    await again.close();
  });

  it('refuses a wrong passphrase', async () => {
    const dir = join(tempDir('store'), 'db');
    await (await SecureStore.open(dir, 'right', fast)).close();
    await expect(SecureStore.open(dir, 'wrong', fast)).rejects.toBeInstanceOf(StoreIntegrityError);
    const ok = await SecureStore.open(dir, 'right', fast);
    await ok.close();
  });
});
