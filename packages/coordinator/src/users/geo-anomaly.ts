/**
 * Login network anomaly rule (seed §6 "Security": GEO_ANOMALY_DETECTED). The instance ships no
 * GeoIP database (none maintained with a free bundled database fits), so the rule is by IP range:
 *
 * - A client address maps to its network: IPv4 → its /24 (`203.0.113.0/24`), IPv6 → its /48
 *   (`2001:db8:1::/48`); an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) counts as IPv4.
 * - Every successful login (second step) records the network in `login_networks`
 *   (first_seen_at / last_seen_at) in the login's transaction.
 * - A login from a network the user has NOT logged in from before, when the user has logged in
 *   before from at least one other network, emits GEO_ANOMALY_DETECTED (instance-level webhooks
 *   only). The first login ever records without an alert.
 *
 * The client address is `req.ip` as the server determines it: the socket peer, or the
 * X-Forwarded-For hop of a proxy listed in `trustProxy` — a client cannot choose it otherwise.
 * The event carries the user id and e-mail, the client address, the network and the count of
 * networks seen before; never the password, the code or the session token.
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { Queryable } from '../db/db.js';
import type { Clock } from '../util.js';
import { emitInstanceEvent } from '../webhooks/outbox.js';

/** Prefix lengths of the rule: an IPv4 /24, an IPv6 /48. */
export const LOGIN_NETWORK_PREFIX = { ipv4: 24, ipv6: 48 } as const;

/** The eight 16-bit groups of an IPv6 address (`::` expanded, embedded IPv4 tail converted). */
function ipv6Groups(ip: string): number[] {
  let s = ip.toLowerCase();
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (tail !== null) {
    const o = tail[1]!.split('.').map(Number);
    s = `${s.slice(0, -tail[1]!.length)}${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}`;
  }
  const [head, rest] = s.split('::') as [string, string | undefined];
  const h = head === '' ? [] : head.split(':');
  const r = rest === undefined || rest === '' ? [] : rest.split(':');
  const fill = rest === undefined ? [] : new Array(8 - h.length - r.length).fill('0');
  return [...h, ...fill, ...r].map((g) => Number.parseInt(g, 16));
}

/**
 * The network of a client address under {@link LOGIN_NETWORK_PREFIX}: `a.b.c.0/24` for IPv4 (and
 * IPv4-mapped IPv6), `x:y:z::/48` (lower-case hex, no leading zeros) for IPv6.
 * @throws TypeError when `ip` is not an IP address
 */
export function loginNetworkOf(ip: string): string {
  if (isIPv4(ip)) return `${ip.split('.').slice(0, 3).join('.')}.0/24`;
  if (!isIPv6(ip)) throw new TypeError(`not an IP address: ${JSON.stringify(ip)}`);
  const g = ipv6Groups(ip);
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) {
    return `${g[6]! >> 8}.${g[6]! & 0xff}.${g[7]! >> 8}.0/24`;
  }
  return `${g
    .slice(0, 3)
    .map((x) => x.toString(16))
    .join(':')}::/48`;
}

/**
 * Record a successful login's network for `user` and emit GEO_ANOMALY_DETECTED when it is new
 * for a user who has logged in before (see the module comment). Call in the login's transaction.
 * @param clientIp `req.ip`
 * @returns whether the event was emitted
 */
export async function recordLoginNetwork(
  q: Queryable,
  clock: Clock,
  user: { user_id: string; email: string },
  clientIp: string,
): Promise<boolean> {
  const network = loginNetworkOf(clientIp);
  const now = clock();
  const seen = await q.query<{ network: string }>('SELECT network FROM login_networks WHERE user_id = $1 FOR UPDATE', [
    user.user_id,
  ]);
  if (seen.some((s) => s.network === network)) {
    await q.query('UPDATE login_networks SET last_seen_at = $3 WHERE user_id = $1 AND network = $2', [
      user.user_id,
      network,
      now,
    ]);
    return false;
  }
  await q.query(
    'INSERT INTO login_networks (user_id, network, first_seen_at, last_seen_at) VALUES ($1,$2,$3,$3) ON CONFLICT DO NOTHING',
    [user.user_id, network, now],
  );
  if (seen.length === 0) return false;
  await emitInstanceEvent(q, clock, 'GEO_ANOMALY_DETECTED', {
    user_id: user.user_id,
    email: user.email,
    ip: clientIp,
    network,
    previous_networks: seen.length,
  });
  return true;
}

/** The networks a user has logged in from, oldest first (admin API). */
export async function listLoginNetworks(
  q: Queryable,
  userId: string,
): Promise<{ network: string; first_seen_at: Date; last_seen_at: Date }[]> {
  return q.query(
    'SELECT network, first_seen_at, last_seen_at FROM login_networks WHERE user_id = $1 ORDER BY first_seen_at, network',
    [userId],
  );
}
