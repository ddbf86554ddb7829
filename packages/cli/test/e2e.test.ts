/**
 * End to end: the same scenario as `custodian dev --demo`, against processes this test starts and
 * stops — a coordinator (embedded PGlite), two server signers, two mobile simulators, anvil and the
 * SDK-based webhook receiver. TEST ONLY: the ECDSA aux-info uses the committed test-only safe primes
 * (packages/paillier/test/fixtures) instead of a prime search.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runDemo } from '../src/dev/demo.js';
import { type Instance, startInstance } from '../src/dev/instance.js';

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

let inst: Instance | undefined;
let dir = '';
const lines: string[] = [];

afterAll(async () => {
  await inst?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

describe('custodian dev: a whole instance from deposit to delivery', () => {
  it('bootstraps (3-of-4 master key with 2 mobile + 2 server signers) and runs the integrator demo', async () => {
    dir = await mkdtemp(join(tmpdir(), 'custodian-e2e-'));
    const fixture = JSON.parse(
      await readFile(new URL('../../paillier/test/fixtures/test-only-safe-primes.json', import.meta.url), 'utf8'),
    ) as { safePrimes1024: string[] };
    const p = fixture.safePrimes1024;
    inst = await startInstance({
      dataDir: dir,
      apiPort: await freePort(),
      anvilPort: await freePort(),
      receiverPort: 0, // bound by the receiver itself: no race with other workers for a probed port
      signerPorts: [await freePort(), await freePort()],
      ecdsaLevel: 'SECURITY_112',
      primeSeeds: [0, 1, 2, 3].map((k) => [p[2 * k] as string, p[2 * k + 1] as string]),
      verbose: process.env.E2E_VERBOSE === '1',
      say: (l) => lines.push(l),
    });
    const result = await runDemo(inst, (l) => lines.push(l));
    expect(result.recipientDelta).toBe(10n ** 17n);
    expect(result.rejectedStatus).toBe('REJECTED_BY_POLICY');
    expect(result.rejectedSubStatus).toBe('DESTINATION_NOT_WHITELISTED');
    expect(result.quorumWaitedWithApprovals).toBe(1);
    for (const t of [
      'TRANSACTION_DETECTED',
      'BALANCE_UPDATED',
      'TRANSFER_CREATED',
      'TRANSFER_UPDATED',
      'TRANSFER_DELIVERED',
    ]) {
      expect(result.events).toContain(t);
    }
  }, 600_000);
});

// print the progress lines when the test fails, to see which step broke
afterAll(() => {
  if (lines.length && process.env.E2E_VERBOSE !== '0') process.stdout.write(`${lines.join('\n')}\n`);
});
