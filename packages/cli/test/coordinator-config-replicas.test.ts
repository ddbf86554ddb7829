/**
 * Issue #25: the coordinator config key `replicas` ({heartbeatMs, ttlMs, leaseMs, busPollMs},
 * positive integers) is checked by the schema (an unknown key, zero, a fraction: refused, naming
 * the key) and read into CoordinatorOptions.replicas.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { coordinatorOptionsFromFlags } from '../src/coordinator.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function optionsOf(config: unknown) {
  const dir = await mkdtemp(join(tmpdir(), 'custodian-replicas-config-'));
  dirs.push(dir);
  const file = join(dir, 'coordinator.json');
  await writeFile(file, JSON.stringify(config));
  return coordinatorOptionsFromFlags(
    {
      dataDir: dir,
      host: '127.0.0.1',
      port: '0',
      mode: 'development',
      config: file,
      chain: [],
      trustedAdminKey: [],
      signing: true,
    },
    {},
  );
}

describe('config key replicas', () => {
  it('is read into CoordinatorOptions.replicas', async () => {
    const replicas = { heartbeatMs: 500, ttlMs: 3000, leaseMs: 4000, busPollMs: 250 };
    expect((await optionsOf({ replicas })).replicas).toEqual(replicas);
    expect((await optionsOf({ replicas: { ttlMs: 3000 } })).replicas).toEqual({ ttlMs: 3000 });
    expect((await optionsOf({})).replicas).toBeUndefined();
  });

  it.each([
    [{ heartbeatMs: 0 }, 'heartbeatMs'],
    [{ ttlMs: 1.5 }, 'ttlMs'],
    [{ leaseMs: '1000' }, 'leaseMs'],
    [{ busPollMS: 100 }, 'busPollMS'],
  ])('refuses %j', async (replicas, key) => {
    await expect(optionsOf({ replicas })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining(key),
    });
  });
});
