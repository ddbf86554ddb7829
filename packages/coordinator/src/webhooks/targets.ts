/**
 * Webhook target checks (SSRF defence). A webhook URL must be `https:`; plain `http:` only to a
 * loopback host and only in development mode. In production mode the host is resolved (all A/AAAA
 * records) and refused unless every address is global unicast ({@link nonGlobalReason}) — at
 * registration, and again at every delivery through a guarded DNS `lookup` (so a DNS answer that
 * changes after registration, "DNS rebinding", cannot redirect deliveries into the network) and,
 * for a URL whose host is an IP literal (no lookup runs), by the delivery itself
 * (`worker.ts` `postOnce`).
 *
 * The operator's `webhooks.allowedTargets` ({@link WebhookTargetAllowlist}, default empty) lets a
 * self-hosted receiver on a private network through: an IP literal inside a listed range, or a
 * listed host name whatever it resolves to. Everything else stays under the rule above.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup as dnsLookupP } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { ApiError } from '../errors.js';
import { neverTarget, WebhookTargetAllowlist } from './target-allowlist.js';

/** Whether a hostname is loopback (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];
const table = (rows: [string, string][]): [Cidr, string][] => rows.map(([c, why]) => [ipaddr.parseCIDR(c), why]);

/**
 * Every block of the IANA IPv4 Special-Purpose Address Registry (RFC 6890 and later), whether
 * marked "globally reachable" or not (the anycast services in it are no webhook receivers), and
 * multicast (RFC 5771).
 */
const V4_REFUSED = table([
  ['0.0.0.0/8', 'this network'],
  ['10.0.0.0/8', 'private-use'],
  ['100.64.0.0/10', 'shared address space (CGNAT)'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private-use'],
  ['192.0.0.0/24', 'IETF protocol assignments'],
  ['192.0.2.0/24', 'documentation (TEST-NET-1)'],
  ['192.31.196.0/24', 'AS112-v4'],
  ['192.52.193.0/24', 'AMT'],
  ['192.88.99.0/24', 'deprecated 6to4 relay anycast'],
  ['192.168.0.0/16', 'private-use'],
  ['192.175.48.0/24', 'direct delegation AS112 service'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation (TEST-NET-2)'],
  ['203.0.113.0/24', 'documentation (TEST-NET-3)'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
  ['255.255.255.255/32', 'limited broadcast'],
]);

/** IPv6 global unicast (RFC 4291 §2.4, RFC 3587): everything outside is refused. */
const V6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');
/** Blocks of the IANA IPv6 Special-Purpose Address Registry inside 2000::/3. */
const V6_REFUSED = table([
  ['2001::/23', 'IETF protocol assignments (Teredo 2001::/32, benchmarking, ORCHID, AMT, …)'],
  ['2001:db8::/32', 'documentation'],
  ['2002::/16', '6to4'],
  ['2620:4f:8000::/48', 'direct delegation AS112 service'],
  ['3fff::/20', 'documentation'],
]);
/** IPv4-mapped (RFC 4291 §2.5.5.2): judged by the embedded IPv4 address. */
const V6_MAPPED = ipaddr.parseCIDR('::ffff:0:0/96');
/** NAT64 well-known prefix (RFC 6052 §2.1): judged by the embedded IPv4 address (last 32 bits). */
const V6_NAT64 = ipaddr.parseCIDR('64:ff9b::/96');

function v4Reason(a: ipaddr.IPv4): string | undefined {
  for (const [cidr, why] of V4_REFUSED) if (a.match(cidr)) return why;
  const r = a.range();
  return r === 'unicast' ? undefined : r;
}

/**
 * Why an address is not global unicast, or `undefined` when it is. IPv4: outside every IANA
 * special-purpose block and multicast. IPv6: inside 2000::/3 and outside every special-purpose
 * block (so `::/96` IPv4-compatible, `::ffff:0:0/96` SIIT, 64:ff9b:1::/48 local-use NAT64, 100::/64,
 * ULA, link- and site-local, multicast, 5f00::/16 SRv6 are refused as outside 2000::/3; 2001::/23
 * with Teredo, 2001:db8::/32, 2002::/16 6to4 and 3fff::/20 by the registry); IPv4-mapped
 * `::ffff:a.b.c.d` and NAT64 `64:ff9b::a.b.c.d` carry an IPv4 address and are judged by it. Classes
 * are ipaddr.js's (`range()`) plus the registry tables here.
 * @param ip an IPv4 or IPv6 address in a form `net.isIP` accepts (as URLs and DNS give them)
 * @returns a short reason (`loopback`, `6to4`, `outside global unicast 2000::/3`, …)
 */
export function nonGlobalReason(ip: string): string | undefined {
  if (isIP(ip) === 0) return 'not an IP address';
  const a = ipaddr.parse(ip);
  if (a.kind() === 'ipv4') return v4Reason(a as ipaddr.IPv4);
  const v6 = a as ipaddr.IPv6;
  if (v6.zoneId !== undefined) return 'scoped (zone) address';
  if (v6.match(V6_MAPPED)) {
    const inner = v4Reason(v6.toIPv4Address());
    return inner === undefined ? undefined : `IPv4-mapped ${inner}`;
  }
  if (v6.match(V6_NAT64)) {
    const inner = v4Reason(ipaddr.fromByteArray(v6.toByteArray().slice(12)) as ipaddr.IPv4);
    return inner === undefined ? undefined : `NAT64 to ${inner}`;
  }
  if (!v6.match(V6_GLOBAL_UNICAST)) {
    const r = v6.range();
    return r === 'unicast' || r === 'reserved' ? 'outside global unicast 2000::/3' : r;
  }
  for (const [cidr, why] of V6_REFUSED) if (v6.match(cidr)) return why;
  const r = v6.range();
  return r === 'unicast' ? undefined : r;
}

/** Whether an IP address is not global unicast ({@link nonGlobalReason}); true for a non-address. */
export function isNonPublicAddress(ip: string): boolean {
  return nonGlobalReason(ip) !== undefined;
}

const fieldError = (message: string) =>
  new ApiError('VALIDATION_FAILED', `url: ${message}`, [{ field: 'body.url', message }]);

/**
 * Check a webhook URL for registration.
 * @param mode `development` allows `http://` to loopback and private targets; `production` resolves
 *   the host and refuses it unless every address is global unicast ({@link nonGlobalReason})
 * @param resolve DNS resolver (all addresses of a host); injectable for tests
 * @param allow production exceptions (`webhooks.allowedTargets`): an IP literal inside a listed
 *   range, or a listed host name resolving to private-network addresses or into a listed range
 *   ({@link refusedAddress}); default none
 * @returns the normalised URL
 * @throws ApiError VALIDATION_FAILED naming `body.url`
 */
export async function checkWebhookTarget(
  raw: string,
  mode: 'development' | 'production',
  resolve: (host: string) => Promise<string[]> = defaultResolve,
  allow: WebhookTargetAllowlist = WebhookTargetAllowlist.EMPTY,
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
    const literal = isIP(host) !== 0;
    const bad = addrs.find((a) => refusedAddress(host, a, allow));
    if (bad !== undefined) {
      const hint = literal
        ? 'list its range in webhooks.allowedTargets to accept it'
        : allow.allowsName(host)
          ? 'a listed name reaches only private-network addresses; list a range covering this address in webhooks.allowedTargets to accept it'
          : 'list the host name in webhooks.allowedTargets to accept it';
      throw fieldError(
        `host ${host} resolves to a non-public address (${bad}: ${nonGlobalReason(bad) ?? 'not a unicast target'}); only global unicast addresses are accepted in production (${hint})`,
      );
    }
  }
  return u.toString();
}

async function defaultResolve(host: string): Promise<string[]> {
  return (await dnsLookupP(host, { all: true, verbatim: true })).map((a) => a.address);
}

/**
 * Whether production refuses address `ip` reached through URL host `host` (a name or the literal
 * itself): refused when it is not global unicast, unless the allowlist takes it — a literal inside
 * a listed range, or a listed name resolving to a private-network address (RFC 1918, ULA fc00::/7,
 * CGNAT 100.64.0.0/10) or into a listed range. Loopback, link-local (169.254.169.254 included) and
 * other special addresses behind a listed name need a listed range covering them; unspecified,
 * multicast and broadcast addresses are never targets.
 */
export function refusedAddress(host: string, ip: string, allow: WebhookTargetAllowlist): boolean {
  if (neverTarget(ip)) return true;
  if (!isNonPublicAddress(ip)) return false;
  if (isIP(host.replace(/^\[|\]$/g, '')) !== 0) return !allow.allowsAddress(ip);
  if (!allow.allowsName(host)) return true;
  return !(isPrivateNetworkAddress(ip) || allow.allowsAddress(ip));
}

const PRIVATE_NETWORK_RANGES = new Set(['private', 'uniqueLocal', 'carrierGradeNat']);

/** Whether `ip` is RFC 1918, ULA fc00::/7 or CGNAT 100.64.0.0/10 (IPv4-mapped forms count as IPv4). */
function isPrivateNetworkAddress(ip: string): boolean {
  try {
    return PRIVATE_NETWORK_RANGES.has(ipaddr.process(ip.split('%')[0]!).range());
  } catch {
    return false;
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for `https.request` that refuses non-public addresses (production deliveries), except
 * for a host name listed in `allow` ({@link refusedAddress}). Same signature as `dns.lookup`.
 */
export function guardedLookupFor(
  allow: WebhookTargetAllowlist,
): (hostname: string, options: object, callback: LookupCallback) => void {
  return (hostname, options, callback) => guardedLookupWith(allow, hostname, options, callback);
}

/** {@link guardedLookupFor} with the empty allowlist: every non-public address refused. */
export function guardedLookup(hostname: string, options: object, callback: LookupCallback): void {
  guardedLookupWith(WebhookTargetAllowlist.EMPTY, hostname, options, callback);
}

function guardedLookupWith(
  allow: WebhookTargetAllowlist,
  hostname: string,
  options: object,
  callback: LookupCallback,
): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    const list = addresses as LookupAddress[];
    const bad = list.find((a) => refusedAddress(hostname, a.address, allow));
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
