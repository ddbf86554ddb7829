/**
 * Attack (issue #26 item 11, device part): the enrollment route is unauthenticated, and the device
 * name it takes is shown to the approving Admin (admin API, dashboard, CLI), written to the audit
 * log and sent in DEVICE_CREATED webhooks. A name with a bidi override (U+202E) or other control and
 * format characters makes it display as something else — "Alice's phone" spoofed next to the
 * fingerprint the Admin compares — or breaks log lines; a huge name floods every listing.
 *
 * Must hold: a device name is printable text — no Unicode control (Cc), format (Cf: bidi
 * overrides and isolates, zero-width characters), surrogate, private-use or unassigned code points,
 * no line or paragraph separators, no leading or trailing white space — of 1 to 64 characters;
 * anything else is a 422 naming `body.name`, and nothing is stored.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollmentBody, phoneKeys } from './device-fixtures.js';
import { type Harness, startHarness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ masterKey: false });
});
afterAll(async () => {
  await h?.close();
});

const count = async () => (await h.req('GET', '/admin/v1/devices', { token: h.adminToken })).body.total as number;

describe('device names are printable text without bidi overrides', () => {
  it('refuses a name with a right-to-left override (U+202E) and stores nothing', async () => {
    const before = await count();
    const r = await h.req('POST', '/devices/v1/enrollments', {
      body: enrollmentBody(await phoneKeys(), 'Alice\u202Eenohp s\u2019'),
    });
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ field: 'body.name' }] });
    expect(await count()).toBe(before);
  });

  it.each([
    ['left-to-right isolate U+2066', 'phone\u2066x\u2069'],
    ['right-to-left mark U+200F', '\u200Fphone'],
    ['zero-width space U+200B', 'ph\u200Bone'],
    ['byte order mark U+FEFF', '\uFEFFphone'],
    ['NUL', 'phone\u0000'],
    ['newline (forged log line)', 'phone\napproved by admin'],
    ['escape sequence', 'phone\u001b[2J'],
    ['line separator U+2028', 'phone\u2028x'],
    ['private use U+E000', 'phone\uE000'],
    ['lone surrogate', 'phone\uD800'],
    ['leading white space', ' phone'],
    ['only white space', '   '],
    ['65 characters', 'x'.repeat(65)],
  ])('refuses a name with %s', async (_what, name) => {
    const r = await h.req('POST', '/devices/v1/enrollments', { body: enrollmentBody(await phoneKeys(), name) });
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.errors?.[0]?.field).toBe('body.name');
  });

  it.each(['Pixel 8 Pro', 'Téléphone d’Émile', '山田の iPhone', 'هاتف أحمد', 'ops phone 📱', 'x'.repeat(64)])(
    'accepts the printable name %s',
    async (name) => {
      const r = await h.req('POST', '/devices/v1/enrollments', { body: enrollmentBody(await phoneKeys(), name) });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      const d = await h.req('GET', `/admin/v1/devices/${r.body.device_id}`, { token: h.adminToken });
      expect(d.body.name).toBe(name);
    },
  );
});
