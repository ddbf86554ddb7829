/**
 * Attack (#29, self-hosted webhook receivers): production mode refused every non-public target with
 * no way out; `webhooks.allowedTargets` now lets an operator name the private receivers it runs.
 * The allowlist must not open anything else.
 *
 * Must hold: with the list set to other ranges/names, loopback, private, link-local, the cloud
 * metadata address 169.254.169.254 and IPv4-mapped IPv6 forms stay refused — at registration and
 * at delivery; a name NOT listed stays refused when it resolves into a listed range (DNS
 * rebinding); a listed name reaches only private-network addresses (RFC 1918, ULA, CGNAT) or a
 * listed range — loopback, link-local and the metadata address behind a listed name stay refused
 * unless a listed range covers them; unspecified/multicast never; listed targets are registered and delivered to a real local HTTPS receiver.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCoordinator } from '../src/coordinator.js';
import { blockchainId } from '../src/directory.js';
import { WebhookTargetAllowlist } from '../src/webhooks/target-allowlist.js';
import { checkWebhookTarget } from '../src/webhooks/targets.js';
import { postOnce } from '../src/webhooks/worker.js';
import { startHarness } from './helpers.js';

const resolvesTo =
  (...addrs: string[]) =>
  async () =>
    addrs;

let certDir = '';
let tls: { key: Buffer; cert: Buffer };
let server: Server;
let port = 0;
let hits = 0;

beforeAll(async () => {
  certDir = await mkdtemp(join(tmpdir(), 'custodian-tls-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      join(certDir, 'key.pem'),
      '-out',
      join(certDir, 'cert.pem'),
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  );
  tls = { key: await readFile(join(certDir, 'key.pem')), cert: await readFile(join(certDir, 'cert.pem')) };
  server = createServer(tls, (req, res) => {
    req.resume();
    req.on('end', () => {
      hits++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  await rm(certDir, { recursive: true, force: true });
});

const OTHER = WebhookTargetAllowlist.parse(['10.20.0.0/16', 'fd00:1::/48', 'hooks.corp.internal', '*.lan.example']);

/** Literal targets that stay refused with {@link OTHER}. */
const STILL_REFUSED = [
  '127.0.0.1',
  '[::1]',
  '10.21.0.1',
  '192.168.1.1',
  '172.16.0.1',
  '169.254.169.254',
  '[fe80::1]',
  '[::ffff:127.0.0.1]',
  '[::ffff:169.254.169.254]',
  '[::ffff:10.21.0.1]',
  '[fd00:2::1]',
  '0.0.0.0',
];

describe('webhooks.allowedTargets parsing', () => {
  it('canonicalises ranges, names and suffixes', () => {
    const a = WebhookTargetAllowlist.parse([
      '10.20.0.0/16',
      '10.20.0.7',
      '::ffff:10.30.0.0/112',
      'FD00:1::/48',
      'Hooks.Corp.Internal.',
      '*.LAN.example',
      'hooks.corp.internal',
    ]);
    expect(a.ranges).toEqual(['10.20.0.0/16', '10.20.0.7/32', '10.30.0.0/16', 'fd00:1::/48']);
    expect(a.names).toEqual(['hooks.corp.internal']);
    expect(a.suffixes).toEqual(['.lan.example']);
    expect(WebhookTargetAllowlist.parse([]).empty).toBe(true);
  });

  it.each([
    ['10.0.0.1/8', /host bits/],
    ['*', /not a CIDR/],
    ['*.', /pattern/],
    ['https://hooks.corp.internal/', /webhooks\.allowedTargets\[1\]/],
    ['a..b', /not a CIDR/],
    ['hooks.*.internal', /not a CIDR/],
    ['300.1.2.3', /not an IPv4 or IPv6/],
    ['-bad.example', /not a CIDR/],
  ])('refuses %s naming its index', (entry, why) => {
    expect(() => WebhookTargetAllowlist.parse(['10.0.0.0/8', entry])).toThrow(RangeError);
    expect(() => WebhookTargetAllowlist.parse(['10.0.0.0/8', entry])).toThrow(why);
  });
});

describe('registration check (production) with an allowlist', () => {
  it.each(STILL_REFUSED)('literal %s stays refused when the list names other targets', async (host) => {
    await expect(checkWebhookTarget(`https://${host}/hook`, 'production', resolvesTo(), OTHER)).rejects.toThrow(
      /non-public/,
    );
  });

  it('a literal inside a listed range is accepted (also IPv4-mapped, also IPv6)', async () => {
    for (const host of ['10.20.3.4', '[::ffff:10.20.3.4]', '[fd00:1::5]']) {
      await expect(checkWebhookTarget(`https://${host}/hook`, 'production', resolvesTo(), OTHER)).resolves.toMatch(
        /^https:/,
      );
    }
  });

  it('a listed name is accepted when it resolves to a private-network address', async () => {
    for (const [host, addr] of [
      ['hooks.corp.internal', '10.99.0.1'],
      ['hooks.corp.internal', '100.64.1.2'],
      ['hooks.corp.internal', '172.16.5.5'],
      ['a.lan.example', '192.168.7.7'],
      ['x.y.lan.example', 'fd12::1'],
    ] as const) {
      await expect(checkWebhookTarget(`https://${host}/h`, 'production', resolvesTo(addr), OTHER)).resolves.toBe(
        `https://${host}/h`,
      );
    }
  });

  it('a name not listed resolving into a listed range is refused (DNS rebinding), with a hint', async () => {
    for (const host of ['evil.example.com', 'lan.example', 'xhooks.corp.internal', 'hooks.corp.internal.evil.com']) {
      await expect(
        checkWebhookTarget(`https://${host}/h`, 'production', resolvesTo('10.20.3.4'), OTHER),
        host,
      ).rejects.toThrow(/list the host name in webhooks\.allowedTargets/);
    }
    // the metadata address behind an unlisted name
    await expect(
      checkWebhookTarget(
        'https://metadata.example.com/h',
        'production',
        resolvesTo('93.184.215.14', '169.254.169.254'),
        OTHER,
      ),
    ).rejects.toThrow(/169\.254\.169\.254/);
  });

  it('a listed name resolving to loopback, link-local or the metadata address is refused', async () => {
    for (const addr of ['127.0.0.1', '169.254.169.254', '::1', 'fe80::1', '::ffff:127.0.0.1', '198.18.0.1']) {
      await expect(
        checkWebhookTarget('https://hooks.corp.internal/h', 'production', resolvesTo(addr), OTHER),
        addr,
      ).rejects.toThrow(/non-public/);
    }
    // ... unless a listed range explicitly covers the address
    const withRange = WebhookTargetAllowlist.parse(['hooks.corp.internal', '127.0.0.0/8']);
    await expect(
      checkWebhookTarget('https://hooks.corp.internal/h', 'production', resolvesTo('127.0.0.9'), withRange),
    ).resolves.toBe('https://hooks.corp.internal/h');
    await expect(
      checkWebhookTarget('https://hooks.corp.internal/h', 'production', resolvesTo('169.254.169.254'), withRange),
    ).rejects.toThrow(/169\.254\.169\.254/);
  });

  it('a listed name resolving to an unspecified or multicast address is refused', async () => {
    for (const addr of ['0.0.0.0', '224.0.0.1', '::', 'ff02::1']) {
      await expect(
        checkWebhookTarget('https://hooks.corp.internal/h', 'production', resolvesTo(addr), OTHER),
        addr,
      ).rejects.toThrow(/non-public/);
    }
  });
});

describe('delivery (production guard) with an allowlist, to a real local HTTPS receiver', () => {
  const post = (url: string, allow: WebhookTargetAllowlist) =>
    postOnce(url, { 'content-type': 'application/json' }, Buffer.from('{}'), {
      timeoutMs: 10_000,
      ca: tls.cert,
      guard: true,
      allow,
    });

  it('a listed range delivers to its IP literal; another list refuses it before connecting', async () => {
    const before = hits;
    expect(await post(`https://127.0.0.1:${port}/h`, WebhookTargetAllowlist.parse(['127.0.0.1/32']))).toEqual({
      status: 204,
      error: null,
    });
    expect(hits).toBe(before + 1);
    for (const host of ['127.0.0.1', '[::ffff:127.0.0.1]']) {
      expect(await post(`https://${host}:${port}/h`, OTHER)).toEqual({ status: null, error: 'ENONPUBLIC' });
    }
    expect(hits).toBe(before + 1);
  });

  it('a listed name delivers to loopback only with a listed loopback range; an unlisted name is refused at lookup', async () => {
    const before = hits;
    // the name alone does not open loopback
    expect(await post(`https://localhost:${port}/h`, WebhookTargetAllowlist.parse(['localhost']))).toEqual({
      status: null,
      error: 'ENONPUBLIC',
    });
    expect(hits).toBe(before);
    expect(
      await post(`https://localhost:${port}/h`, WebhookTargetAllowlist.parse(['localhost', '127.0.0.0/8', '::1'])),
    ).toEqual({ status: 204, error: null });
    expect(hits).toBe(before + 1);
    // 127.0.0.0/8 listed, but the name is not: the resolved loopback address is refused
    expect(await post(`https://localhost:${port}/h`, WebhookTargetAllowlist.parse(['127.0.0.0/8']))).toEqual({
      status: null,
      error: 'ENONPUBLIC',
    });
    expect(hits).toBe(before + 1);
  });
});

describe('a production coordinator with webhooks.allowedTargets', () => {
  it('registers and delivers to a listed private receiver, refuses the metadata address and other loopback', async () => {
    const h = await startHarness({
      coordinator: {
        mode: 'production',
        mail: { transport: 'file' },
        webhooks: { runWorker: false, allowedTargets: ['127.0.0.1/32'], worker: { ca: tls.cert } },
      },
    });
    try {
      const reg = (url: string) =>
        h.req('POST', `/admin/v1/profiles/${h.profileId}/webhooks`, {
          token: h.adminToken,
          body: { url, event_types: ['WALLET_CREATED'] },
        });
      for (const url of ['https://169.254.169.254/latest', 'https://127.0.0.2/h', 'https://[::1]/h']) {
        const r = await reg(url);
        expect(r.status, url).toBe(422);
        expect(r.body.code).toBe('VALIDATION_FAILED');
      }
      expect((await reg(`https://127.0.0.1:${port}/h`)).status).toBe(201);
      const before = hits;
      const w = await h.req('POST', `/api/v1/profiles/${h.profileId}/wallets`, {
        key: h.apiKey,
        headers: { 'Idempotency-Key': randomUUID() },
        body: { blockchain_ids: [blockchainId('ethereum-sepolia')], name: 'w' },
      });
      expect(w.status).toBe(201);
      expect(await h.c.webhooks.worker.runOnce()).toBe(1);
      expect(hits).toBe(before + 1);
      const n = await h.c.db.query<{ status: string }>(`SELECT status FROM webhook_notifications`);
      expect(n.map((r) => r.status)).toEqual(['DELIVERED']);
    } finally {
      await h.close();
    }
  });

  it('a bad allowedTargets entry stops creation with its index', async () => {
    await expect(
      createCoordinator({
        mode: 'production',
        mailboxDir: join(certDir, 'mailbox'),
        logger: false,
        webhooks: { allowedTargets: ['10.0.0.0/8', 'not a host'] },
      }),
    ).rejects.toThrow(/webhooks\.allowedTargets\[1\]/);
  });
});
