/**
 * Admin live streams (Server-Sent Events, admin/live.ts): the ceremony stream sends the ceremony
 * at once, again when the store changes (any process), and ends when it is final; the session is
 * checked before the stream opens (401 problem+json), an unknown id is a 404 problem, and a
 * session may hold only `perSession` streams (429).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ masterKey: false, coordinator: { liveStreams: { pollMs: 50, perSession: 2 } } });
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

/** Open a stream; `next()` resolves with the next event's parsed data, or null at the end. */
async function open(path: string, headers: Record<string, string>) {
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

const auth = () => ({ authorization: `Bearer ${h.adminToken}` });

describe('admin live streams', () => {
  it('a ceremony stream: first event at once, one per change, ends when final', async () => {
    const id = await insertCeremony();
    const s = await open(`/admin/v1/ceremonies/${id}/events`, auth());
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
    const id = await insertCeremony();
    await h.c.db.query(`UPDATE ceremonies SET status = 'FAILED', finished_at = now() WHERE ceremony_id = $1`, [id]);
    const s = await open(`/admin/v1/ceremonies/${id}/events`, auth());
    expect(((await s.next()) as { status: string }).status).toBe('FAILED');
    expect(await s.next()).toBeNull();
  });

  it('401 problem without a session, 404 problem for an unknown id (ceremony and transfer)', async () => {
    const id = await insertCeremony();
    const anon = await h.req('GET', `/admin/v1/ceremonies/${id}/events`);
    expect(anon.status).toBe(401);
    expect(anon.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(anon.body.code).toBe('SESSION_REQUIRED');
    const t = `/admin/v1/profiles/${h.profileId}/transfers/${randomUUID()}/events`;
    expect((await h.req('GET', t)).body.code).toBe('SESSION_REQUIRED');
    const unknown = await h.req('GET', `/admin/v1/ceremonies/${randomUUID()}/events`, { token: h.adminToken });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('RESOURCE_NOT_FOUND');
    const tr = await h.req('GET', t, { token: h.adminToken });
    expect(tr.status).toBe(404);
    expect(tr.body.code).toBe('TRANSFER_NOT_FOUND');
  });

  it('at most perSession open streams per session (429), a closed one frees its place', async () => {
    const id = await insertCeremony();
    const a = await open(`/admin/v1/ceremonies/${id}/events`, auth());
    const b = await open(`/admin/v1/ceremonies/${id}/events`, auth());
    await a.next();
    await b.next();
    const c = await h.req('GET', `/admin/v1/ceremonies/${id}/events`, { token: h.adminToken });
    expect(c.status).toBe(429);
    expect(c.body.code).toBe('RATE_LIMITED');
    a.close();
    b.close();
    await new Promise((r) => setTimeout(r, 200));
    const d = await open(`/admin/v1/ceremonies/${id}/events`, auth());
    expect(d.res.status).toBe(200);
    d.close();
  });
});
