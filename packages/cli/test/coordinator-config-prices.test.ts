/**
 * `custodian coordinator start --config`: the config file's `prices` and `webhooks.allowedTargets`
 * (#29) reach the coordinator options, and a coordinator built from them refuses a bad entry.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCoordinator } from '@custodian/coordinator';
import { afterEach, describe, expect, it } from 'vitest';
import { coordinatorOptionsFromFlags } from '../src/coordinator.js';

let dir = '';
afterEach(async () => {
  if (dir !== '') await rm(dir, { recursive: true, force: true });
  dir = '';
});

async function flagsWith(config: unknown) {
  dir = await mkdtemp(join(tmpdir(), 'custodian-cfg-'));
  const path = join(dir, 'coordinator.json');
  await writeFile(path, JSON.stringify(config));
  return {
    dataDir: join(dir, 'data'),
    host: '127.0.0.1',
    port: '0',
    mode: 'production',
    config: path,
    chain: [],
    trustedAdminKey: [],
    signing: false,
  };
}

describe('coordinator config file', () => {
  it('passes prices and webhooks.allowedTargets through', async () => {
    const prices = {
      static: { ETH: '3000.00' },
      http: { url: 'https://prices.internal/usd/{symbol}', path: 'usd', ttlMs: 60000 },
    };
    const o = await coordinatorOptionsFromFlags(
      await flagsWith({ prices, webhooks: { allowedTargets: ['10.20.0.0/16', '*.corp.internal'] } }),
    );
    expect(o.prices).toEqual(prices);
    expect(o.webhooks?.allowedTargets).toEqual(['10.20.0.0/16', '*.corp.internal']);
  });

  it('leaves both unset without them', async () => {
    const o = await coordinatorOptionsFromFlags(await flagsWith({}));
    expect(o.prices).toBeUndefined();
    expect(o.webhooks).toBeUndefined();
  });

  it('a bad allowedTargets entry stops the coordinator before it opens anything', async () => {
    const o = await coordinatorOptionsFromFlags(await flagsWith({ webhooks: { allowedTargets: ['10.0.0.1/8'] } }));
    await expect(createCoordinator({ ...o, logger: false })).rejects.toThrow(
      /webhooks\.allowedTargets\[0\]: host bits/,
    );
  });
});
