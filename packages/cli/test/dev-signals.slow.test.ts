/**
 * Issue #29 (process lifecycle): `custodian dev` (the built binary, a real child process) on a
 * bootstrapped data folder — coordinator, two server signers, two phones, anvil, webhook receiver
 * — stops on SIGTERM, and on SIGHUP (its terminal closed; before the review fix SIGHUP ended it
 * without a drain and left every process running): one line naming the signal, every process it started stopped (none of them,
 * nor anything they started, is left running), exit code 0. The folder is bootstrapped first by
 * `startInstance` with the committed TEST-ONLY safe primes (no prime search), then `custodian dev`
 * reuses it, as a second `custodian dev` start does.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { killTrees, spawnTracked, type TrackedChild } from '../../../test/helpers/processes.js';
import { markedProcesses, RUN_MARKER_ENV } from '../../../test/process-guard.js';
import { type Instance, startInstance } from '../src/dev/instance.js';

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
  });
}

const dirs: string[] = [];
let inst: Instance | undefined;
const children: TrackedChild[] = [];

afterAll(async () => {
  await inst?.stop();
  await killTrees(children);
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
}, 60_000);

describe('custodian dev: SIGTERM, SIGHUP', () => {
  it.each(['SIGTERM', 'SIGHUP'] as const)(
    '%s stops every process it started and exits 0',
    async (sig) => {
      const dir = await mkdtemp(join(tmpdir(), 'custodian-dev-signals-'));
      dirs.push(dir);
      const fixture = JSON.parse(
        await readFile(new URL('../../paillier/test/fixtures/test-only-safe-primes.json', import.meta.url), 'utf8'),
      ) as { safePrimes1024: string[] };
      const p = fixture.safePrimes1024;
      const ports = {
        api: await freePort(),
        anvil: await freePort(),
        receiver: await freePort(),
        signers: [await freePort(), await freePort()] as [number, number],
      };
      inst = await startInstance({
        dataDir: dir,
        apiPort: ports.api,
        anvilPort: ports.anvil,
        receiverPort: ports.receiver,
        signerPorts: ports.signers,
        ecdsaLevel: 'SECURITY_112',
        primeSeeds: [0, 1, 2, 3].map((k) => [p[2 * k] as string, p[2 * k + 1] as string]),
        verbose: false,
        say: () => undefined,
      });
      await inst.stop();
      inst = undefined;

      // a marker of its own: every process `custodian dev` starts inherits it
      const marker = randomUUID();
      const dev = spawnTracked(
        process.execPath,
        [
          BIN,
          'dev',
          '--data-dir',
          dir,
          '--port',
          String(ports.api),
          '--anvil-port',
          String(ports.anvil),
          '--receiver-port',
          String(ports.receiver),
          '--signer-ports',
          ports.signers.join(','),
          '--quiet',
        ],
        { env: { ...process.env, [RUN_MARKER_ENV]: marker } },
      );
      children.push(dev);
      await dev.waitFor(/Custodian is running\./, 300_000);
      // coordinator, 2 signers, 2 phones, anvil (launcher + binary) besides `custodian dev` itself
      expect(markedProcesses(marker).length).toBeGreaterThanOrEqual(7);

      dev.child.kill(sig);
      const { code } = await dev.exited;
      expect(dev.output()).toContain(`custodian dev stopping (${sig})`);
      expect(dev.output()).toMatch(/custodian dev stopped/);
      expect(code).toBe(0);
      expect(markedProcesses(marker)).toEqual([]);
    },
    900_000,
  );
});
