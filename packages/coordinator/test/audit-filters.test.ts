/**
 * `GET /admin/v1/audit` server-side filters (issue #24): `action` (exact or prefix), `actor_user_id`,
 * `target_type`, `target_id`, `from`/`to`; AND-combined with pagination (`total` counts matches);
 * bad input is 422. Entries are written through `AuditLog.record` with chosen times.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, type Json, startHarness } from './helpers.js';

const A1 = '00000000-0000-4000-8000-0000000000a1';
const A2 = '00000000-0000-4000-8000-0000000000a2';

describe('audit log filters', () => {
  let h: Harness;
  const get = (q: string) => h.req('GET', `/admin/v1/audit?${q}`, { token: h.adminToken });
  const actions = (b: Json) => b.data.map((e: Json) => e.action);

  beforeAll(async () => {
    h = await startHarness({});
    const rows: [string, string | null, string, string, string][] = [
      ['2030-01-01T00:00:00Z', A1, 'test_x.created', 'widget', 'w1'],
      ['2030-01-02T00:00:00Z', A1, 'test_x.updated', 'widget', 'w1'],
      ['2030-01-03T00:00:00Z', A2, 'test_x.created', 'widget', 'w2'],
      ['2030-01-04T00:00:00Z', A2, 'test_y.created', 'gadget', 'g1'],
      ['2030-01-05T00:00:00Z', null, 'test_x_other.created', 'widget', 'w3'],
    ];
    for (const [at, actor, action, tt, tid] of rows) {
      await h.c.db.query(
        `INSERT INTO audit_log (audit_id, at, actor_user_id, action, target_type, target_id, details)
         VALUES ($1,$2,$3,$4,$5,$6,'{}'::jsonb)`,
        [crypto.randomUUID(), new Date(at), actor, action, tt, tid],
      );
    }
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  it('action: exact', async () => {
    const r = await get('action=test_x.created');
    expect(r.status).toBe(200);
    expect(actions(r.body)).toEqual(['test_x.created', 'test_x.created']);
    expect(r.body.total).toBe(2);
  });

  it('action: prefix with a dot or a star (LIKE wildcards in the prefix are literal)', async () => {
    const dot = await get('action=test_x.');
    expect(actions(dot.body)).toEqual(['test_x.created', 'test_x.updated', 'test_x.created']);
    const star = await get('action=test_x*');
    expect(star.body.total).toBe(4);
    const underscore = await get('action=test_*');
    expect(underscore.body.total).toBe(5);
  });

  it('actor_user_id, target_type, target_id', async () => {
    expect((await get(`actor_user_id=${A2}`)).body.total).toBe(2);
    expect(actions((await get('target_type=gadget')).body)).toEqual(['test_y.created']);
    expect((await get('target_id=w1')).body.total).toBe(2);
  });

  it('from (inclusive) and to (exclusive)', async () => {
    const r = await get('from=2030-01-02T00:00:00Z&to=2030-01-04T00:00:00Z');
    expect(actions(r.body)).toEqual(['test_x.created', 'test_x.updated']);
    expect((await get('from=2030-01-05T00:00:00Z')).body.total).toBe(1);
  });

  it('filters combine with each other and with pagination; total counts all matches', async () => {
    const r = await get(`action=test_x.&actor_user_id=${A1}&target_type=widget&page_size=1&page=2`);
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(2);
    expect(r.body.data).toHaveLength(1);
    expect(r.body.data[0]).toMatchObject({ action: 'test_x.created', target_id: 'w1', actor_user_id: A1 });
  });

  it.each(['from=yesterday', 'to=2030-13-01', 'actor_user_id=nope', 'action=DROP%20TABLE', 'action=', 'unknown=1'])(
    '422 on bad input: %s',
    async (q) => {
      const r = await get(q);
      expect(r.status).toBe(422);
    },
  );

  it('a non-Admin gets 403', async () => {
    const password = 'a long enough password 123';
    const u = await h.req('POST', '/admin/v1/users', {
      token: h.adminToken,
      body: { email: 'v@example.com', name: 'V', role: 'VIEWER', password },
    });
    expect(u.status).toBe(201);
    const r = await h.req('GET', '/admin/v1/audit?action=test_x.', { token: await h.login('v@example.com', password) });
    expect(r.status).toBe(403);
  });
});
