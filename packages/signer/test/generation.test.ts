/**
 * Store generations (generation.ts) on real encrypted LevelDB stores and real state files: what
 * each start decides (fresh store, normal restart, crash between the store's and the file's
 * write, older store, missing or foreign state file, unreadable file), presignatures discarded at
 * every start, and the STORE_ROLLED_BACK rule. The attack itself, through the daemon and real
 * ceremonies: attack-rollback-restore.test.ts.
 */
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rollbackRefusal } from '@custodian/ceremony';
import { SecureStore } from '@custodian/ceremony/level-store';
import { afterAll, describe, expect, it } from 'vitest';
import {
  GenerationFileError,
  readGenerationFile,
  startGeneration,
  stopGeneration,
  storeGeneration,
  writeGenerationFile,
} from '../src/index.js';
import { tempDir as makeTemp } from './cluster.js';

const fast = { N: 1 << 10, r: 8, p: 1 };
const dirs: string[] = [];
const open: SecureStore[] = [];
afterAll(async () => {
  for (const s of open) await s.close().catch(() => undefined);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function setup(label: string) {
  const dir = makeTemp(label);
  dirs.push(dir);
  const db = join(dir, 'data', 'db');
  const file = join(dir, 'data.generation.json');
  const reopen = async (path = db) => {
    const s = await SecureStore.open(path, 'pass', fast);
    open.push(s);
    return s;
  };
  return { dir, db, file, reopen, store: await reopen() };
}

const put = (key: string) => ({
  type: 'put' as const,
  sublevel: 'presignatures' as const,
  key,
  value: new Uint8Array([1]),
});

describe('store generations', () => {
  it('a fresh store starts at 1 with no rollback; each start and clean stop moves store and file on together', async () => {
    const { store, file } = await setup('gen-fresh');
    const first = await startGeneration(store, file);
    expect(first).toMatchObject({ generation: 1, detectedNow: false, discardedPresignatures: 0 });
    expect(first.rollback).toBeUndefined();
    expect(await readGenerationFile(file)).toMatchObject({ generation: 1, store: store.id });
    expect(await stopGeneration(store, file)).toBe(2);
    const second = await startGeneration(store, file);
    expect(second).toMatchObject({ generation: 3, detectedNow: false });
    expect(await storeGeneration(store)).toBe(3);
    expect(readFileSync(file, 'utf8')).not.toContain('pass');
  });

  it('presignatures of an earlier lifetime are deleted at every start, in the generation batch', async () => {
    const { store, file } = await setup('gen-presig');
    await startGeneration(store, file);
    await store.batch([put('k/0-1/a.0'), put('k/0-1/a.1'), put('other/1-2/b.0')]);
    const next = await startGeneration(store, file);
    expect(next.discardedPresignatures).toBe(3);
    expect(await store.keys('presignatures')).toEqual([]);
  });

  it('a crash between the store write and the file write leaves the store ahead: not a rollback', async () => {
    const { store, file } = await setup('gen-crash');
    await startGeneration(store, file);
    const before = readFileSync(file, 'utf8');
    await startGeneration(store, file);
    writeFileSync(file, before); // the file write of the second start never happened
    const after = await startGeneration(store, file);
    expect(after.detectedNow).toBe(false);
    expect(after.generation).toBe(3);
  });

  it('an older store is a rollback; it is recorded in the store and kept by later starts', async () => {
    const { dir, db, store, file, reopen } = await setup('gen-older');
    await startGeneration(store, file);
    await store.close();
    cpSync(db, join(dir, 'copy'), { recursive: true });
    const again = await reopen();
    await startGeneration(again, file);
    await again.close();
    rmSync(db, { recursive: true });
    cpSync(join(dir, 'copy'), db, { recursive: true });
    const restored = await reopen();
    const now = new Date('2026-05-06T07:08:09.000Z');
    const detected = await startGeneration(restored, file, { now });
    expect(detected).toMatchObject({
      detectedNow: true,
      generation: 3,
      rollback: { detectedAt: now.toISOString(), storeGeneration: 1, fileGeneration: 2, reason: 'older-generation' },
    });
    const later = await startGeneration(restored, file);
    expect(later.detectedNow).toBe(false);
    expect(later.rollback?.detectedAt).toBe(now.toISOString());
  });

  it('a missing state file, or one of another store, is a rollback once the store has started before', async () => {
    const { store, file } = await setup('gen-missing');
    const other = await setup('gen-other');
    // a fresh store adopts a foreign or missing file
    await startGeneration(other.store, file);
    expect((await startGeneration(store, file)).detectedNow).toBe(false);
    rmSync(file);
    expect((await startGeneration(store, file)).rollback?.reason).toBe('state-file-missing');
    await writeGenerationFile(file, { store: other.store.id, generation: 9 });
    expect((await startGeneration(store, file)).rollback?.reason).toBe('other-store');
  });

  it('an unreadable state file stops the start before anything is written', async () => {
    const { store, file } = await setup('gen-bad');
    await startGeneration(store, file);
    await store.batch([put('k/0-1/a.0')]);
    writeFileSync(file, '{"format":"something else"}');
    await expect(startGeneration(store, file)).rejects.toBeInstanceOf(GenerationFileError);
    expect(await storeGeneration(store)).toBe(1);
    expect(await store.keys('presignatures')).toEqual(['k/0-1/a.0']);
  });
});

describe('STORE_ROLLED_BACK', () => {
  const rollback = {
    detectedAt: '2026-05-06T07:08:09.000Z',
    storeGeneration: 1,
    fileGeneration: 2,
    reason: 'older-generation' as const,
  };
  it('refuses intents created before the detection + 5 minutes of skew, and under a daily limit for the rest of that UTC day (signer clock)', () => {
    const at = (iso: string) => new Date(iso);
    const sameDay = at('2026-05-06T23:59:59.999Z');
    const nextDay = at('2026-05-07T00:00:00.000Z');
    expect(rollbackRefusal(undefined, { created_at: '2020-01-01T00:00:00Z' }, '1', sameDay)).toBeUndefined();
    // (a) created before the detection, or within the skew after it (a signer signs up to 5 minutes ahead)
    expect(rollbackRefusal(rollback, { created_at: '2026-05-06T07:08:08.999Z' }, null, nextDay)).toMatch(
      /^STORE_ROLLED_BACK: /,
    );
    expect(rollbackRefusal(rollback, { created_at: '2026-05-06T07:13:08.999Z' }, null, nextDay)).toMatch(
      /^STORE_ROLLED_BACK: /,
    );
    expect(rollbackRefusal(rollback, { created_at: '2026-05-06T07:13:09.000Z' }, null, sameDay)).toBeUndefined();
    // (b) under a daily limit: refused while the signer's clock is on the detection's UTC day, whatever created_at says
    expect(rollbackRefusal(rollback, { created_at: '2026-05-06T23:59:59.999Z' }, '1000', sameDay)).toMatch(
      /^STORE_ROLLED_BACK: .*2026-05-07T00:00:00.000Z/,
    );
    expect(rollbackRefusal(rollback, { created_at: '2026-05-07T00:00:00.000Z' }, '1000', sameDay)).toMatch(
      /^STORE_ROLLED_BACK: /,
    );
    expect(rollbackRefusal(rollback, { created_at: '2026-05-06T23:59:59.999Z' }, '1000', nextDay)).toBeUndefined();
    expect(rollbackRefusal(rollback, { created_at: 'yesterday' }, null, nextDay)).toMatch(/^STORE_ROLLED_BACK: /);
  });
});
