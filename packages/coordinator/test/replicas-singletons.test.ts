/**
 * Exactly-one work among coordinator replicas (issue #25): two coordinators on ONE PostgreSQL
 * schema (each its own pool), real sockets, a real anvil node.
 * - each chain's deposit watcher runs on one replica (`watcher:<chain>`), and moves to the other
 *   when its holder stops;
 * - a master key ceremony RUNNING on replica A is not failed when replica B starts; its progress
 *   and outcome are read through B's admin API (GET and the SSE stream);
 * - when A dies (its database connections gone: no heartbeat, no lease renewal, no cleanup), B's
 *   ceremony recovery fails A's ceremony after the ttl, with an error naming the replica;
 * - lifecycle ceremonies (refresh) and their key changes follow the same owner rule.
 * The signer network of the DKG is the coordinator's `ceremonyClient` option (a test double that
 * reports progress and then waits to be released): what is checked here is the coordinator's
 * bookkeeping across replicas, not the DKG itself (signers' tests, key-lifecycle.slow.test.ts).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fingerprint } from '@custodian/signer-client';
import { peerIdFromString } from '@libp2p/peer-id';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { type AnvilNode, startAnvil } from '../../chains/test/helpers/anvil.js';
import type { CeremonyClient, DkgRequest } from '../src/ceremony.js';
import { type Coordinator, type CoordinatorOptions, createCoordinator } from '../src/coordinator.js';
import { type Db, openPostgres } from '../src/db/db.js';
import { KeyStore } from '../src/keys/store.js';
import { readMailbox } from '../src/mailer.js';
import { enrollmentBody, phoneKeys } from './device-fixtures.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Json, PG_URL, postgresReachable, testMasterKey } from './helpers.js';

// both replicas share this test process's event loop: building one (route schemas compiled
// synchronously) can hold the other's heartbeat back for a second or more on a loaded machine, so
// the ttl is kept well above that (production default: 10 s)
const REPLICAS = { heartbeatMs: 100, ttlMs: 4000, leaseMs: 1500, busPollMs: 200 };
const KEK = new Uint8Array(32).fill(9);
const PEER = '12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function until<T>(what: string, f: () => Promise<T | undefined> | T | undefined, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A fresh schema; `open()` gives another Db handle (its own pool) on it. */
async function sharedSchema(): Promise<{ open: () => Promise<Db> }> {
  const schema = `t_${randomBytes(8).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  cleanups.push(async () => {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA ${schema} CASCADE`);
    await c.end();
  });
  return { open: () => openPostgres(PG_URL, { schema, max: 10 }) };
}

interface Replica {
  c: Coordinator;
  db: Db;
  url: string;
  req(method: string, path: string, o?: { body?: unknown; token?: string }): Promise<{ status: number; body: Json }>;
}

/** A coordinator replica on the shared schema, started; its files in `dir` (the mailbox is shared). */
async function replica(
  s: { open: () => Promise<Db> },
  dir: string,
  name: string,
  extra: Partial<CoordinatorOptions> = {},
): Promise<Replica> {
  const db = await s.open();
  const c = await createCoordinator({
    db,
    mode: 'development',
    mailboxDir: join(dir, 'mailbox'),
    bootstrapTokenFile: join(dir, `bootstrap-token-${name}`),
    listen: { port: 0 },
    logger: false,
    replicas: REPLICAS,
    webhooks: { keyEncryptionKey: KEK, runWorker: false },
    admin: {
      stepUpTtlMs: 8 * 3600_000,
      sessionIdleMs: 8 * 3600_000,
      scrypt: { N: 1 << 10, r: 8, p: 1 },
      loginRateLimit: { max: 10_000, windowMs: 60_000 },
      accountLockout: { maxFailures: 1000, windowMs: 60_000 },
      emailCodes: { max: 1000, windowMs: 60_000 },
    },
    ...extra,
  });
  cleanups.push(async () => {
    await c.stop().catch(() => undefined);
  });
  const url = await c.start();
  return {
    c,
    db,
    url,
    async req(method, path, o = {}) {
      const headers: Record<string, string> = {};
      if (o.token !== undefined) headers.authorization = `Bearer ${o.token}`;
      if (o.body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(url + path, {
        method,
        headers,
        ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}),
      });
      const text = await res.text();
      return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
    },
  };
}

/** Initialise the instance through `r` and return a stepped-up Admin session token. */
async function initAdmin(r: Replica, dir: string, name: string): Promise<string> {
  const token = (await readFile(join(dir, `bootstrap-token-${name}`), 'utf8')).trim();
  const init = await r.req('POST', '/admin/v1/init', {
    body: {
      email: ADMIN_EMAIL,
      name: 'First Admin',
      password: ADMIN_PASSWORD,
      profile_name: 'main',
      bootstrap_token: token,
    },
  });
  expect(init.status).toBe(201);
  const l = await r.req('POST', '/admin/v1/login', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
  const mails = (await readMailbox(join(dir, 'mailbox'))).filter((m) => m.to.includes(ADMIN_EMAIL));
  const code = /code is (\d{6})/.exec(mails.at(-1)?.text ?? '')?.[1];
  const v = await r.req('POST', '/admin/v1/login/verify', { body: { challenge_id: l.body.challenge_id, code } });
  expect(v.status).toBe(200);
  const session = v.body.token as string;
  expect(
    (await r.req('POST', '/admin/v1/session/step-up', { token: session, body: { password: ADMIN_PASSWORD } })).status,
  ).toBe(200);
  return session;
}

/** One server signer and two approved devices registered through `r`: the parties of a DKG. */
async function dkgParties(r: Replica, token: string): Promise<{ kind: 'server' | 'device'; id: string }[]> {
  const s = await r.req('POST', '/admin/v1/signers', {
    token,
    body: {
      name: 'signer-1',
      peer_id: PEER,
      address: '/ip4/127.0.0.1/tcp/7400',
      fingerprint: fingerprint((peerIdFromString(PEER).publicKey as { raw: Uint8Array }).raw),
    },
  });
  expect(s.status).toBe(201);
  const users = await r.req('GET', '/admin/v1/users?page_size=10', { token });
  const adminId = users.body.data[0].user_id as string;
  const parties: { kind: 'server' | 'device'; id: string }[] = [{ kind: 'server', id: s.body.signer_id }];
  for (const name of ['phone-1', 'phone-2']) {
    const e = await r.req('POST', '/devices/v1/enrollments', { body: enrollmentBody(await phoneKeys(), name) });
    expect(e.status).toBe(201);
    const a = await r.req('POST', `/admin/v1/devices/${e.body.device_id}/approve`, {
      token,
      body: { fingerprint: e.body.fingerprint, user_id: adminId },
    });
    expect(a.status).toBe(200);
    parties.push({ kind: 'device', id: e.body.device_id });
  }
  return parties;
}

/** A signer network double: reports KEYGEN progress, then waits for `release()` (or the abort). */
function heldCeremonies() {
  const waiting: { req: DkgRequest; release: () => void }[] = [];
  const client: CeremonyClient = {
    async runDkg(req) {
      req.onProgress({ phase: 'KEYGEN', parties_ready: 1, parties_total: req.parties.length });
      await new Promise<void>((resolve, reject) => {
        waiting.push({ req, release: resolve });
        req.signal.addEventListener('abort', () => reject(req.signal.reason), { once: true });
      });
      const mk = testMasterKey();
      return { secp256k1: mk.secp256k1, ed25519: mk.ed25519, transcriptHash: 'ab'.repeat(32) };
    },
  };
  return { client, waiting };
}

/** The first `n` `data:` events of an SSE stream, and a promise of the rest until it ends. */
async function sse(url: string, token: string) {
  const ac = new AbortController();
  cleanups.push(async () => ac.abort());
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: ac.signal });
  expect(res.status).toBe(200);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buf = '';
  const events: Json[] = [];
  let ended = false;
  const pump = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let i = buf.indexOf('\n\n');
      while (i >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = block
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trim())
          .join('\n');
        if (data !== '') events.push(JSON.parse(data));
        i = buf.indexOf('\n\n');
      }
    }
    ended = true;
  })().catch(() => {
    ended = true;
  });
  return { events, ended: () => ended, done: pump };
}

describe('singletons among replicas (two coordinators, one PostgreSQL schema)', () => {
  it("runs each chain's deposit watcher on exactly one replica, and hands it over when the holder stops", async (ctx) => {
    if (!(await postgresReachable())) ctx.skip();
    const anvil: AnvilNode = await startAnvil();
    cleanups.push(() => anvil.stop());
    const dir = await mkdtemp(join(tmpdir(), 'custodian-replicas-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const s = await sharedSchema();
    const chains = { 'ethereum-local': { rpcUrl: anvil.url, pollIntervalMs: 100 } };
    const a = await replica(s, dir, 'a', { chains });
    const b = await replica(s, dir, 'b', { chains });
    // both started: exactly one of them has the watcher (a poll through the other is refused)
    const polls = await Promise.all(
      [a, b].map((r) =>
        r.c.transfers.chains.pollWatcher('ethereum-local').then(
          () => true,
          () => false,
        ),
      ),
    );
    expect(polls.filter(Boolean)).toHaveLength(1);
    const [holder, other] = polls[0] ? [a, b] : [b, a];
    expect(holder.c.replicas.leases()).toContain('watcher:ethereum-local');
    expect(other.c.replicas.leases()).not.toContain('watcher:ethereum-local');
    expect(other.c.transfers.chains.watching()).toEqual([]);
    // and the schedulers too: each on one replica
    for (const name of ['scheduler:keys', 'scheduler:idempotency-purge', 'scheduler:ceremony-recovery']) {
      expect([a, b].filter((r) => r.c.replicas.leases().includes(name))).toHaveLength(1);
    }
    // the gauge of the holder
    const text = await holder.c.metrics.registry.metrics();
    expect(text).toContain('custodian_singleton_leases_held{lease="watcher:ethereum-local"} 1');
    expect(await other.c.metrics.registry.metrics()).toContain(
      'custodian_singleton_leases_held{lease="watcher:ethereum-local"} 0',
    );

    // the holder stops: the other takes the watcher (a clean stop releases the lease at once)
    await holder.c.stop();
    await until('the other replica to take the watcher', () =>
      other.c.replicas.leases().includes('watcher:ethereum-local') ? true : undefined,
    );
    expect(other.c.transfers.chains.watching()).toEqual(['ethereum-local']);
    await expect(other.c.transfers.chains.pollWatcher('ethereum-local')).resolves.toBeDefined();
  });

  it("a ceremony RUNNING on replica A survives B's start; B's admin API shows its progress (GET, SSE) and outcome", async (ctx) => {
    if (!(await postgresReachable())) ctx.skip();
    const dir = await mkdtemp(join(tmpdir(), 'custodian-replicas-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const s = await sharedSchema();
    const held = heldCeremonies();
    const a = await replica(s, dir, 'a', { ceremonyClient: held.client });
    const token = await initAdmin(a, dir, 'a');
    const signers = await dkgParties(a, token);
    const started = await a.req('POST', '/admin/v1/master-keys', { token, body: { threshold: 2, signers } });
    expect(started.status).toBe(202);
    const id = started.body.ceremony_id as string;
    await until('the ceremony to report progress', () => (held.waiting.length === 1 ? true : undefined));

    const b = await replica(s, dir, 'b', { ceremonyClient: heldCeremonies().client });
    // B's start ran the ceremony recovery: A is alive, its ceremony is not touched
    const seen = await b.req('GET', `/admin/v1/ceremonies/${id}`, { token });
    expect(seen.status).toBe(200);
    expect(seen.body).toMatchObject({
      status: 'RUNNING',
      progress: { phase: 'KEYGEN', parties_ready: 1, parties_total: 3 },
    });
    // also after several rounds of B's periodic recovery (whichever replica holds it)
    await b.c.signers.ceremonies.recoverCeremonies();
    await new Promise((r) => setTimeout(r, REPLICAS.ttlMs + 500));
    expect((await b.req('GET', `/admin/v1/ceremonies/${id}`, { token })).body.status).toBe('RUNNING');

    // the live stream through B: the running ceremony at once, then its outcome, then the end
    const stream = await sse(`${b.url}/admin/v1/ceremonies/${id}/events`, token);
    await until('the first event', () => (stream.events.length > 0 ? true : undefined));
    expect(stream.events[0]).toMatchObject({ ceremony_id: id, status: 'RUNNING', progress: { phase: 'KEYGEN' } });
    held.waiting[0]?.release();
    await stream.done;
    expect(stream.events.at(-1)).toMatchObject({ ceremony_id: id, status: 'SUCCEEDED', outcome: 'OK' });
    const done = await b.req('GET', `/admin/v1/ceremonies/${id}`, { token });
    expect(done.body).toMatchObject({ status: 'SUCCEEDED', master_key_id: expect.any(String) });
    const rows = await b.db.query<{ owner_replica: string }>(
      'SELECT owner_replica FROM ceremonies WHERE ceremony_id = $1',
      [id],
    );
    expect(rows[0]?.owner_replica).toBe(a.c.replicas.registry.id);
  });

  it('a replica that dies mid-DKG: the survivor fails its ceremony after the ttl, naming the replica', async (ctx) => {
    if (!(await postgresReachable())) ctx.skip();
    const dir = await mkdtemp(join(tmpdir(), 'custodian-replicas-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const s = await sharedSchema();
    const held = heldCeremonies();
    const a = await replica(s, dir, 'a', { ceremonyClient: held.client });
    const token = await initAdmin(a, dir, 'a');
    const signers = await dkgParties(a, token);
    const b = await replica(s, dir, 'b', { ceremonyClient: heldCeremonies().client });
    const started = await a.req('POST', '/admin/v1/master-keys', { token, body: { threshold: 2, signers } });
    expect(started.status).toBe(202);
    const id = started.body.ceremony_id as string;
    await until('the ceremony to report progress', () => (held.waiting.length === 1 ? true : undefined));

    // A "dies": its database connections end (no heartbeat, no lease renewal, no cleanup of its row)
    await a.db.close();
    const failed = await until(
      'B to fail the ceremony of the dead replica',
      async () => {
        const r = await b.req('GET', `/admin/v1/ceremonies/${id}`, { token });
        return r.body.status === 'RUNNING' ? undefined : r.body;
      },
      30_000,
    );
    expect(failed).toMatchObject({ status: 'FAILED', outcome: 'FAILED' });
    expect(failed.error).toContain(a.c.replicas.registry.id);
    // B took the singletons A held
    await until('B to hold the schedulers', () =>
      ['scheduler:keys', 'scheduler:idempotency-purge', 'scheduler:ceremony-recovery'].every((n) =>
        b.c.replicas.leases().includes(n),
      )
        ? true
        : undefined,
    );
  });

  it('lifecycle ceremonies (refresh, reshare) follow the owner: a live replica keeps its own, a dead one loses them with their key change', async (ctx) => {
    if (!(await postgresReachable())) ctx.skip();
    const dir = await mkdtemp(join(tmpdir(), 'custodian-replicas-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const s = await sharedSchema();
    const a = await replica(s, dir, 'a');
    await initAdmin(a, dir, 'a'); // before B starts: B's start would replace A's bootstrap token
    const b = await replica(s, dir, 'b');
    const mkLive = await a.c.signers.masterKeys.insertMasterKey(testMasterKey());
    const mkDead = await a.c.signers.masterKeys.insertMasterKey(testMasterKey());
    const store = new KeyStore(b.db);
    const now = new Date();
    const deadline = new Date(now.getTime() + 300_000);
    const live = randomUUID();
    const dead = randomUUID();
    const change = randomUUID();
    const ghost = randomUUID(); // a replica id that never heartbeats
    await b.db.tx(async (q) => {
      await store.insertCeremony(q, {
        id: live,
        kind: 'refresh',
        threshold: 2,
        parties: [],
        actor: null,
        now,
        deadline,
        masterKeyId: mkLive.master_key_id,
        owner: a.c.replicas.registry.id,
      });
      await store.insertChange(q, {
        id: change,
        masterKeyId: mkDead.master_key_id,
        reason: 'reshare',
        document: '{}',
        digest: '00',
        threshold: 2,
        parties: [],
        actor: (await q.query<{ user_id: string }>('SELECT user_id::text AS user_id FROM users LIMIT 1'))[0]
          ?.user_id as string,
        now,
      });
      await store.insertCeremony(q, {
        id: dead,
        kind: 'reshare',
        threshold: 2,
        parties: [],
        actor: null,
        now,
        deadline,
        masterKeyId: mkDead.master_key_id,
        keyChangeId: change,
        owner: ghost,
      });
      await store.setChange(q, change, { status: 'RUNNING', at: now, ceremonyId: dead });
    });
    const failed = await b.c.signers.ceremonies.recoverCeremonies();
    expect(failed).toEqual([dead]);
    expect((await b.c.signers.ceremonies.getCeremony(live)).status).toBe('RUNNING');
    const d = await b.c.signers.ceremonies.getCeremony(dead);
    expect(d).toMatchObject({ status: 'FAILED' });
    expect(d.error).toContain(ghost);
    const ch = await store.view(mkDead.master_key_id, change);
    expect(ch).toMatchObject({ status: 'FAILED' });
    expect(ch.error).toContain(ghost);
  });
});
