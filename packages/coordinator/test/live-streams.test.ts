/**
 * Admin live streams (Server-Sent Events, admin/live.ts): the ceremony stream sends the ceremony
 * at once, again when the store changes (any process), and ends when it is final; the session is
 * checked before the stream opens (401 problem+json), an unknown id is a 404 problem.
 *
 * The session, role and wallet-group scope are checked again on every poll: a stream ends at
 * logout (bearer or cookie transport), when its user is blocked, when its transfer leaves the
 * user's wallet groups or a role change puts it out of scope. Limits: `perUser` open streams per
 * user (also under concurrent opens), `max` open streams in the process, and a per-user token
 * bucket for opening them — each 429 RATE_LIMITED with Retry-After.
 *
 * In-process coordinator (real fastify, PGlite, development mailbox); transfers are created over
 * the REST API (no policy, so NO_POLICY_FOUND) and then set back to a live status in the store, with
 * the pipeline off so that nothing else moves them.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMailbox } from '../src/mailer.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, type Json, startHarness } from './helpers.js';

const PASSWORD = 'a long enough password 123';
const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function insertCeremony(h: Harness): Promise<string> {
  const id = randomUUID();
  await h.c.db.query(
    `INSERT INTO ceremonies (ceremony_id, kind, status, threshold, parties, progress, started_at, deadline)
     VALUES ($1, 'dkg', 'RUNNING', 2, '[]'::jsonb, $2::jsonb, now(), now() + interval '5 minutes')`,
    [id, JSON.stringify({ phase: 'CONNECTING', parties_ready: 0, parties_total: 3 })],
  );
  return id;
}

/** Move a ceremony on (a change every open stream of it would send). */
async function touchCeremony(h: Harness, id: string, marker: string): Promise<void> {
  await h.c.db.query('UPDATE ceremonies SET progress = $2::jsonb WHERE ceremony_id = $1', [
    id,
    JSON.stringify({ phase: 'ROUND_1', parties_ready: 2, parties_total: 3, marker }),
  ]);
}

/** Open a stream; `next()` resolves with the next event's parsed data, or null at the end. */
async function open(h: Harness, path: string, headers: Record<string, string>) {
  const ctl = new AbortController();
  const res = await fetch(h.url + path, { headers, signal: ctl.signal });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = '';
  const next = async (): Promise<unknown> => {
    for (;;) {
      const i = buf.indexOf('\n\n');
      if (i >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = block
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .map((l) => l.slice(6))
          .join('\n');
        if (data !== '') return JSON.parse(data);
        continue; // a comment (keep-alive)
      }
      const { done, value } = await reader.read();
      if (done) return null;
      buf += dec.decode(value, { stream: true });
    }
  };
  return { res, next, close: () => ctl.abort() };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A new user of `role` (fresh e-mail) created by the Admin, logged in; its id and bearer token. */
async function newUser(h: Harness, role: string): Promise<{ id: string; token: string }> {
  const email = `${role.toLowerCase()}-${randomUUID()}@example.com`;
  const u = await h.req('POST', '/admin/v1/users', {
    token: h.adminToken,
    body: { email, name: role, role, password: PASSWORD },
  });
  expect(u.status).toBe(201);
  return { id: u.body.user_id, token: await h.login(email, PASSWORD) };
}

describe('admin live streams', () => {
  let h: Harness;
  let blockchainId = '';
  let assetId = '';
  const P = () => `/admin/v1/profiles/${h.profileId}`;
  const A = () => `/api/v1/profiles/${h.profileId}`;

  beforeAll(async () => {
    h = await startHarness({
      coordinator: { liveStreams: { pollMs: 50, perUser: 2 }, transfers: { runPipeline: false } },
    });
    const chains = await h.req('GET', `${A()}/blockchains?page_size=200`, { key: h.apiKey });
    blockchainId = chains.body.data.find((b: Json) => b.key === 'ethereum-local').blockchain_id;
    const assets = await h.req('GET', `${A()}/assets?page_size=200`, { key: h.apiKey });
    assetId = assets.body.data.find((a: Json) => a.blockchain === 'ethereum-local' && a.symbol === 'ETH').asset_id;
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  async function wallet(name: string): Promise<string> {
    const w = await h.req('POST', `${A()}/wallets`, {
      key: h.apiKey,
      headers: { 'idempotency-key': randomUUID() },
      body: { blockchain_ids: [blockchainId], name },
    });
    expect(w.status).toBe(201);
    await h.c.wallets.balances.setBalance(w.body.wallet_id, assetId, (10n ** 18n).toString());
    return w.body.wallet_id;
  }

  /** A transfer of `walletId` in PENDING_APPROVAL (not final: its stream stays open). */
  async function liveTransfer(walletId: string): Promise<string> {
    const t = await h.req('POST', `${A()}/transfers`, {
      key: h.apiKey,
      headers: { 'idempotency-key': randomUUID() },
      body: { wallet_id: walletId, asset_id: assetId, destination_address: DEST, amount: '1' },
    });
    expect(t.status).toBe(201);
    await h.c.db.query(`UPDATE transfers SET status = 'PENDING_APPROVAL' WHERE transfer_id = $1`, [t.body.transfer_id]);
    return t.body.transfer_id;
  }

  /** Change a transfer (a change every open stream of it would send). */
  async function touchTransfer(id: string, marker: string): Promise<void> {
    await h.c.db.query('UPDATE transfers SET sub_status = $2, updated_at = now() WHERE transfer_id = $1', [id, marker]);
  }

  /** A new wallet group of `walletIds` with `userIds` assigned. */
  async function group(walletIds: string[], userIds: string[]): Promise<string> {
    const g = await h.req('POST', `${P()}/wallet-groups`, {
      token: h.adminToken,
      body: { name: `g-${randomUUID()}`, wallet_ids: walletIds },
    });
    expect(g.status).toBe(201);
    for (const u of userIds) {
      const a = await h.req('PUT', `${P()}/wallet-groups/${g.body.wallet_group_id}/users/${u}`, {
        token: h.adminToken,
      });
      expect(a.status).toBe(200);
    }
    return g.body.wallet_group_id;
  }

  it('a ceremony stream: first event at once, one per change, ends when final', async () => {
    const id = await insertCeremony(h);
    const s = await open(h, `/admin/v1/ceremonies/${id}/events`, bearer(h.adminToken));
    expect(s.res.status).toBe(200);
    expect(s.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(s.res.headers.get('cache-control')).toBe('no-store');
    const first = (await s.next()) as { status: string; progress: { parties_ready: number } };
    const get = await h.req('GET', `/admin/v1/ceremonies/${id}`, { token: h.adminToken });
    expect(first).toEqual(get.body);
    expect(first.status).toBe('RUNNING');

    await h.c.db.query('UPDATE ceremonies SET progress = $2::jsonb WHERE ceremony_id = $1', [
      id,
      JSON.stringify({ phase: 'ROUND_1', parties_ready: 2, parties_total: 3 }),
    ]);
    const second = (await s.next()) as { progress: { parties_ready: number; phase: string } };
    expect(second.progress).toMatchObject({ phase: 'ROUND_1', parties_ready: 2 });

    await h.c.db.query(`UPDATE ceremonies SET status = 'FAILED', finished_at = now() WHERE ceremony_id = $1`, [id]);
    const last = (await s.next()) as { status: string };
    expect(last.status).toBe('FAILED');
    expect(await s.next()).toBeNull(); // the stream ended
  });

  it('a final ceremony: one event, then the end', async () => {
    const id = await insertCeremony(h);
    await h.c.db.query(`UPDATE ceremonies SET status = 'FAILED', finished_at = now() WHERE ceremony_id = $1`, [id]);
    const s = await open(h, `/admin/v1/ceremonies/${id}/events`, bearer(h.adminToken));
    expect(((await s.next()) as { status: string }).status).toBe('FAILED');
    expect(await s.next()).toBeNull();
  });

  it('401 problem without a session, 404 problem for an unknown id (ceremony and transfer)', async () => {
    const id = await insertCeremony(h);
    const anon = await h.req('GET', `/admin/v1/ceremonies/${id}/events`);
    expect(anon.status).toBe(401);
    expect(anon.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(anon.body.code).toBe('SESSION_REQUIRED');
    const t = `${P()}/transfers/${randomUUID()}/events`;
    expect((await h.req('GET', t)).body.code).toBe('SESSION_REQUIRED');
    const unknown = await h.req('GET', `/admin/v1/ceremonies/${randomUUID()}/events`, { token: h.adminToken });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('RESOURCE_NOT_FOUND');
    const tr = await h.req('GET', t, { token: h.adminToken });
    expect(tr.status).toBe(404);
    expect(tr.body.code).toBe('TRANSFER_NOT_FOUND');
  });

  it('at most perUser open streams per user (429 with Retry-After), a closed one frees its place', async () => {
    const v = await newUser(h, 'VIEWER');
    const id = await insertCeremony(h);
    const a = await open(h, `/admin/v1/ceremonies/${id}/events`, bearer(v.token));
    const b = await open(h, `/admin/v1/ceremonies/${id}/events`, bearer(v.token));
    await a.next();
    await b.next();
    const c = await h.req('GET', `/admin/v1/ceremonies/${id}/events`, { token: v.token });
    expect(c.status).toBe(429);
    expect(c.body.code).toBe('RATE_LIMITED');
    expect(c.body.detail).toMatch(/per user/);
    expect(Number(c.headers.get('retry-after'))).toBeGreaterThan(0);
    // another user is not held back by this one
    const other = await open(h, `/admin/v1/ceremonies/${id}/events`, bearer(h.adminToken));
    expect(other.res.status).toBe(200);
    other.close();
    a.close();
    b.close();
    await sleep(200);
    const d = await open(h, `/admin/v1/ceremonies/${id}/events`, bearer(v.token));
    expect(d.res.status).toBe(200);
    d.close();
  });

  it('concurrent opens cannot race past the per-user cap (counted before any await)', async () => {
    const v = await newUser(h, 'VIEWER');
    const id = await insertCeremony(h);
    const all = await Promise.all(
      [0, 1, 2, 3, 4].map(() => open(h, `/admin/v1/ceremonies/${id}/events`, bearer(v.token))),
    );
    const statuses = all.map((s) => s.res.status).sort();
    for (const s of all) s.close();
    expect(statuses).toEqual([200, 200, 429, 429, 429]);
    await sleep(200);
  });

  it('a stream opened with the session cookie ends at logout with that cookie', async () => {
    const l = await h.req('POST', '/admin/v1/login', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
    const mails = (await readMailbox(join(h.dir, 'mailbox'))).filter((m) => m.to.includes(ADMIN_EMAIL));
    const code = /code is (\d{6})/.exec(mails.at(-1)?.text ?? '')?.[1];
    const v = await h.req('POST', '/admin/v1/login/verify', {
      body: { challenge_id: l.body.challenge_id, code, transport: 'cookie' },
    });
    expect(v.status).toBe(200);
    const jar = new Map(
      v.headers.getSetCookie().map((line) => {
        const pair = line.split(';')[0]!;
        return [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)] as const;
      }),
    );
    const cookie = `custodian_session=${jar.get('custodian_session')}; custodian_csrf=${jar.get('custodian_csrf')}`;
    const id = await insertCeremony(h);
    const s = await open(h, `/admin/v1/ceremonies/${id}/events`, { cookie });
    expect(s.res.status).toBe(200);
    expect(((await s.next()) as { status: string }).status).toBe('RUNNING');
    const out = await h.req('POST', '/admin/v1/logout', {
      headers: { cookie, 'x-csrf-token': jar.get('custodian_csrf')! },
    });
    expect(out.status).toBe(204);
    await touchCeremony(h, id, 'after-logout');
    expect(await s.next()).toBeNull();
    s.close();
  });

  it("a blocked user's stream ends (session revoked by another user), and sends nothing more", async () => {
    const v = await newUser(h, 'VIEWER');
    const id = await insertCeremony(h);
    const s = await open(h, `/admin/v1/ceremonies/${id}/events`, bearer(v.token));
    expect(((await s.next()) as { status: string }).status).toBe('RUNNING');
    const blocked = await h.req('PATCH', `/admin/v1/users/${v.id}`, { token: h.adminToken, body: { blocked: true } });
    expect(blocked.status).toBe(200);
    await touchCeremony(h, id, 'after-block');
    expect(await s.next()).toBeNull();
    s.close();
  });

  it("a transfer stream ends when its user is removed from the wallet group holding the transfer's wallet", async () => {
    const inside = await wallet('inside');
    const other = await wallet('other');
    const v = await newUser(h, 'VIEWER');
    const g1 = await group([inside], [v.id]);
    await group([other], [v.id]);
    const t = await liveTransfer(inside);
    const path = `${P()}/transfers/${t}/events`;
    const s = await open(h, path, bearer(v.token));
    expect(s.res.status).toBe(200);
    expect(((await s.next()) as { transfer_id: string }).transfer_id).toBe(t);
    await touchTransfer(t, 'in-scope');
    expect(((await s.next()) as { sub_status: string }).sub_status).toBe('in-scope');

    const removed = await h.req('DELETE', `${P()}/wallet-groups/${g1}/users/${v.id}`, { token: h.adminToken });
    expect(removed.status).toBeLessThan(300);
    // the GET route now hides it, and so does the stream: it ends without the next change
    expect((await h.req('GET', `${P()}/transfers/${t}`, { token: v.token })).body.code).toBe('TRANSFER_NOT_FOUND');
    await touchTransfer(t, 'out-of-scope');
    expect(await s.next()).toBeNull();
    s.close();
    // and it cannot be reopened
    expect((await h.req('GET', path, { token: v.token })).status).toBe(404);
  });

  it('a transfer stream ends when a role change puts the transfer out of the user’s scope', async () => {
    const inside = await wallet('inside-2');
    const other = await wallet('other-2');
    const u = await newUser(h, 'ADMIN'); // an Admin is never scoped, even when assigned to a group
    await group([other], [u.id]);
    const t = await liveTransfer(inside);
    const s = await open(h, `${P()}/transfers/${t}/events`, bearer(u.token));
    expect(s.res.status).toBe(200);
    expect(((await s.next()) as { transfer_id: string }).transfer_id).toBe(t);

    const demoted = await h.req('PATCH', `/admin/v1/users/${u.id}`, { token: h.adminToken, body: { role: 'VIEWER' } });
    expect(demoted.status).toBe(200);
    await touchTransfer(t, 'after-demotion');
    expect(await s.next()).toBeNull();
    s.close();
  });
});

describe('admin live streams: process-wide cap and opening rate', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      masterKey: false,
      coordinator: { liveStreams: { pollMs: 50, perUser: 2, max: 3, opens: { burst: 3, perMinute: 20 } } },
    });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  it('at most `max` open streams in the process, whoever opens them (429)', async () => {
    const id = await insertCeremony(h);
    const v = await newUser(h, 'VIEWER');
    const a = await open(h, `/admin/v1/ceremonies/${id}/events`, bearer(h.adminToken));
    const b = await open(h, `/admin/v1/ceremonies/${id}/events`, bearer(h.adminToken));
    const c = await open(h, `/admin/v1/ceremonies/${id}/events`, bearer(v.token));
    expect([a.res.status, b.res.status, c.res.status]).toEqual([200, 200, 200]);
    const d = await h.req('GET', `/admin/v1/ceremonies/${id}/events`, { token: v.token }); // v holds 1 < perUser
    expect(d.status).toBe(429);
    expect(d.body.code).toBe('RATE_LIMITED');
    expect(d.headers.get('retry-after')).not.toBeNull();
    for (const s of [a, b, c]) s.close();
    await sleep(200);
    const e = await open(h, `/admin/v1/ceremonies/${id}/events`, bearer(v.token));
    expect(e.res.status).toBe(200);
    e.close();
    await sleep(200);
  });

  it('a user opens at most `opens.burst` streams at once, then one per refill (429, Retry-After)', async () => {
    const id = await insertCeremony(h);
    const v = await newUser(h, 'VIEWER');
    for (let i = 0; i < 3; i++) {
      const s = await open(h, `/admin/v1/ceremonies/${id}/events`, bearer(v.token));
      expect(s.res.status).toBe(200);
      s.close();
      await sleep(100); // its place is free again: only the rate holds the next one back
    }
    const fast = await h.req('GET', `/admin/v1/ceremonies/${id}/events`, { token: v.token });
    expect(fast.status).toBe(429);
    expect(fast.body.code).toBe('RATE_LIMITED');
    expect(fast.body.detail).toMatch(/too fast/);
    const wait = Number(fast.headers.get('retry-after'));
    expect(wait).toBeGreaterThanOrEqual(1);
    // another user has a bucket of their own
    const mine = await open(h, `/admin/v1/ceremonies/${id}/events`, bearer(h.adminToken));
    expect(mine.res.status).toBe(200);
    mine.close();
    await sleep(wait * 1000 + 100);
    const later = await open(h, `/admin/v1/ceremonies/${id}/events`, bearer(v.token));
    expect(later.res.status).toBe(200);
    later.close();
  });
});
