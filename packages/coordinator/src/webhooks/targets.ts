/**
 * Webhook target checks (SSRF defence). A webhook URL must be `https:`; plain `http:` only to a
 * loopback host and only in development mode. In production mode the host is resolved (all A/AAAA
 * records) and refused when any address is loopback, private (RFC 1918, RFC 4193 ULA), link-local,
 * CGNAT (RFC 6598), unspecified, multicast, broadcast, documentation/benchmark or reserved space —
 * at registration, and again at every delivery through a guarded DNS `lookup` (so a DNS answer that
 * changes after registration, "DNS rebinding", cannot redirect deliveries into the network).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup as dnsLookupP } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { ApiError } from '../errors.js';

/** Whether a hostname is loopback (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

const blocked = new BlockList();
for (const [net, len] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(net, len, 'ipv4');
}
// IPv4-mapped IPv6 (::ffff:a.b.c.d) is checked on the embedded IPv4 address in isNonPublicAddress
// (BlockList maps IPv4 into that range itself, so it must not be blocked wholesale here).
for (const [net, len] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(net, len, 'ipv6');
}

/** Whether an IP address is outside the public internet (see the module comment). */
export function isNonPublicAddress(ip: string): boolean {
  const fam = isIP(ip);
  if (fam === 4) return blocked.check(ip, 'ipv4');
  if (fam === 6) {
    const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
    if (mapped?.[1] !== undefined) return blocked.check(mapped[1], 'ipv4');
    return blocked.check(ip, 'ipv6');
  }
  return true;
}

const fieldError = (message: string) =>
  new ApiError('VALIDATION_FAILED', `url: ${message}`, [{ field: 'body.url', message }]);

/**
 * Check a webhook URL for registration.
 * @param mode `development` allows `http://` to loopback and private targets; `production` resolves
 *   the host and refuses non-public addresses
 * @param resolve DNS resolver (all addresses of a host); injectable for tests
 * @returns the normalised URL
 * @throws ApiError VALIDATION_FAILED naming `body.url`
 */
export async function checkWebhookTarget(
  raw: string,
  mode: 'development' | 'production',
  resolve: (host: string) => Promise<string[]> = defaultResolve,
): Promise<string> {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw fieldError('must be an absolute URL');
  }
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const okHttp = u.protocol === 'http:' && mode === 'development' && isLoopbackHost(host);
  if (u.protocol !== 'https:' && !okHttp) {
    throw fieldError('webhook URLs must use https:// (plain http only to loopback in development mode)');
  }
  if (u.hash !== '') throw fieldError('must not have a #fragment');
  if (u.username !== '' || u.password !== '') throw fieldError('must not carry credentials');
  if (mode === 'production') {
    let addrs: string[];
    try {
      addrs = isIP(host) !== 0 ? [host] : await resolve(host);
    } catch {
      throw fieldError(`host ${host} does not resolve`);
    }
    if (addrs.length === 0) throw fieldError(`host ${host} does not resolve`);
    const bad = addrs.find(isNonPublicAddress);
    if (bad !== undefined)
      throw fieldError(`host ${host} resolves to a non-public address (${bad}); refused in production`);
  }
  return u.toString();
}

async function defaultResolve(host: string): Promise<string[]> {
  return (await dnsLookupP(host, { all: true, verbatim: true })).map((a) => a.address);
}

/**
 * A `lookup` for `https.request` that refuses non-public addresses (production deliveries).
 * Same signature as `dns.lookup`.
 */
export function guardedLookup(
  hostname: string,
  options: object,
  callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    const list = addresses as LookupAddress[];
    const bad = list.find((a) => isNonPublicAddress(a.address));
    if (bad !== undefined || list.length === 0) {
      const e: NodeJS.ErrnoException = new Error(
        `refusing to deliver to non-public address ${bad?.address ?? '(none)'}`,
      );
      e.code = 'ENONPUBLIC';
      return callback(e, []);
    }
    if ((options as { all?: boolean }).all === true) return callback(null, list);
    const first = list[0]!;
    callback(null, first.address, first.family);
  });
}
