/**
 * Attack (#26 item 11, webhook targets / SSRF): the production check refused a list of non-public
 * ranges but let through IPv6 forms that carry or reach an internal IPv4 address —
 * IPv4-compatible `::a.b.c.d` (`::/96`), 6to4 `2002:AABB:CCDD::/48`, Teredo `2001:0::/32` — and
 * other special-purpose space (3fff::/20 documentation, 5f00::/16 SRv6, 2001:2::/48 benchmarking,
 * NAT64 local-use 64:ff9b:1::/48, anything outside 2000::/3). An Admin (or a stolen Admin
 * session) registers `https://[::127.0.0.1]/` or a hostname whose AAAA record is such an
 * address, and the coordinator's signed deliveries go to a service inside the network.
 *
 * Must hold: in production a webhook target is accepted only if every address (the literal, or
 * every A/AAAA record) is global unicast — IPv4 outside every IANA special-purpose block, IPv6
 * inside 2000::/3 and outside every special-purpose block; IPv4-mapped `::ffff:a.b.c.d` and NAT64
 * `64:ff9b::a.b.c.d` are judged by the embedded IPv4 address. The same check guards deliveries,
 * including an IP-literal URL (for which no DNS lookup runs) stored before this rule.
 */
import { describe, expect, it } from 'vitest';
import { checkWebhookTarget, isNonPublicAddress } from '../src/webhooks/targets.js';
import { postOnce } from '../src/webhooks/worker.js';

const resolvesTo =
  (...addrs: string[]) =>
  async () =>
    addrs;
const PUBLIC_V4 = '93.184.215.14';

/** Addresses that are not global unicast: [address, why]. */
const REFUSED: [string, string][] = [
  // IPv4
  ['0.1.2.3', 'this network 0/8'],
  ['10.1.2.3', 'private 10/8'],
  ['100.64.0.1', 'CGNAT 100.64/10'],
  ['127.0.0.1', 'loopback'],
  ['169.254.169.254', 'link-local (cloud metadata)'],
  ['172.16.5.4', 'private 172.16/12'],
  ['192.0.0.9', 'IETF protocol assignments 192.0.0/24'],
  ['192.0.2.1', 'TEST-NET-1'],
  ['192.31.196.1', 'AS112'],
  ['192.52.193.1', 'AMT'],
  ['192.88.99.1', '6to4 relay anycast'],
  ['192.168.1.1', 'private 192.168/16'],
  ['192.175.48.1', 'AS112 direct delegation'],
  ['198.18.0.1', 'benchmarking 198.18/15'],
  ['198.51.100.1', 'TEST-NET-2'],
  ['203.0.113.1', 'TEST-NET-3'],
  ['224.0.0.1', 'multicast'],
  ['240.0.0.1', 'reserved 240/4'],
  ['255.255.255.255', 'broadcast'],
  // IPv6
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['::7f00:1', 'IPv4-compatible ::127.0.0.1 (::/96)'],
  ['::a01:203', 'IPv4-compatible ::10.1.2.3'],
  ['::5db8:d70e', 'IPv4-compatible with a public IPv4 (deprecated, not global unicast)'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
  ['::ffff:a9fe:a9fe', 'IPv4-mapped link-local'],
  ['::ffff:0:a01:203', 'SIIT ::ffff:0:0/96'],
  ['64:ff9b::7f00:1', 'NAT64 well-known prefix to loopback'],
  ['64:ff9b::a00:1', 'NAT64 well-known prefix to 10.0.0.1'],
  ['64:ff9b:1::5db8:d70e', 'NAT64 local-use 64:ff9b:1::/48'],
  ['100::1', 'discard-only 100::/64'],
  ['2001::1', 'Teredo 2001::/32'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
  ['2001:2::1', 'benchmarking 2001:2::/48'],
  ['2001:10::1', 'ORCHID'],
  ['2001:20::1', 'ORCHIDv2'],
  ['2001:db8::1', 'documentation 2001:db8::/32'],
  ['2002:7f00:1::', '6to4 of 127.0.0.1'],
  ['2002:5db8:d70e::1', '6to4 of a public IPv4'],
  ['3fff::1', 'documentation 3fff::/20'],
  ['5f00::1', 'SRv6 SIDs 5f00::/16'],
  ['fc00::1', 'ULA'],
  ['fd12:3456::1', 'ULA'],
  ['fe80::1', 'link-local'],
  ['fec0::1', 'site-local (deprecated)'],
  ['ff02::1', 'multicast'],
  ['4000::1', 'outside 2000::/3'],
  ['e000::1', 'outside 2000::/3'],
];

const ACCEPTED = [
  PUBLIC_V4,
  '8.8.8.8',
  '1.1.1.1',
  '2606:4700:4700::1111',
  '2a00:1450:4001:830::200e',
  '::ffff:93.184.215.14',
  '64:ff9b::5db8:d70e',
];

describe('attack: webhook targets that reach internal addresses through IPv6 forms', () => {
  it.each(REFUSED)('refuses %s (%s) as a literal and as a DNS answer', async (ip) => {
    expect(isNonPublicAddress(ip)).toBe(true);
    const literal = ip.includes(':') ? `[${ip}]` : ip;
    await expect(checkWebhookTarget(`https://${literal}/hook`, 'production', resolvesTo(PUBLIC_V4))).rejects.toThrow(
      /non-public/,
    );
    await expect(
      checkWebhookTarget('https://hooks.example.com/hook', 'production', resolvesTo(PUBLIC_V4, ip)),
    ).rejects.toThrow(/non-public/);
  });

  it.each(ACCEPTED)('accepts the global unicast address %s', async (ip) => {
    expect(isNonPublicAddress(ip)).toBe(false);
    await expect(checkWebhookTarget('https://hooks.example.com/hook', 'production', resolvesTo(ip))).resolves.toBe(
      'https://hooks.example.com/hook',
    );
  });

  it('the URL forms of the brief: [::127.0.0.1], [2002:7f00:1::], Teredo', async () => {
    for (const url of [
      'https://[::127.0.0.1]/',
      'https://[2002:7f00:1::]/',
      'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/',
      'https://[::ffff:7f00:1]:8443/x',
    ]) {
      await expect(checkWebhookTarget(url, 'production', resolvesTo(PUBLIC_V4)), url).rejects.toThrow(/non-public/);
    }
  });

  it('a delivery to a stored IP-literal URL is refused before connecting (no DNS lookup guards it)', async () => {
    // Loopback literals only, so that a missing guard costs one refused local connection and no
    // packet leaves the machine.
    for (const url of ['https://127.0.0.1:9/x', 'https://[::1]:9/x', 'http://[::ffff:127.0.0.1]:9/x']) {
      const r = await postOnce(url, {}, new Uint8Array(), { timeoutMs: 2000, guard: true });
      expect(r, url).toEqual({ status: null, error: 'ENONPUBLIC' });
    }
    // The early exits settle the promise without throwing (they ran before the timer existed).
    await expect(postOnce('not a url', {}, new Uint8Array(), { timeoutMs: 2000, guard: true })).resolves.toEqual({
      status: null,
      error: 'invalid URL',
    });
  });
});
