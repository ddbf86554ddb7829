/**
 * Attack: a phone's data folder restored from a backup (or copied) brings back CGGMP21
 * presignatures it already used; signing a second message with one reveals the phone's share
 * (two σ = k·m + r·χ equations in the same k and χ). The server signer discards every stored
 * presignature at each start (generation.ts); the phone must too.
 *
 * Set-up: a real coordinator (PGlite) and an approved phone; a presignature record is written
 * into the phone's encrypted store (what a PRESIGN ceremony leaves there) before the phone starts,
 * as a restored backup would hold it. Must hold: once the phone has started, its store holds no
 * presignature, and it says how many it discarded.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SecureStore } from '@custodian/ceremony/level-store';
import { createCoordinator } from '@custodian/coordinator';
import { KeyAlgorithm } from '@custodian/wire';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, tempDir } from '../../signer/test/cluster.js';
import { MobileSigner } from '../src/device.js';
import { enrollDevice } from '../src/enroll.js';
import { PIN } from './harness.js';

const KDF = { N: 1024, r: 8, p: 1 };
process.env.CUSTODIAN_SIGNING_LOG ??= 'silent';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

describe('a phone restored from a backup', () => {
  it('discards the presignatures its store holds at start, before any ceremony', async () => {
    const dir = tempDir('phone-backup-presignatures');
    const coord = await createCoordinator({
      mode: 'development',
      dataDir: join(dir, 'coordinator'),
      logger: false,
      listen: { host: '127.0.0.1', port: await freePort() },
      signing: { enabled: true, algorithms: [KeyAlgorithm.ED25519], presignaturePool: 0 },
      webhooks: { runWorker: false },
    });
    const url = await coord.start();
    cleanups.push(() => coord.stop());
    const phoneDir = join(dir, 'phone');
    mkdirSync(phoneDir, { recursive: true });
    const { device_id } = await enrollDevice({ url, dataDir: phoneDir, pin: PIN, name: 'phone', kdf: KDF });
    await coord.db.query(`UPDATE devices SET status = 'APPROVED', decided_at = now() WHERE device_id = $1`, [
      device_id,
    ]);

    // what the restored folder holds: a presignature of a key and signing set (bytes are opaque here)
    const key = 'key-1/1-2/0123456789abcdef0123456789abcdef0123456789abcdef.0';
    let store = await SecureStore.open(join(phoneDir, 'db'), PIN, KDF);
    await store.put('presignatures', key, new TextEncoder().encode('{"format":"custodian.cggmp.presignature"}'));
    await store.close();

    const lines: Record<string, unknown>[] = [];
    const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
    const phone = await MobileSigner.start(
      {
        dataDir: phoneDir,
        pin: PIN,
        decide: async () => 'APPROVE',
        log,
        storeScrypt: KDF,
        allowUnenforcedSigning: true,
      },
      {},
    );
    await phone.ready;
    await phone.stop();

    store = await SecureStore.open(join(phoneDir, 'db'), PIN, KDF);
    cleanups.push(() => store.close());
    expect(await store.keys('presignatures')).toEqual([]);
    expect(
      lines.some((l) => /presignatures of an earlier run discarded/.test(String(l.msg)) && l.discarded === 1),
    ).toBe(true);
  }, 120_000);
});
