/**
 * The operator's allowlist of webhook targets that production mode accepts although they are not
 * global unicast (#29, self-hosted receivers on a private network): config
 * `webhooks.allowedTargets`, default empty (every non-public target refused, `targets.ts`).
 *
 * Entries:
 * - an IPv4 or IPv6 CIDR range or bare address (`10.20.0.0/16`, `fd00:1::/48`, `10.20.0.7`):
 *   allows a URL whose host is an IP literal inside it (parsing and matching are the API keys'
 *   `api/cidrs.ts`, ipaddr.js; an IPv4-mapped IPv6 literal counts as its IPv4 address);
 * - a host name, exact (`hooks.corp.internal`) or suffix form (`*.corp.internal`: any name ending
 *   in `.corp.internal`, at any depth, not `corp.internal` itself): allows that name to resolve to
 *   private-network addresses (RFC 1918, ULA fc00::/7, CGNAT 100.64.0.0/10) or into a listed range
 *   — at registration and at every delivery. Loopback, link-local (the metadata address
 *   169.254.169.254) and other special addresses behind a listed name stay refused unless a listed
 *   range covers them (`targets.ts` refusedAddress).
 *
 * A name NOT listed never reaches a non-public address, even one inside a listed range: a public
 * name whose DNS answer turns private (DNS rebinding) stays refused. Whatever the list says,
 * unspecified (0.0.0.0/8, ::), multicast and broadcast addresses are never targets.
 */
import ipaddr from 'ipaddr.js';
import { addressAllowed, normaliseAllowedCidrs } from '../api/cidrs.js';
import { ApiError } from '../errors.js';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** Whether `name` is an ASCII (punycode) DNS name of labels `[a-z0-9-]`, ≤ 253 characters, not an IPv4 form. */
function isHostName(name: string): boolean {
  if (name.length === 0 || name.length > 253) return false;
  const labels = name.split('.');
  if (labels.every((l) => /^\d+$/.test(l))) return false; // 10.1.2 and the like are addresses, not names
  return labels.every((l) => LABEL.test(l));
}

/** Lower case, without a trailing root dot and IPv6 brackets: the form URL host names are compared in. */
function normaliseHost(host: string): string {
  return host
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.$/, '');
}

/** Parsed `webhooks.allowedTargets`. Immutable. */
export class WebhookTargetAllowlist {
  /** The empty list: every non-public target refused (the default). */
  static readonly EMPTY = new WebhookTargetAllowlist([], [], []);

  private constructor(
    /** Canonical CIDR ranges (`10.0.0.0/8`). */
    readonly ranges: readonly string[],
    /** Exact host names, lower case. */
    readonly names: readonly string[],
    /** Suffixes of the `*.` entries, with their leading dot (`.corp.internal`). */
    readonly suffixes: readonly string[],
  ) {}

  /**
   * Parse the config list.
   * @param entries CIDR ranges, addresses, host names and `*.suffix` patterns (see the module comment)
   * @param field the config key named in errors
   * @throws RangeError naming `field[i]` for an entry that is none of these (e.g. a range with host
   *   bits set, `*` alone, a URL, `*.` inside a name)
   */
  static parse(entries: readonly string[], field = 'webhooks.allowedTargets'): WebhookTargetAllowlist {
    if (!Array.isArray(entries)) throw new RangeError(`${field}: expected an array of strings`);
    const ranges: string[] = [];
    const names: string[] = [];
    const suffixes: string[] = [];
    for (const [i, raw] of entries.entries()) {
      if (typeof raw !== 'string') throw new RangeError(`${field}[${i}]: expected a string`);
      const entry = raw.trim();
      if (/^[\d.]+(\/\d+)?$/.test(entry) || entry.includes(':') || entry.includes('/')) {
        try {
          for (const r of normaliseAllowedCidrs([entry], `${field}[${i}]`)) if (!ranges.includes(r)) ranges.push(r);
        } catch (e) {
          const why = e instanceof ApiError ? (e.errors?.[0]?.message ?? e.message) : String(e);
          throw new RangeError(`${field}[${i}]: ${why}`);
        }
        continue;
      }
      const host = normaliseHost(entry);
      if (host.startsWith('*.')) {
        const base = host.slice(2);
        if (!isHostName(base)) throw new RangeError(`${field}[${i}]: not a host name pattern (use *.example.internal)`);
        if (!suffixes.includes(`.${base}`)) suffixes.push(`.${base}`);
        continue;
      }
      if (!isHostName(host)) {
        throw new RangeError(
          `${field}[${i}]: not a CIDR range, an address, a host name or a *.suffix pattern (names in ASCII/punycode)`,
        );
      }
      if (!names.includes(host)) names.push(host);
    }
    return new WebhookTargetAllowlist(ranges, names, suffixes);
  }

  /** Whether the list is empty (then only global unicast targets are accepted). */
  get empty(): boolean {
    return this.ranges.length === 0 && this.names.length === 0 && this.suffixes.length === 0;
  }

  /** Whether an IP-literal URL host lies inside a listed range (and is not a never-target address). */
  allowsAddress(ip: string): boolean {
    return !neverTarget(ip) && addressAllowed(this.ranges, normaliseHost(ip));
  }

  /**
   * Whether a host NAME is listed (exact, or under a `*.` suffix), so that it may resolve to
   * private-network addresses or into a listed range. An IP literal is never a listed name (see {@link allowsAddress}).
   */
  allowsName(host: string): boolean {
    const h = normaliseHost(host);
    return this.names.includes(h) || this.suffixes.some((s) => h.endsWith(s));
  }
}

/** Addresses that are never webhook targets, allowlist or not: unspecified, 0.0.0.0/8, multicast, broadcast. */
export function neverTarget(ip: string): boolean {
  let a: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    a = ipaddr.process(normaliseHost(ip).split('%')[0]!);
  } catch {
    return true;
  }
  const r = a.range();
  if (r === 'unspecified' || r === 'multicast' || r === 'broadcast') return true;
  return a.kind() === 'ipv4' && (a as ipaddr.IPv4).octets[0] === 0;
}
