/**
 * The admin networks: the address ranges dashboard users are expected to log in from. A login from
 * outside them is "outside the role's scope" and emits ROLE_SCOPE_LOGIN (seed §6, Security) to the
 * instance-level webhooks. CIDR parsing and matching by ipaddr.js; IPv4-mapped IPv6 addresses
 * (`::ffff:a.b.c.d`) are matched as the IPv4 address they carry.
 */
import ipaddr from 'ipaddr.js';

/**
 * Default admin networks: loopback, the RFC 1918 private IPv4 ranges, IPv6 unique local
 * addresses (RFC 4193) — the networks of a self-hosted dashboard behind the operator's VPN or LAN.
 */
export const DEFAULT_ADMIN_NETWORKS: readonly string[] = [
  '127.0.0.0/8',
  '::1/128',
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  'fc00::/7',
];

/** A parsed admin network list (see {@link parseAdminNetworks}). */
export type AdminNetworks = readonly [ipaddr.IPv4 | ipaddr.IPv6, number][];

/**
 * Parse a list of CIDR ranges (`10.0.0.0/8`, `2001:db8::/32`) or single addresses (a /32 or /128).
 * An empty list means no network is inside: every login is outside the scope.
 * @throws RangeError naming `adminNetworks[i]` for an entry that is neither
 */
export function parseAdminNetworks(list: readonly string[]): AdminNetworks {
  return list.map((raw, i) => {
    const entry = raw.trim();
    try {
      if (entry.includes('/')) return ipaddr.parseCIDR(entry);
      const a = ipaddr.parse(entry);
      return [a, a.kind() === 'ipv4' ? 32 : 128] as [ipaddr.IPv4 | ipaddr.IPv6, number];
    } catch {
      throw new RangeError(`adminNetworks[${i}]: expected an IP address or CIDR range, got ${JSON.stringify(raw)}`);
    }
  });
}

/**
 * Whether the client address `ip` (as in `req.ip`) lies in one of `networks`. An address that
 * does not parse is outside.
 */
export function inAdminNetworks(ip: string, networks: AdminNetworks): boolean {
  if (!ipaddr.isValid(ip)) return false;
  const addr = ipaddr.process(ip); // ::ffff:a.b.c.d → IPv4
  return networks.some(([range, bits]) => addr.kind() === range.kind() && addr.match(range, bits));
}

/** Read `CUSTODIAN_ADMIN_NETWORKS` (comma-separated); unset → {@link DEFAULT_ADMIN_NETWORKS}. */
export function adminNetworksFromEnv(env: NodeJS.ProcessEnv = process.env): readonly string[] {
  const v = env.CUSTODIAN_ADMIN_NETWORKS;
  if (v === undefined) return DEFAULT_ADMIN_NETWORKS;
  return v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}
