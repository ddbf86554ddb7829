/**
 * API key address allowlists (#26 item 12): parsing and matching of the CIDR ranges an API key may
 * be used from. Parsing and matching are ipaddr.js's (the library behind proxy-addr, which gives
 * fastify its `req.ip`); IPv4-mapped IPv6 addresses and ranges (`::ffff:10.0.0.0/104`) count as IPv4.
 */
import ipaddr from 'ipaddr.js';
import { ApiError, type FieldError } from '../errors.js';

/** Most ranges one key may carry. */
export const MAX_ALLOWED_CIDRS = 64;

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** A range with an IPv4-mapped IPv6 network turned into its IPv4 range (prefix − 96). */
function unmap([addr, bits]: Range): Range {
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
    return [(addr as ipaddr.IPv6).toIPv4Address(), bits - 96];
  }
  return [addr, bits];
}

/** Parse one entry: a CIDR range, or a bare address (a /32 or /128). null when neither. */
function parseEntry(s: string): Range | null {
  const t = s.trim();
  try {
    if (t.includes('/')) {
      // parseCIDR is lenient about leading zeros and octal/hex IPv4 forms; require the strict dotted form.
      if (!ipaddr.IPv4.isValidCIDRFourPartDecimal(t) && !ipaddr.IPv6.isValidCIDR(t)) return null;
      return ipaddr.parseCIDR(t) as Range;
    }
    if (!ipaddr.IPv4.isValidFourPartDecimal(t) && !ipaddr.IPv6.isValid(t)) return null;
    const a = ipaddr.parse(t);
    return [a, a.kind() === 'ipv4' ? 32 : 128];
  } catch {
    return null;
  }
}

/** Canonical text of a range: `10.0.0.0/8`, `2001:db8::/32` (RFC 5952 lower-case, compressed). */
function rangeText([addr, bits]: Range): string {
  return `${addrText(addr)}/${bits}`;
}

function addrText(addr: ipaddr.IPv4 | ipaddr.IPv6): string {
  return addr.kind() === 'ipv4' ? addr.toString() : (addr as ipaddr.IPv6).toRFC5952String();
}

/**
 * Validate and normalise an `allowed_cidrs` list: each entry an IPv4 or IPv6 CIDR range whose
 * host bits are zero, or a bare address (stored as /32 or /128); IPv4-mapped IPv6 ranges become
 * IPv4 ranges; duplicates are dropped, order kept.
 * @param field the request field, e.g. `body.allowed_cidrs`
 * @returns the canonical strings (e.g. `['10.0.0.0/8', '2001:db8::/64']`)
 * @throws ApiError VALIDATION_FAILED naming `field[i]` for each bad entry, or `field` for an empty or too long list
 */
export function normaliseAllowedCidrs(list: readonly string[], field: string): string[] {
  if (list.length === 0 || list.length > MAX_ALLOWED_CIDRS) {
    throw new ApiError('VALIDATION_FAILED', `${field}: give 1 to ${MAX_ALLOWED_CIDRS} ranges, or omit it`, [
      { field, message: `1 to ${MAX_ALLOWED_CIDRS} ranges (omit for any address)` },
    ]);
  }
  const errors: FieldError[] = [];
  const out: string[] = [];
  for (const [i, entry] of list.entries()) {
    const parsed = parseEntry(entry);
    if (parsed === null) {
      errors.push({ field: `${field}[${i}]`, message: 'not an IPv4 or IPv6 address or CIDR range' });
      continue;
    }
    const r = unmap(parsed);
    const network =
      r[0].kind() === 'ipv4'
        ? ipaddr.IPv4.networkAddressFromCIDR(rangeText(r))
        : ipaddr.IPv6.networkAddressFromCIDR(rangeText(r));
    if (addrText(network) !== addrText(r[0])) {
      errors.push({
        field: `${field}[${i}]`,
        message: `host bits are set; the range is ${addrText(network)}/${r[1]}`,
      });
      continue;
    }
    const text = rangeText(r);
    if (!out.includes(text)) out.push(text);
  }
  if (errors.length > 0) throw new ApiError('VALIDATION_FAILED', `${errors[0]!.field}: ${errors[0]!.message}`, errors);
  return out;
}

/**
 * Whether a client address (`req.ip`) lies in one of the ranges (canonical strings from
 * {@link normaliseAllowedCidrs}). An IPv4-mapped IPv6 address is matched as IPv4; a zone index
 * (`fe80::1%eth0`) is ignored. An address that does not parse matches nothing.
 */
export function addressAllowed(ranges: readonly string[], ip: string): boolean {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.process(ip.split('%')[0]!);
  } catch {
    return false;
  }
  for (const text of ranges) {
    const r = parseEntry(text);
    if (r === null) continue;
    const [net, bits] = unmap(r);
    if (net.kind() === addr.kind() && addr.match(net, bits)) return true;
  }
  return false;
}
