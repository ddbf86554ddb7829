/**
 * The coordinator's lifecycle (lifecycle.ts, coordinator.ts): components start in order and stop
 * in reverse; a component whose start fails (here the HTTP server, on a port already taken) makes
 * `start()` reject after every component was stopped (the signing services' libp2p host, the
 * database); `stop()` is idempotent. PGlite in memory.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KeyAlgorithm } from '@custodian/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { type Coordinator, createCoordinator } from '../src/coordinator.js';
import { openPglite } from '../src/db/db.js';
import { Lifecycle, type Startable } from '../src/lifecycle.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** A coordinator on PGlite in memory with the signing services (no pool), listening on `port`. */
async function coordinator(port: number): Promise<Coordinator> {
  const dir = await mkdtemp(join(tmpdir(), 'custodian-lifecycle-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const c = await createCoordinator({
    db: await openPglite(),
    mode: 'development',
    mailboxDir: join(dir, 'mailbox'),
    listen: { host: '127.0.0.1', port },
    logger: false,
    signing: { enabled: true, algorithms: [KeyAlgorithm.ED25519], presignaturePool: 0 },
  });
  cleanups.push(() => c.stop());
  return c;
}

const libp2pStatus = (c: Coordinator) => c.signing?.control.host.node.status;
const dbOpen = (c: Coordinator) =>
  c.db.query('SELECT 1').then(
    () => true,
    () => false,
  );

/** A TCP server holding a port on 127.0.0.1. */
async function occupiedPort(): Promise<number> {
  const s: Server = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => s.close(() => resolve())));
  const addr = s.address();
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  return addr.port;
}

describe('coordinator lifecycle', () => {
  it('starts its components in order, serves, and stops them all', async () => {
    const c = await coordinator(0);
    expect(c.components).toEqual([
      'database',
      'replica registry',
      'replica bus',
      'idempotency purge',
      'signing services',
      'master key ceremonies',
      'key lifecycle',
      'key lifecycle scheduler',
      'ceremony recovery',
      'presignature reconciliation',
      'bootstrap token',
      'http server',
      'device hub',
      'deposit watchers',
      'transfer pipeline',
      'webhook worker',
    ]);
    const url = await c.start();
    expect(await c.start()).toBe(url); // a second start shares the first
    expect((await fetch(`${url}/api/openapi.json`)).status).toBe(200);
    expect(libp2pStatus(c)).toBe('started');
    await c.stop();
    await expect(fetch(`${url}/api/openapi.json`)).rejects.toThrow();
    expect(libp2pStatus(c)).toBe('stopped');
    expect(await dbOpen(c)).toBe(false);
    await expect(c.start()).rejects.toThrow(/stopped/);
  });

  it('a component whose start fails makes start() reject, and the components started before it are stopped', async () => {
    const port = await occupiedPort();
    const c = await coordinator(port);
    expect(libp2pStatus(c)).toBe('started'); // the dial-only host exists from construction
    await expect(c.start()).rejects.toThrow(/EADDRINUSE/);
    // started before the HTTP server: the database, the signing services (libp2p host)
    expect(libp2pStatus(c)).toBe('stopped');
    expect(await dbOpen(c)).toBe(false);
    await c.stop(); // harmless after a failed start
  });

  it('stop() twice (and concurrently) is harmless; stop() of a coordinator never started releases it', async () => {
    const c = await coordinator(0);
    await c.start();
    await Promise.all([c.stop(), c.stop()]);
    await c.stop();
    expect(await dbOpen(c)).toBe(false);

    const idle = await coordinator(0);
    await idle.stop();
    await idle.stop();
    expect(libp2pStatus(idle)).toBe('stopped');
    expect(await dbOpen(idle)).toBe(false);
  });
});

describe('Lifecycle', () => {
  /** A component recording its starts and stops in `log`; its start throws when `fail`. */
  function part(name: string, log: string[], fail = false): { name: string; component: Startable } {
    return {
      name,
      component: {
        async start() {
          log.push(`start ${name}`);
          if (fail) throw new Error(`${name} refused`);
        },
        async stop() {
          log.push(`stop ${name}`);
        },
      },
    };
  }

  it('starts in order, stops in reverse (disabled components are stopped, not started)', async () => {
    const log: string[] = [];
    const l = new Lifecycle([part('a', log), { ...part('b', log), enabled: false }, part('c', log)]);
    await l.start();
    await l.start();
    await l.stop();
    await l.stop();
    expect(log).toEqual(['start a', 'start c', 'stop c', 'stop b', 'stop a']);
  });

  it('a failing start stops every component in reverse and rejects with its error', async () => {
    const log: string[] = [];
    const l = new Lifecycle([part('a', log), part('b', log), part('c', log, true), part('d', log)]);
    await expect(l.start()).rejects.toThrow('c refused');
    expect(log).toEqual(['start a', 'start b', 'start c', 'stop d', 'stop c', 'stop b', 'stop a']);
    await l.stop();
    expect(log).toHaveLength(7);
  });

  it('a stop that rejects does not keep the others from stopping', async () => {
    const log: string[] = [];
    const bad: Startable = {
      start: async () => {},
      stop: async () => {
        throw new Error('stuck');
      },
    };
    const l = new Lifecycle([part('a', log), { name: 'bad', component: bad }, part('c', log)]);
    await l.start();
    await expect(l.stop()).rejects.toThrow('stopping bad failed');
    expect(log).toEqual(['start a', 'start c', 'stop c', 'stop a']);
  });
});
