/**
 * Issue #27 item 3 (device side): a device whose WebSocket closes during a ceremony. A real
 * coordinator (PGlite, signing services with the device hub on its HTTP socket) and an approved
 * device connected over a real WebSocket speaking the device protocol (challenge → P-256-signed
 * hello → welcome). The gateway's dispatch sends the device a SIGN ceremony (deadline 10 min); the
 * device receives the invitation and its socket closes: the dispatch sees the device fail at once,
 * as UNAVAILABLE (unreachable, a retry for the pipeline), not as an abort or at the deadline.
 */
import { randomBytes } from 'node:crypto';
import { type DeviceFrame, decodeDeviceFrame, deviceHelloDigest, encodeDeviceFrame } from '@custodian/signer-client';
import { CeremonyKind, DEFAULT_LIMITS, deviceSign } from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { DEVICE_MAX_FRAME_BYTES, DEVICE_WS_PATH } from '../src/devices/hub.js';
import { dispatchCeremony, mapSignResults } from '../src/signing/gateway.js';
import { enrollmentBody, phoneKeys, userIdOf } from './device-fixtures.js';
import { ADMIN_EMAIL, type Harness, startHarness } from './helpers.js';

let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    masterKey: false,
    coordinator: { signing: { enabled: true, presignaturePool: 0 }, transfers: { runPipeline: false } },
  });
}, 90_000);

afterAll(async () => {
  await h?.close();
});

describe('a device whose socket closes during a ceremony', () => {
  it('fails at once in the dispatch, as unavailable', async () => {
    const sk = p256.utils.randomSecretKey();
    const keys = await phoneKeys(sk);
    const e = await h.req('POST', '/devices/v1/enrollments', { body: enrollmentBody(keys, 'phone') });
    expect(e.status).toBe(201);
    const deviceId: string = e.body.device_id;
    const a = await h.req('POST', `/admin/v1/devices/${deviceId}/approve`, {
      token: h.adminToken,
      body: { fingerprint: e.body.fingerprint, user_id: await userIdOf(h, ADMIN_EMAIL) },
    });
    expect(a.status).toBe(200);

    const ws = new WebSocket(`${h.url.replace(/^http/, 'ws')}${DEVICE_WS_PATH}`, {
      maxPayload: DEVICE_MAX_FRAME_BYTES,
    });
    ws.on('error', () => undefined);
    const frames: DeviceFrame[] = [];
    const welcomed = new Promise<void>((resolve) => {
      ws.on('message', (data: Buffer) => {
        const d = decodeDeviceFrame(new Uint8Array(data), {
          ...DEFAULT_LIMITS,
          maxMessageBytes: DEVICE_MAX_FRAME_BYTES,
        });
        if (!d.ok) throw new Error(`undecodable frame from the hub: ${d.reason}`);
        frames.push(d.frame);
        const c = d.frame.challenge;
        if (c) {
          const digest = deviceHelloDigest(c.nonce, c.coordinatorPeerId, deviceId, keys.mpcPeerId);
          ws.send(
            encodeDeviceFrame({ hello: { deviceId, mpcPeerId: keys.mpcPeerId, signature: deviceSign(digest, sk) } }),
          );
        }
        if (d.frame.welcome) resolve();
      });
    });
    await welcomed;

    const signing = h.c.signing!;
    const party = { kind: 'device' as const, id: deviceId };
    const invitations = () => frames.filter((f) => f.invitation).length;
    const seen = invitations();
    const dispatched = dispatchCeremony(
      { control: signing.control, devices: signing.hub },
      [{ party, peerId: keys.mpcPeerId }],
      {
        ceremonyId: randomBytes(24),
        kind: CeremonyKind.SIGN,
        parties: [{ peerId: keys.mpcPeerId }],
        threshold: 0,
        deadlineUnixMs: Date.now() + 600_000,
      },
      undefined,
      { abortOnFailure: true },
    );
    for (let i = 0; i < 200 && invitations() === seen; i++) await new Promise((r) => setTimeout(r, 25));
    expect(invitations()).toBeGreaterThan(seen);
    ws.close(1000, 'phone went away');
    const results = await dispatched;
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ party, unreachable: true });
    expect(results[0]?.result.error).toMatch(/disconnected during the ceremony/);
    const mapped = mapSignResults({ algorithm: 'SECP256K1_ECDSA', digests: [new Uint8Array(32)] }, [], results);
    expect(mapped).toMatchObject({ ok: false, reason: 'UNAVAILABLE', unavailable: [{ party }] });
  });
});
