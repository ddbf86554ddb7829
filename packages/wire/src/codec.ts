/**
 * Size-limited protobuf codecs over reflected types, and the converter between the round runtime's
 * {@link Canonical} message bodies and protobuf messages.
 *
 * Converter rules (one protobuf message per round; field names = body record keys, camel-cased):
 * - message ↔ record; every field of the message must be present in the record (so decode(encode(b))
 *   is exactly b, which the broadcast echo relies on), except members of a `oneof`;
 * - `bytes` ↔ Uint8Array; `string` ↔ string; `bool` ↔ boolean; `uint32`/`uint64` ↔ number (safe
 *   non-negative integer); `custodian.v1.BigInt` ↔ bigint; `custodian.v1.EchoRound` ↔ null;
 *   `custodian.v1.Value` ↔ any Canonical value (self-describing fallback); `repeated` ↔ array.
 * Decoding never throws: malformed bytes, oversized messages or fields, too-deep nesting and schema
 * mismatches are returned as a {@link WireRejection}.
 */
import type { Canonical } from '@custodian/crypto';
import protobuf from 'protobufjs';
import { accept, reject, WireError, type WireResult } from './errors.js';

/** Size limits applied when decoding untrusted bytes. */
export interface WireLimits {
  /** Maximum serialized message size in bytes (default 4 MiB). */
  readonly maxMessageBytes: number;
  /** Maximum length of one bytes/string field in bytes (default 1 MiB). */
  readonly maxFieldBytes: number;
  /** Maximum number of items of one repeated field (default 4096). */
  readonly maxRepeated: number;
  /** Maximum nesting depth of messages (default 32). */
  readonly maxDepth: number;
}

/** Defaults: generous enough for CGGMP21 proofs with 3072-bit Paillier moduli, small enough to bound memory. */
export const DEFAULT_LIMITS: WireLimits = {
  maxMessageBytes: 4 * 1024 * 1024,
  maxFieldBytes: 1024 * 1024,
  maxRepeated: 4096,
  maxDepth: 32,
};

/** Thrown by the converter on a schema or limit violation; caught and turned into a rejection at the API. */
export class WireSchemaError extends WireError {
  constructor(message: string) {
    super('WIRE_SCHEMA_VIOLATION', message);
  }
}

const BIGINT = 'custodian.v1.BigInt';
const ECHO = 'custodian.v1.EchoRound';
const VALUE = 'custodian.v1.Value';

function fullName(t: protobuf.Type): string {
  return t.fullName.replace(/^\./, '');
}

/**
 * Decode `bytes` as `type`, enforcing `limits.maxMessageBytes` before parsing.
 * Never throws; returns a rejection with code `oversize` or `malformed`.
 */
export function decodeMessage(
  type: protobuf.Type,
  bytes: unknown,
  limits: WireLimits = DEFAULT_LIMITS,
): WireResult<protobuf.Message> {
  if (!(bytes instanceof Uint8Array)) return reject('malformed', `${type.name}: not bytes`);
  if (bytes.length > limits.maxMessageBytes) {
    return reject('oversize', `${type.name}: ${bytes.length} bytes exceeds the limit of ${limits.maxMessageBytes}`);
  }
  try {
    return accept(type.decode(bytes));
  } catch (e) {
    return reject(
      'malformed',
      `${type.name}: invalid protobuf (${e instanceof Error ? e.message.slice(0, 120) : 'decode error'})`,
    );
  }
}

/**
 * Encode a plain object as `type` (protobufjs `fromObject` semantics are not used: the object must
 * already hold the right JS types).
 * @throws WireSchemaError when the object does not fit the type (a sender-side bug)
 */
export function encodeMessage(type: protobuf.Type, value: Record<string, unknown>): Uint8Array {
  const problem = type.verify(value);
  if (problem) throw new WireSchemaError(`${type.name}: ${problem}`);
  return type.encode(type.create(value)).finish();
}

// ---------- Canonical → protobuf ----------

function safeNumber(v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new WireSchemaError(`${field}: expected a non-negative safe integer`);
  }
  return v;
}

function magnitudeBytes(v: bigint): Uint8Array {
  let m = v < 0n ? -v : v;
  const out: number[] = [];
  while (m > 0n) {
    out.push(Number(m & 0xffn));
    m >>= 8n;
  }
  return Uint8Array.from(out.reverse());
}

function valueToProto(v: Canonical, path: string, depth: number): Record<string, unknown> {
  if (depth > DEFAULT_LIMITS.maxDepth) throw new WireSchemaError(`${path}: nesting too deep`);
  if (v instanceof Uint8Array) return { bytesValue: v };
  switch (typeof v) {
    case 'bigint':
      return { bigintValue: { magnitude: magnitudeBytes(v), negative: v < 0n } };
    case 'string':
      return { stringValue: v };
    case 'number':
      return { numberValue: safeNumber(v, path) };
    case 'boolean':
      return { boolValue: v };
    case 'object': {
      if (v === null) return { nullValue: true };
      if (Array.isArray(v)) {
        return {
          listValue: { items: (v as readonly Canonical[]).map((x, i) => valueToProto(x, `${path}[${i}]`, depth + 1)) },
        };
      }
      const rec = v as { readonly [k: string]: Canonical | undefined };
      const entries = Object.keys(rec)
        .filter((k) => rec[k] !== undefined)
        .sort()
        .map((k) => ({ key: k, value: valueToProto(rec[k] as Canonical, `${path}.${k}`, depth + 1) }));
      return { recordValue: { entries } };
    }
    default:
      throw new WireSchemaError(`${path}: unsupported type ${typeof v}`);
  }
}

function scalarToProto(field: protobuf.Field, v: unknown, path: string): unknown {
  switch (field.type) {
    case 'bytes':
      if (!(v instanceof Uint8Array)) throw new WireSchemaError(`${path}: expected bytes`);
      return v;
    case 'string':
      if (typeof v !== 'string') throw new WireSchemaError(`${path}: expected a string`);
      return v;
    case 'bool':
      if (typeof v !== 'boolean') throw new WireSchemaError(`${path}: expected a boolean`);
      return v;
    case 'uint32':
      if (safeNumber(v, path) > 0xffff_ffff) throw new WireSchemaError(`${path}: exceeds uint32`);
      return v;
    case 'uint64':
      return safeNumber(v, path);
    default:
      throw new WireSchemaError(`${path}: field type ${field.type} is not supported by the converter`);
  }
}

function toProto(type: protobuf.Type, body: unknown, path: string, depth: number): Record<string, unknown> | null {
  const name = fullName(type);
  if (depth > DEFAULT_LIMITS.maxDepth) throw new WireSchemaError(`${path}: nesting too deep`);
  if (name === BIGINT) {
    if (typeof body !== 'bigint') throw new WireSchemaError(`${path}: expected a bigint`);
    return { magnitude: magnitudeBytes(body), negative: body < 0n };
  }
  if (name === ECHO) {
    if (body !== null) throw new WireSchemaError(`${path}: echo round body must be null`);
    return {};
  }
  if (name === VALUE) return valueToProto(body as Canonical, path, depth);
  if (typeof body !== 'object' || body === null || Array.isArray(body) || body instanceof Uint8Array) {
    throw new WireSchemaError(`${path}: expected a record for ${type.name}`);
  }
  const rec = body as Record<string, unknown>;
  for (const k of Object.keys(rec)) {
    if (rec[k] !== undefined && !type.fields[k]) throw new WireSchemaError(`${path}.${k}: not a field of ${type.name}`);
  }
  const out: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    const v = rec[field.name];
    const fp = `${path}.${field.name}`;
    if (v === undefined) {
      if (field.partOf) continue;
      throw new WireSchemaError(`${fp}: missing`);
    }
    const one = (x: unknown, p: string) =>
      field.resolvedType instanceof protobuf.Type
        ? toProto(field.resolvedType, x, p, depth + 1)
        : scalarToProto(field, x, p);
    if (field.repeated) {
      if (!Array.isArray(v)) throw new WireSchemaError(`${fp}: expected a list`);
      out[field.name] = v.map((x, i) => one(x, `${fp}[${i}]`));
    } else {
      out[field.name] = one(v, fp);
    }
  }
  return out;
}

/**
 * Encode a runtime body as the protobuf message `type`.
 * @throws WireSchemaError when the body does not match the schema (a protocol/schema mismatch: a bug)
 */
export function canonicalToBytes(type: protobuf.Type, body: Canonical): Uint8Array {
  const obj = toProto(type, body, type.name, 0) as Record<string, unknown>;
  return type.encode(type.fromObject(obj)).finish();
}

// ---------- protobuf → Canonical ----------

function copy(b: Uint8Array): Uint8Array {
  return Uint8Array.prototype.slice.call(b);
}

function toSafeNumber(v: unknown, path: string): number {
  let n: number;
  if (typeof v === 'number') n = v;
  else if (v !== null && typeof v === 'object' && 'toString' in v) n = Number(BigInt(String(v)));
  else throw new WireSchemaError(`${path}: not a number`);
  if (!Number.isSafeInteger(n) || n < 0) throw new WireSchemaError(`${path}: not a safe non-negative integer`);
  return n;
}

function checkBytes(b: unknown, path: string, limits: WireLimits): Uint8Array {
  // protobufjs's default for an absent bytes field is an empty plain array
  if (b === undefined || b === null || (Array.isArray(b) && b.length === 0)) return new Uint8Array(0);
  if (!(b instanceof Uint8Array)) throw new WireSchemaError(`${path}: expected bytes`);
  if (b.length > limits.maxFieldBytes)
    throw new WireSchemaError(`${path}: field of ${b.length} bytes exceeds the limit`);
  return copy(b);
}

function bigintFrom(m: Record<string, unknown>, path: string, limits: WireLimits): bigint {
  const mag = checkBytes(m.magnitude, `${path}.magnitude`, limits);
  if (mag.length > 0 && mag[0] === 0) throw new WireSchemaError(`${path}: non-minimal magnitude`);
  let v = 0n;
  for (const byte of mag) v = (v << 8n) | BigInt(byte);
  if (m.negative === true) {
    if (v === 0n) throw new WireSchemaError(`${path}: negative zero`);
    return -v;
  }
  return v;
}

function valueFrom(m: Record<string, unknown>, path: string, depth: number, limits: WireLimits): Canonical {
  if (depth > limits.maxDepth) throw new WireSchemaError(`${path}: nesting too deep`);
  const own = (k: string) => Object.hasOwn(m, k) && m[k] !== undefined && m[k] !== null;
  if (own('bytesValue')) return checkBytes(m.bytesValue, path, limits);
  if (own('bigintValue')) return bigintFrom(m.bigintValue as Record<string, unknown>, path, limits);
  if (own('stringValue')) {
    const s = m.stringValue as string;
    if (s.length > limits.maxFieldBytes) throw new WireSchemaError(`${path}: string exceeds the limit`);
    return s;
  }
  if (own('numberValue')) return toSafeNumber(m.numberValue, path);
  if (own('boolValue')) return m.boolValue as boolean;
  if (own('nullValue')) return null;
  if (own('listValue')) {
    const items = ((m.listValue as Record<string, unknown>).items ?? []) as Record<string, unknown>[];
    if (items.length > limits.maxRepeated) throw new WireSchemaError(`${path}: too many items`);
    return items.map((x, i) => valueFrom(x, `${path}[${i}]`, depth + 1, limits));
  }
  if (own('recordValue')) {
    const entries = ((m.recordValue as Record<string, unknown>).entries ?? []) as Record<string, unknown>[];
    if (entries.length > limits.maxRepeated) throw new WireSchemaError(`${path}: too many entries`);
    const out: Record<string, Canonical> = {};
    for (const e of entries) {
      const key = String(e.key ?? '');
      if (Object.hasOwn(out, key)) throw new WireSchemaError(`${path}: duplicate key`);
      if (key === '__proto__') throw new WireSchemaError(`${path}: forbidden key`);
      out[key] = valueFrom((e.value ?? {}) as Record<string, unknown>, `${path}.${key}`, depth + 1, limits);
    }
    return out;
  }
  throw new WireSchemaError(`${path}: empty value`);
}

function scalarFrom(field: protobuf.Field, v: unknown, path: string, limits: WireLimits): Canonical {
  switch (field.type) {
    case 'bytes':
      return checkBytes(v, path, limits);
    case 'string': {
      const s = (v ?? '') as string;
      if (s.length > limits.maxFieldBytes) throw new WireSchemaError(`${path}: string exceeds the limit`);
      return s;
    }
    case 'bool':
      return v === true;
    case 'uint32':
    case 'uint64':
      return toSafeNumber(v ?? 0, path);
    default:
      throw new WireSchemaError(`${path}: field type ${field.type} is not supported by the converter`);
  }
}

function fromProto(
  type: protobuf.Type,
  m: Record<string, unknown>,
  path: string,
  depth: number,
  limits: WireLimits,
): Canonical {
  if (depth > limits.maxDepth) throw new WireSchemaError(`${path}: nesting too deep`);
  const name = fullName(type);
  if (name === BIGINT) return bigintFrom(m, path, limits);
  if (name === ECHO) return null;
  if (name === VALUE) return valueFrom(m, path, depth, limits);
  const out: Record<string, Canonical> = {};
  for (const field of type.fieldsArray) {
    const fp = `${path}.${field.name}`;
    const v = m[field.name];
    const sub = field.resolvedType instanceof protobuf.Type ? field.resolvedType : undefined;
    if (field.partOf && !(Object.hasOwn(m, field.name) && v !== undefined && v !== null)) continue;
    const one = (x: unknown, p: string): Canonical =>
      sub
        ? fromProto(sub, (x ?? {}) as Record<string, unknown>, p, depth + 1, limits)
        : scalarFrom(field, x, p, limits);
    if (field.repeated) {
      const arr = (Array.isArray(v) ? v : []) as unknown[];
      if (arr.length > limits.maxRepeated) throw new WireSchemaError(`${fp}: ${arr.length} items exceeds the limit`);
      out[field.name] = arr.map((x, i) => one(x, `${fp}[${i}]`));
    } else {
      out[field.name] = one(v, fp);
    }
  }
  return out;
}

/**
 * Decode bytes of message `type` into a runtime body. Never throws.
 * @returns the body, or a rejection (`oversize`, `malformed`, `schema`)
 */
export function bytesToCanonical(
  type: protobuf.Type,
  bytes: unknown,
  limits: WireLimits = DEFAULT_LIMITS,
): WireResult<Canonical> {
  const decoded = decodeMessage(type, bytes, limits);
  if (!decoded.ok) return decoded;
  try {
    return accept(fromProto(type, decoded.value as unknown as Record<string, unknown>, type.name, 0, limits));
  } catch (e) {
    if (e instanceof WireSchemaError) return reject('schema', e.message);
    return reject('malformed', `${type.name}: ${e instanceof Error ? e.message.slice(0, 120) : 'conversion error'}`);
  }
}
