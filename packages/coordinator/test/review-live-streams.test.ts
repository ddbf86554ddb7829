/**
 * Hostile review (issue #24, round 2): admin live streams (admin/live.ts) authenticate once, when
 * the stream opens, and never again; and their limit counts per session, not per user.
 *
 * Each test here is an attack that SUCCEEDS today (so the test FAILS) until live.ts is fixed:
 * 1. a stream opened before logout keeps delivering the resource after the session is gone
 *    (logout, revocation, disabled user, changed wallet-group scope): up to 10 minutes of leak;
 * 2. one user opens `perSession` streams in each of as many sessions as they log in: the cap
 *    is per session, so a single account exhausts sockets and store polls without bound.
 *
 * In-process coordinator (real fastify, PGlite, development mailbox), like live-streams.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMailbox } from '../src/mailer.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, startHarness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ masterKey: false, coordinator: { liveStreams: { pollMs: 50, perUser: 2 } } });
});
afterAll(async () => {
  await h?.close();
});

async function insertCeremony(): Promise<string> {
  const id = randomUUID();
  await h.c.db.query(
    `INSERT INTO ceremonies (ceremony_id, kind, status, threshold, parties, progress, started_at, deadline)
     VALUES ($1, 'dkg', 'RUNNING', 2, '[]'::jsonb, $2::jsonb, now(), now() + interval '5 minutes')`,
    [id, JSON.stringify({ phase: 'CONNECTING', parties_ready: 0, parties_total: 3 })],
  );
  return id;
}

/** A fresh bearer session of the admin (password + e-mailed code). */
async function newSession(): Promise<string> {
  const l = await h.req('POST', '/admin/v1/login', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
  expect(l.status).toBe(200);
  const mails = (await readMailbox(join(h.dir, 'mailbox'))).filter((m) => m.to.includes(ADMIN_EMAIL));
  const code = /code is (\d{6})/.exec(mails.at(-1)?.text ?? '')?.[1];
  const v = await h.req('POST', '/admin/v1/login/verify', { body: { challenge_id: l.body.challenge_id, code } });
  expect(v.status).toBe(200);
  return v.body.token as string;
}

/** Open a stream; `next()` resolves with the next event's data, or null at the end (or after `ms`). */
async function open(path: string, token: string) {
  const ctl = new AbortController();
  const res = await fetch(h.url + path, { headers: { authorization: `Bearer ${token}` }, signal: ctl.signal });
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
        continue;
      }
      const { done, value } = await reader.read();
      if (done) return null;
      buf += dec.decode(value, { stream: true });
    }
  };
  return { res, next, close: () => ctl.abort() };
}

describe('review: live streams outlive their session', () => {
  it('after logout, an open stream must end — it still delivers the next change', async () => {
    const token = await newSession();
    const id = await insertCeremony();
    const s = await open(`/admin/v1/ceremonies/${id}/events`, token);
    expect(s.res.status).toBe(200);
    expect(((await s.next()) as { status: string }).status).toBe('RUNNING');

    const out = await h.req('POST', '/admin/v1/logout', { token });
    expect(out.status).toBe(204);
    // the session is gone for every other route
    expect((await h.req('GET', `/admin/v1/ceremonies/${id}`, { token })).status).toBe(401);

    await h.c.db.query('UPDATE ceremonies SET progress = $2::jsonb WHERE ceremony_id = $1', [
      id,
      JSON.stringify({ phase: 'ROUND_1', parties_ready: 2, parties_total: 3, leaked: 'after-logout' }),
    ]);
    const after = await s.next();
    s.close();
    // must hold: the stream ended (null) when its session did; today the change is streamed
    expect(after).toBeNull();
  });
});

describe('review: the stream cap is per session, not per user', () => {
  it('one user with two sessions opens 2 × perSession streams (must be capped per user)', async () => {
    const id = await insertCeremony();
    const opened: Awaited<ReturnType<typeof open>>[] = [];
    const statuses: number[] = [];
    for (const token of [await newSession(), await newSession()]) {
      for (let i = 0; i < 2; i++) {
        const s = await open(`/admin/v1/ceremonies/${id}/events`, token);
        statuses.push(s.res.status);
        opened.push(s);
      }
    }
    for (const s of opened) s.close();
    // must hold: at most perSession (2) streams for the one user; the 3rd and 4th answer 429
    expect(statuses).toEqual([200, 200, 429, 429]);
  });
});
