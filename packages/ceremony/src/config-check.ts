/**
 * Checking a config file against its one JSON Schema (Ajv, draft 2020-12 subset): the coordinator's
 * config file (packages/cli/src/coordinator-config.ts), the signer daemon's
 * (packages/signer/src/config.ts) and the blockchains of signers and phones
 * ({@link CHAINS_CONFIG_SCHEMA}, chains-config.ts). Every object of a schema lists its keys with
 * `additionalProperties: false`, so an unknown key is an error naming it, where it is, and its
 * closest valid spelling: "unknown key `smtpURL` in mail — did you mean `url`?".
 */
import { Ajv, type ErrorObject } from 'ajv';
import { SignerError } from './errors.js';

/** Configuration error naming the field (code CONFIG_INVALID). */
export class ConfigError extends SignerError {
  constructor(message: string) {
    super('CONFIG_INVALID', message);
  }
}

/** A JSON Schema object (the subset Ajv accepts). */
export type ConfigSchema = Record<string, unknown>;

const ajv = new Ajv({ allErrors: true, verbose: true, strict: false });
const compiled = new WeakMap<ConfigSchema, ReturnType<Ajv['compile']>>();

/** Levenshtein distance of two strings. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_v, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/**
 * The valid key closest to `key`, or undefined when none is close: compared case-insensitively
 * and ignoring `-` / `_`; close means an edit distance of at most a third of the longer name (at
 * least 1), or one name containing the other (`smtpURL` → `url`, `rpc` → `rpcUrl`).
 */
export function closestKey(key: string, valid: readonly string[]): string | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/[-_]/g, '');
  const k = norm(key);
  let best: { name: string; score: number } | undefined;
  for (const v of valid) {
    const n = norm(v);
    const d = distance(k, n);
    const contains = k.length > 0 && n.length > 1 && (k.includes(n) || n.includes(k));
    const close = d <= Math.max(1, Math.floor(Math.max(k.length, n.length) / 3));
    if (!close && !contains) continue;
    const score = close ? d : 100 + Math.abs(k.length - n.length);
    if (best === undefined || score < best.score) best = { name: v, score };
  }
  return best?.name;
}

/** `/chains/ethereum-local/rpcUrl` → `chains.ethereum-local.rpcUrl`; `/peers/0` → `peers[0]`. */
function dotted(instancePath: string, root: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc === '' ? p : `${acc}.${p}`), root);
}

function message(e: ErrorObject, root: string): string {
  const where = dotted(e.instancePath, root);
  const at = (s: string) => s;
  if (e.keyword === 'additionalProperties') {
    const key = (e.params as { additionalProperty: string }).additionalProperty;
    const props = Object.keys(((e.parentSchema ?? {}) as { properties?: object }).properties ?? {});
    const near = closestKey(key, props);
    const hint =
      near !== undefined
        ? ` — did you mean \`${near}\`?`
        : props.length > 0
          ? ` (valid keys: ${props.join(', ')})`
          : '';
    return at(`unknown key \`${key}\` ${where === '' ? 'at the top level' : `in ${where}`}${hint}`);
  }
  if (e.keyword === 'enum')
    return at(
      `${where || 'config'}: must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`,
    );
  return at(`${where || 'config'}: ${e.message ?? 'invalid'}`);
}

/**
 * Check `value` (a parsed JSON config file) against `schema`.
 * @param root the dotted path of `value` in its file (`chains` when checking the `chains` object
 *   alone; default: the whole file)
 * @throws ConfigError (code CONFIG_INVALID) naming one problem: an unknown key with its closest
 *   valid spelling when there is one (it explains the others), else a missing key or a value of
 *   the wrong type
 */
export function checkConfig(schema: ConfigSchema, value: unknown, root = ''): void {
  let validate = compiled.get(schema);
  if (validate === undefined) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  if (validate(value)) return;
  // an unknown key explains the other errors (a misspelt required key is also missing): first
  const errors = (validate.errors ?? []).filter((e) => e.keyword !== 'if');
  const first = errors.find((e) => e.keyword === 'additionalProperties') ?? errors[0] ?? validate.errors![0]!;
  throw new ConfigError(message(first, root));
}

/**
 * Every key path a schema documents, dotted (`mail.url`, `chains.*.rpcUrl`, `peers[].addrs`): the
 * list docs/configuration.md is checked against. Map-like objects (`additionalProperties` a
 * schema) contribute `*`, arrays `[]`.
 */
export function schemaKeys(schema: ConfigSchema, base = ''): string[] {
  const out: string[] = [];
  const s = schema as {
    properties?: Record<string, ConfigSchema>;
    additionalProperties?: unknown;
    items?: ConfigSchema;
    oneOf?: ConfigSchema[];
    anyOf?: ConfigSchema[];
  };
  for (const [k, sub] of Object.entries(s.properties ?? {})) {
    const path = base === '' ? k : `${base}.${k}`;
    out.push(path, ...schemaKeys(sub, path));
  }
  if (typeof s.additionalProperties === 'object' && s.additionalProperties !== null)
    out.push(...schemaKeys(s.additionalProperties as ConfigSchema, base === '' ? '*' : `${base}.*`));
  if (s.items !== undefined) out.push(...schemaKeys(s.items, `${base}[]`));
  for (const alt of [...(s.oneOf ?? []), ...(s.anyOf ?? [])]) out.push(...schemaKeys(alt, base));
  return [...new Set(out)];
}
