/**
 * Issue #27 item 1: a phone rides through a coordinator restart. A real coordinator (PGlite in a
 * data folder, so its libp2p identity — pinned by the phone — and its database survive the
 * restart; device hub on its real HTTP socket, on a fixed port), a device enrolled over HTTP and
 * approved, and a {@link MobileSigner} (in process) or the simulator PROCESS (`mobile run`).
 *
 * Must hold: the phone reconnects forever with a capped, jittered exponential backoff (and keeps
 * its process alive meanwhile), says so in its log, and on reconnection is sent the approval
 * requests still pending for it, which it answers; a device the administrator removed (close code
 * 4403 and `DEVICE_REVOKED`, or refused at hello with `DEVICE_REVOKED`) stops reconnecting and
 * says so.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Coordinator, createCoordinator } from '@custodian/coordinator';
import { KeyAlgorithm, type TransferIntent } from '@custodian/wire';
import { type Logger, pino } from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { signalTree } from '../../../test/helpers/processes.js';
import { freePort, tempDir, waitFor } from '../../signer/test/cluster.js';
import { EXIT_DEVICE_REVOKED } from '../src/cli.js';
import { MobileSigner } from '../src/device.js';
import { enrollDevice } from '../src/enroll.js';
import { buildAll, MOBILE_MAIN, PIN } from './harness.js';

const KDF = { N: 1024, r: 8, p: 1 };
// the coordinators' signing services log at warn to stdout by default: quiet here
process.env.CUSTODIAN_SIGNING_LOG ??= 'silent';

function intent(id: string): TransferIntent {
  return {
    transfer_id: id,
    profile_id: 'p',
    wallet_id: 'w',
    blockchain: 'test',
    asset_id: 'a',
    asset_symbol: 'TST',
    asset_decimals: 0,
    asset_contract: null,
    source_address: 's',
    destination_address: 'd',
    amount: '1',
    derivation_path: [0, 7],
    key_algorithm: 'ED25519',
    key_id: 'k',
    created_at: new Date().toISOString(),
    max_fee: '1',
  };
}

/** A coordinator in `dir` on `port` (same identity and database at every start). */
async function coordinatorAt(dir: string, port: number): Promise<Coordinator> {
  return createCoordinator({
    mode: 'development',
    dataDir: dir,
    logger: false,
    listen: { host: '127.0.0.1', port },
    signing: { enabled: true, algorithms: [KeyAlgorithm.ED25519], presignaturePool: 0 },
    webhooks: { runWorker: false },
  });
}

/** Enroll a phone in `mobileDir` against the running coordinator and approve it. */
async function enrollApproved(coord: Coordinator, url: string, mobileDir: string): Promise<string> {
  mkdirSync(mobileDir, { recursive: true });
  const r = await enrollDevice({ url, dataDir: mobileDir, pin: PIN, name: 'phone', kdf: KDF });
  await coord.db.query(`UPDATE devices SET status = 'APPROVED', decided_at = now() WHERE device_id = $1`, [
    r.device_id,
  ]);
  return r.device_id;
}

/** Pino JSON lines of a phone, kept in memory. */
function capture(): { lines: Record<string, unknown>[]; log: Logger; text(): string } {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { lines, log, text: () => lines.map((l) => String(l.msg)).join('\n') };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** A running coordinator on a fixed port (so a restart comes back at the same URL) and one approved phone enrolled in `<dir>/phone`. */
async function instanceWithPhone(name: string) {
  const dir = tempDir(name);
  const port = await freePort();
  const coord = await coordinatorAt(join(dir, 'coordinator'), port);
  const url = await coord.start();
  cleanups.push(() => coord.stop());
  const deviceId = await enrollApproved(coord, url, join(dir, 'phone'));
  return { dir, port, coord, deviceId };
}

/** The in-process phone of `instanceWithPhone`, with a reconnect backoff of `backoff` = [base, cap] ms. */
async function startPhone(
  dir: string,
  out: ReturnType<typeof capture>,
  decide: (i: TransferIntent) => Promise<'APPROVE'>,
  backoff: [number, number],
  hooks: { onRevoked?: (reason: string) => void } = {},
): Promise<MobileSigner> {
  const phone = await MobileSigner.start(
    {
      dataDir: join(dir, 'phone'),
      pin: PIN,
      decide,
      log: out.log,
      storeScrypt: KDF,
      allowUnenforcedSigning: true,
      reconnectMs: backoff[0],
      reconnectMaxMs: backoff[1],
    },
    hooks,
  );
  cleanups.push(() => phone.stop());
  return phone;
}

/** The simulator PROCESS (`mobile run --auto-approve`) of `instanceWithPhone`; killed at cleanup if still running. */
function spawnPhone(dir: string, extraArgs: string[] = []) {
  const pinFile = join(dir, 'pin');
  writeFileSync(pinFile, `${PIN}\n`, { mode: 0o600 });
  const proc: ChildProcess = spawn(
    process.execPath,
    [MOBILE_MAIN, 'mobile', 'run', '--data', join(dir, 'phone'), '--pin-file', pinFile, '--auto-approve', ...extraArgs],
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  const io = { stdout: '', stderr: '' };
  proc.stdout?.on('data', (b: Buffer) => {
    io.stdout += b.toString();
  });
  proc.stderr?.on('data', (b: Buffer) => {
    io.stderr += b.toString();
  });
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  cleanups.push(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      signalTree(proc.pid as number, 'SIGKILL');
      await exited;
    }
  });
  return { proc, io, exited };
}

describe('a phone rides through a coordinator restart', () => {
  it('reconnects with a capped, jittered backoff and answers the approval still pending for it', async () => {
    const { dir, port, deviceId, ...first } = await instanceWithPhone('mobile-reconnect');
    let coord = first.coord;
    cleanups.push(() => coord.stop());
    const out = capture();
    const decided: string[] = [];
    const phone = await startPhone(
      dir,
      out,
      async (i) => {
        decided.push(i.transfer_id);
        return 'APPROVE';
      },
      [40, 160],
    );
    await phone.ready;

    await coord.stop();
    // the coordinator is away: the phone keeps trying, each wait doubling up to the cap, with jitter
    await waitFor(() => out.lines.filter((l) => /reconnecting in/.test(String(l.msg))).length >= 6, 10_000, 'retries');
    const retries = out.lines.filter((l) => /reconnecting in/.test(String(l.msg)));
    expect(String(retries[0]?.msg)).toMatch(
      /^disconnected from the coordinator; reconnecting in \d+ ms \(attempt 1\)$/,
    );
    const delays = retries.map((l) => Number(l.delayMs));
    const attempts = retries.map((l) => Number(l.attempt));
    expect(attempts.slice(0, 6)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const d of delays) {
      expect(d).toBeGreaterThanOrEqual(20); // equal jitter: at least half the base delay
      expect(d).toBeLessThanOrEqual(160); // never above the cap
    }
    expect(delays.slice(3).every((d) => d >= 80)).toBe(true); // the base is at the cap from attempt 3 on

    // the coordinator comes back (same port, identity and database) with an approval request queued
    coord = await coordinatorAt(join(dir, 'coordinator'), port);
    const hub = coord.signing?.hub;
    if (!hub) throw new Error('no device hub');
    const approvals: { requestId: string; decision: string }[] = [];
    hub.onApproval((e) => approvals.push({ requestId: e.requestId, decision: e.approval.decision }));
    hub.notifyApprovalRequest(deviceId, intent('t-after-restart'));
    await coord.start();
    await waitFor(() => approvals.length > 0, 10_000, 'the approval after the restart');
    expect(approvals).toEqual([{ requestId: 't-after-restart', decision: 'APPROVE' }]);
    expect(decided).toEqual(['t-after-restart']);
    expect(out.text()).toMatch(/reconnected to the coordinator; resuming 1 pending approvals/);
  });

  it('an approval decided while the coordinator was away is answered again after the reconnection, not asked twice', async () => {
    const { dir, port, deviceId, ...first } = await instanceWithPhone('mobile-answer-again');
    let coord = first.coord;
    cleanups.push(() => coord.stop());
    const out = capture();
    const asked: string[] = [];
    let answer: (d: 'APPROVE') => void = () => undefined;
    const phone = await startPhone(
      dir,
      out,
      (i) => {
        asked.push(i.transfer_id);
        return new Promise((r) => {
          answer = r;
        });
      },
      [40, 160],
    );
    await phone.ready;
    const request = intent('t-decided-offline');
    coord.signing?.hub.notifyApprovalRequest(deviceId, request);
    await waitFor(() => asked.length === 1, 5_000, 'the prompt');
    await coord.stop();
    // the person approves while the coordinator is away: the answer cannot be delivered
    answer('APPROVE');
    await waitFor(() => /reconnecting in/.test(out.text()), 5_000, 'the disconnection');

    coord = await coordinatorAt(join(dir, 'coordinator'), port);
    const hub = coord.signing?.hub;
    if (!hub) throw new Error('no device hub');
    const approvals: { requestId: string; decision: string }[] = [];
    hub.onApproval((e) => approvals.push({ requestId: e.requestId, decision: e.approval.decision }));
    // still pending at the coordinator (the transfer store re-queues it after a restart)
    hub.notifyApprovalRequest(deviceId, request);
    await coord.start();
    await waitFor(() => approvals.length > 0, 10_000, 'the approval after the restart');
    expect(approvals).toEqual([{ requestId: 't-decided-offline', decision: 'APPROVE' }]);
    expect(asked).toEqual(['t-decided-offline']);
    expect(out.text()).toMatch(/approval request already answered: answer sent again/);
  });

  it('a removed device stops reconnecting and says so (4403 DEVICE_REVOKED)', async () => {
    const { dir, coord, deviceId } = await instanceWithPhone('mobile-revoked');
    const out = capture();
    const revoked: string[] = [];
    const phone = await startPhone(dir, out, async () => 'APPROVE', [20, 40], {
      onRevoked: (reason) => revoked.push(reason),
    });
    await phone.ready;
    // what the admin service does when an administrator removes the device
    await coord.db.query(`UPDATE devices SET status = 'REMOVED' WHERE device_id = $1`, [deviceId]);
    coord.signing?.hub.revokeDevice(deviceId, 'REMOVED');
    await waitFor(() => revoked.length > 0, 5_000, 'the revocation');
    expect(revoked[0]).toMatch(/REMOVED/);
    // many reconnect delays later: no attempt was made
    await new Promise((r) => setTimeout(r, 400));
    expect(out.text()).not.toMatch(/reconnecting in/);
    expect(out.text()).toMatch(/device revoked by the coordinator.*not reconnecting/);
    expect(coord.signing?.hub.online()).toEqual([]);
  });

  it('a device removed while it was offline is refused at hello with DEVICE_REVOKED and stops', async () => {
    const { dir, coord, deviceId } = await instanceWithPhone('mobile-removed-offline');
    await coord.db.query(`UPDATE devices SET status = 'REMOVED' WHERE device_id = $1`, [deviceId]);
    const out = capture();
    const revoked: string[] = [];
    await startPhone(dir, out, async () => 'APPROVE', [20, 40], { onRevoked: (reason) => revoked.push(reason) });
    await waitFor(() => revoked.length > 0, 5_000, 'the refusal');
    expect(revoked[0]).toMatch(/REMOVED/);
    await new Promise((r) => setTimeout(r, 300));
    expect(out.text()).not.toMatch(/reconnecting in/);
  });
});

describe('the phone simulator process', () => {
  beforeAll(() => buildAll(), 120_000);

  it('stays alive while the coordinator is away and reconnects when it is back', async () => {
    const { dir, port, deviceId, ...first } = await instanceWithPhone('mobile-process-reconnect');
    let coord = first.coord;
    cleanups.push(() => coord.stop());
    const { proc, io, exited } = spawnPhone(dir, ['--store-scrypt-n', '1024', '--allow-unenforced-signing']);
    const connections = () => io.stdout.split('\n').filter((l) => l.includes('"event":"connected"')).length;
    await waitFor(() => connections() === 1 || proc.exitCode !== null, 30_000, 'the first connection');
    expect(connections()).toBe(1);

    await coord.stop();
    await waitFor(() => /reconnecting in/.test(io.stderr) || proc.exitCode !== null, 10_000, 'the disconnection');
    // several reconnect delays later the process still runs (it used to exit 0 here)
    await new Promise((r) => setTimeout(r, 1500));
    expect({ exitCode: proc.exitCode, signal: proc.signalCode }).toEqual({ exitCode: null, signal: null });

    coord = await coordinatorAt(join(dir, 'coordinator'), port);
    await coord.start();
    await waitFor(() => connections() === 2 || proc.exitCode !== null, 15_000, 'the reconnection');
    expect(connections()).toBe(2);
    expect(io.stderr).toMatch(/reconnected to the coordinator; resuming 0 pending approvals/);
    expect(io.stdout).toMatch(/"event":"connected".*"resumed":true,"pending_approvals":0/);

    // removed by the administrator: the simulator says so and exits (EXIT_DEVICE_REVOKED), for good
    await coord.db.query(`UPDATE devices SET status = 'REMOVED' WHERE device_id = $1`, [deviceId]);
    coord.signing?.hub.revokeDevice(deviceId, 'REMOVED');
    expect(await exited).toBe(EXIT_DEVICE_REVOKED);
    expect(io.stdout).toMatch(/"event":"revoked","reason":"device is REMOVED, not APPROVED"/);
  });

  it.each(['SIGTERM', 'SIGINT'] as const)(
    '%s while it waits to reconnect ends it at once (exit code 0)',
    async (sig) => {
      const { dir, coord } = await instanceWithPhone(`mobile-process-${sig.toLowerCase()}`);
      const { proc, io, exited } = spawnPhone(dir);
      await waitFor(
        () => io.stdout.includes('"event":"connected"') || proc.exitCode !== null,
        30_000,
        'the connection',
      );
      await coord.stop();
      await waitFor(() => io.stdout.includes('"event":"disconnected"') || proc.exitCode !== null, 10_000, 'the loss');
      expect(proc.exitCode).toBe(null);
      const t0 = Date.now();
      proc.kill(sig);
      expect(await exited).toBe(0);
      expect(io.stderr).toContain(`phone stopping (${sig})`);
      expect(Date.now() - t0).toBeLessThan(5_000);
    },
  );
});
