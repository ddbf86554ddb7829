/**
 * Attack (issue #26 item 11, device part): the device WebSocket (`/devices/v1/ws`) accepts anyone
 * until the hello, and today takes frames of up to 4 MiB (the largest CGGMP21 envelope) from a
 * socket nobody has authenticated, parses them, and keeps any number of such sockets open per
 * address for 10 s each — a cheap memory and CPU flood from one host.
 *
 * Must hold: before the hello a socket may send one small frame (the hello, at most
 * `DEVICE_HELLO_MAX_FRAME_BYTES`); a larger frame, or any frame that is not a decodable hello,
 * closes it (1009 too big, 4400 / 4401 otherwise) without parsing more; at most
 * `DEVICE_PRE_HELLO_PER_ADDRESS` sockets per client address wait for their hello at once (further
 * upgrades get HTTP 429); an authenticated device no longer counts against that cap.
 */

import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { DEVICE_HELLO_MAX_FRAME_BYTES, DEVICE_PRE_HELLO_PER_ADDRESS, DEVICE_WS_PATH } from '../src/devices/hub.js';
import { connectPhone, enrollPhone, phoneKeys, userIdOf } from './device-fixtures.js';
import { ADMIN_EMAIL, type Harness, startHarness } from './helpers.js';

/** Default per-address cap of sockets waiting for their hello. */
const CAP = DEVICE_PRE_HELLO_PER_ADDRESS;
/** Default largest pre-hello frame. */
const HELLO_MAX = DEVICE_HELLO_MAX_FRAME_BYTES;

let h: Harness;
const sockets: WebSocket[] = [];
beforeAll(async () => {
  h = await startHarness({
    masterKey: false,
    coordinator: { signing: { enabled: true, presignaturePool: 0 }, transfers: { runPipeline: false } },
  });
}, 60_000);
afterAll(async () => {
  for (const s of sockets) s.terminate();
  await h?.close();
});

/** Open a raw socket; resolves once it is open (true) or refused (false). */
function open(): { ws: WebSocket; opened: Promise<boolean>; closed: Promise<number> } {
  const ws = new WebSocket(`${h.url.replace(/^http/, 'ws')}${DEVICE_WS_PATH}`);
  sockets.push(ws);
  ws.on('error', () => undefined);
  const opened = new Promise<boolean>((resolve) => {
    ws.once('open', () => resolve(true));
    ws.once('unexpected-response', () => resolve(false));
    ws.once('close', () => resolve(false));
  });
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  return { ws, opened, closed };
}

/** `p`'s value, or 'timeout' after `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
  return Promise.race([p, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms).unref())]);
}

describe('the device socket before hello', () => {
  it('closes a socket whose first frame is larger than a hello (1009), without waiting for the timeout', async () => {
    const s = open();
    expect(await s.opened).toBe(true);
    s.ws.send(randomBytes(HELLO_MAX * 16));
    expect(await within(s.closed, 3000)).toBe(1009);
  });

  it('closes a socket whose first frame is not a decodable hello', async () => {
    const s = open();
    expect(await s.opened).toBe(true);
    for (let i = 0; i < 20; i++) s.ws.send(randomBytes(200));
    const code = await within(s.closed, 3000);
    expect(code).not.toBe('timeout');
    expect([4400, 4401]).toContain(code);
  });

  it(`lets at most ${CAP} sockets per address wait for their hello at once`, async () => {
    const batch = Array.from({ length: CAP * 2 }, () => open());
    const results = await Promise.all(batch.map((s) => s.opened));
    const accepted = results.filter(Boolean).length;
    expect(accepted).toBeLessThanOrEqual(CAP);
    expect(accepted).toBeGreaterThan(0);
    // closing them frees the slots
    for (const s of batch) s.ws.terminate();
    await Promise.all(batch.map((s) => s.closed));
    await new Promise((r) => setTimeout(r, 100));
    const again = open();
    expect(await again.opened).toBe(true);
    again.ws.terminate();
  });

  it('does not count an authenticated device against the cap', async () => {
    const adminId = await userIdOf(h, ADMIN_EMAIL);
    const phones = [];
    for (let i = 0; i < CAP; i++) {
      const keys = await phoneKeys();
      const id = await enrollPhone(h, keys, `phone ${i}`, { userId: adminId });
      const p = connectPhone(h, id, keys);
      sockets.push(p.ws);
      phones.push(p);
    }
    expect(await Promise.all(phones.map((p) => p.welcomed))).toEqual(Array(CAP).fill(true));
    const s = open();
    expect(await s.opened).toBe(true);
    s.ws.terminate();
  });
});

describe('the pre-hello caps behind a trusted proxy and in all', () => {
  let p: Harness;
  const mine: WebSocket[] = [];
  beforeAll(async () => {
    p = await startHarness({
      masterKey: false,
      coordinator: {
        trustProxy: ['127.0.0.1/8', '::1'],
        signing: { enabled: true, presignaturePool: 0, deviceSockets: { preHelloPerAddress: 2, preHelloTotal: 5 } },
        transfers: { runPipeline: false },
      },
    });
  }, 60_000);
  afterAll(async () => {
    for (const s of mine) s.terminate();
    await p?.close();
  });

  function openAs(forwardedFor: string): Promise<number | true> {
    const ws = new WebSocket(`${p.url.replace(/^http/, 'ws')}${DEVICE_WS_PATH}`, {
      headers: { 'x-forwarded-for': forwardedFor },
    });
    mine.push(ws);
    ws.on('error', () => undefined);
    return new Promise((resolve) => {
      ws.once('open', () => resolve(true));
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    });
  }

  it('counts per forwarded client address (429), and all addresses together (503)', async () => {
    // one client behind the proxy: two sockets, the third refused
    expect(await openAs('198.51.100.7')).toBe(true);
    expect(await openAs('198.51.100.7')).toBe(true);
    expect(await openAs('198.51.100.7')).toBe(429);
    // other clients behind the same proxy are not affected by it
    expect(await openAs('203.0.113.1')).toBe(true);
    expect(await openAs('203.0.113.2')).toBe(true);
    expect(await openAs('203.0.113.3')).toBe(true);
    // five waiting in all: the next one is refused whatever its address
    expect(await openAs('203.0.113.4')).toBe(503);
  });
});
