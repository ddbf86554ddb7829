/**
 * Issue #27 item 1, the whole local instance (`custodian dev`, as in e2e.test.ts): the coordinator
 * process is killed (SIGKILL) after the demo. Must hold: the supervisor logs the death and
 * restarts it; the phones and the coordinator's links to the signers come back by themselves; a
 * transfer that needs both phones' approvals and a threshold signature then goes through (SENT).
 * TEST ONLY: the committed test-only safe primes stand in for a prime search.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runDemo } from '../src/dev/demo.js';
import { call, waitFor } from '../src/dev/http.js';
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

afterAll(() => {
  if (lines.length && process.env.E2E_VERBOSE !== '0') process.stdout.write(`${lines.join('\n')}\n`);
});

describe('custodian dev restarts a dead coordinator and everything reconnects', () => {
  it('after kill -9 of the coordinator, a transfer approved by both phones is signed and sent', async () => {
    dir = await mkdtemp(join(tmpdir(), 'custodian-dev-restart-'));
    const p = (
      JSON.parse(
        await readFile(new URL('../../paillier/test/fixtures/test-only-safe-primes.json', import.meta.url), 'utf8'),
      ) as { safePrimes1024: string[] }
    ).safePrimes1024;
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
    const demo = await runDemo(inst, (l) => lines.push(l));

    const coordinator = inst.supervisor.find('coordinator');
    if (!coordinator) throw new Error('no coordinator process');
    const before = coordinator.child.pid;
    coordinator.child.kill('SIGKILL');
    const log = () => lines.join('\n');
    await waitFor('the restart', async () => (/coordinator.*ready again/.test(log()) ? true : undefined), 120_000);
    expect(coordinator.child.pid).not.toBe(before);
    expect(log()).toMatch(/coordinator.*exited unexpectedly \(signal SIGKILL\); restarting in \d+ ms \(attempt 1\)/);

    const { state, baseUrl } = inst;
    const api = `${baseUrl}/api/v1/profiles/${state.profile_id}`;
    const key = { 'x-api-key': state.api_key as string };
    // above the quorum threshold: both phones must have reconnected to approve it
    const created = await call<{ transfer_id: string }>('POST', `${api}/transfers`, {
      headers: { ...key, 'idempotency-key': randomUUID() },
      body: {
        wallet_id: demo.walletId,
        destination_address: state.whitelisted,
        asset_id: state.eth_asset_id,
        amount: '0.6',
        external_id: 'after-coordinator-restart',
      },
    });
    const done = await waitFor(
      'the transfer after the restart',
      async () => {
        const t = (
          await call<{ status: string }>('GET', `${api}/transfers/${created.body.transfer_id}`, { headers: key })
        ).body;
        return ['SENT', 'REJECTED', 'REJECTED_BY_POLICY', 'EXPIRED', 'FAILED'].includes(t.status) ? t : undefined;
      },
      240_000,
      1_000,
    );
    expect(done.status).toBe('SENT');
  }, 900_000);
});
