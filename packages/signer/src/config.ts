/**
 * Signer daemon configuration (a JSON file, `custodian signer start --config <file>`):
 *
 * ```json
 * { "listen": "/ip4/127.0.0.1/tcp/7001",
 *   "dataDir": "./signer-1",                     // relative to the config file
 *   "peers": [{ "peerId": "12D3Koo…", "addrs": ["/ip4/127.0.0.1/tcp/7002"] }],
 *   "coordinator": { "peerId": "12D3Koo…" },
 *   "passphrase": { "env": "CUSTODIAN_SIGNER_PASSPHRASE" }   // or { "file": "/run/secrets/pass" }
 *   "trustedAdminDevices": [{ "deviceId": "…", "publicKey": "02…" }],
 *   "chains": { "ethereum-local":   { "family": "ethereum", "chainId": 31337, "maxFee": "10000000000000000" },
 *               "litecoin-regtest": { "family": "bitcoin", "network": "litecoin-regtest", "maxFee": "1000000" },
 *               "tron-nile":        { "family": "tron", "network": "nile", "maxFee": "100000000",
 *                                     "assets": { "USDT": { "contract": "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf", "decimals": 6 } } } },
 *   "logLevel": "info" }
 * ```
 * `chains` (see `ChainsConfig`, @custodian/ceremony chains-config.ts) lists every blockchain this signer signs for: a transfer of
 * a blockchain absent from it is refused (`CHAIN_NOT_CONFIGURED`).
 * The passphrase is never a command-line argument (it would show in `ps`). Without
 * `trustedAdminDevices` the signer refuses every sign request (`ENFORCEMENT_NOT_CONFIGURED`) unless
 * `"allowUnenforcedSigning": true` (development and tests only).
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import {
  CHAINS_CONFIG_SCHEMA,
  type ChainsConfig,
  ConfigError,
  type ConfigSchema,
  checkConfig,
  parseChainsConfig,
} from '@custodian/ceremony';
import type { ScryptParams } from '@custodian/ceremony/level-store';
import { peerIdFromString } from '@libp2p/peer-id';
import { multiaddr } from '@multiformats/multiaddr';

// the configuration error is the ceremony package's (its `chains` parser throws it too)
export { ConfigError } from '@custodian/ceremony';

export type PassphraseSource = { readonly env: string } | { readonly file: string };

export interface SignerConfig {
  readonly listen: string;
  readonly dataDir: string;
  readonly peers: readonly { readonly peerId: string; readonly addrs: readonly string[] }[];
  readonly coordinator: { readonly peerId: string };
  readonly passphrase: PassphraseSource;
  readonly logLevel: string;
  /** Storage key derivation cost (default scrypt N=2^15, r=8, p=1). */
  readonly scrypt?: ScryptParams;
  /**
   * CGGMP21 threshold ECDSA (absent: this signer creates FROST keys only). `level`: Paillier
   * security level (SECURITY_128: 3072-bit moduli, default; SECURITY_112: 2048-bit); `primePool`:
   * safe primes to keep pregenerated (default 4; two per key creation or refresh);
   * `primeSeedFile`: JSON `{ "safePrimes": [hex…] }` of pre-generated primes imported at start.
   */
  readonly ecdsa?: {
    readonly level: 'SECURITY_128' | 'SECURITY_112';
    readonly primePool: number;
    readonly primeSeedFile?: string;
  };
  /**
   * Transfer evidence enforcement (enforce.ts, DESIGN §1): the Admin devices whose policy
   * signatures this signer trusts, `[{ "deviceId": "…", "publicKey": "<33-byte compressed P-256 hex>" }]`.
   * When present, every sign request must carry evidence that passes the policy, limit and approval
   * checks. Absent: every sign request is refused (`ENFORCEMENT_NOT_CONFIGURED`), unless
   * {@link allowUnenforcedSigning}.
   */
  readonly trustedAdminDevices?: readonly { readonly deviceId: string; readonly publicKey: string }[];
  /**
   * DEVELOPMENT AND TESTS ONLY: `true` signs sign requests without checking any evidence (raw
   * digests) when `trustedAdminDevices` is absent; the daemon logs a loud warning at start. Default
   * false. Exclusive with `trustedAdminDevices`.
   */
  readonly allowUnenforcedSigning?: boolean;
  /** Blockchains this signer signs transfers for, with their chain id / network and fee ceiling ({@link ChainsConfig}). */
  readonly chains?: ChainsConfig;
  /**
   * The store generation's state file (generation.ts), OUTSIDE the data folder so that a restored
   * copy of the folder never brings it back. Default `<dataDir>.generation.json`, beside the data
   * folder. Relative paths are resolved from the config file's directory.
   */
  readonly generationFile?: string;
  /**
   * Local HTTP port of `/healthz`, `/readyz` and `/metrics` (health.ts); absent: off (default).
   * `custodian signer start --health-port` overrides it.
   */
  readonly healthPort?: number;
  /** Address the health port binds. Default 127.0.0.1. */
  readonly healthHost?: string;
}

/**
 * The one JSON Schema of the signer config file: every key (an unknown one is an error naming its
 * closest valid spelling); the values are checked by {@link parseConfig}. Every key is documented
 * in docs/configuration.md (a test compares).
 */
export const SIGNER_CONFIG_SCHEMA: ConfigSchema = {
  type: 'object',
  properties: {
    listen: { type: 'string' },
    dataDir: { type: 'string' },
    peers: {
      type: 'array',
      items: { type: 'object', properties: { peerId: {}, addrs: { type: 'array' } }, additionalProperties: false },
    },
    coordinator: { type: 'object', properties: { peerId: {} }, additionalProperties: false },
    passphrase: { type: 'object', properties: { env: {}, file: {} }, additionalProperties: false },
    logLevel: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
    scrypt: {
      type: 'object',
      properties: { N: { type: 'integer' }, r: { type: 'integer' }, p: { type: 'integer' } },
      required: ['N', 'r', 'p'],
      additionalProperties: false,
    },
    ecdsa: {
      type: 'object',
      properties: { level: {}, primePool: {}, primeSeedFile: {} },
      additionalProperties: false,
    },
    trustedAdminDevices: {
      type: 'array',
      items: { type: 'object', properties: { deviceId: {}, publicKey: {} }, additionalProperties: false },
    },
    allowUnenforcedSigning: {},
    chains: CHAINS_CONFIG_SCHEMA,
    generationFile: {},
    healthPort: { type: 'integer' },
    healthHost: { type: 'string' },
  },
  additionalProperties: false,
};

function peerIdField(v: unknown, field: string): string {
  if (typeof v !== 'string') throw new ConfigError(`${field}: expected a peer id string`);
  try {
    const p = peerIdFromString(v);
    if (p.type !== 'Ed25519') throw new Error('not Ed25519');
  } catch {
    throw new ConfigError(`${field}: not an Ed25519 libp2p peer id`);
  }
  return v;
}

function addrField(v: unknown, field: string): string {
  if (typeof v !== 'string') throw new ConfigError(`${field}: expected a multiaddr string`);
  try {
    multiaddr(v);
  } catch {
    throw new ConfigError(`${field}: not a multiaddr`);
  }
  return v;
}

/** `healthPort` (0..65535) and `healthHost` (non-empty) when present. @throws ConfigError naming the key */
export function healthFields(port: unknown, host: unknown): { healthPort?: number; healthHost?: string } {
  if (port !== undefined && (!Number.isSafeInteger(port) || (port as number) < 0 || (port as number) > 65535))
    throw new ConfigError('healthPort: a port number 0..65535');
  if (host !== undefined && (typeof host !== 'string' || host === ''))
    throw new ConfigError('healthHost: an address to bind, e.g. 127.0.0.1');
  return {
    ...(port !== undefined ? { healthPort: port as number } : {}),
    ...(host !== undefined ? { healthHost: host as string } : {}),
  };
}

/**
 * Validate a parsed config object; `baseDir` resolves a relative dataDir / passphrase file.
 * @throws ConfigError naming the field: an unknown key (with its closest valid spelling), a
 *   missing or malformed value
 */
export function parseConfig(raw: unknown, baseDir: string): SignerConfig {
  if (typeof raw !== 'object' || raw === null) throw new ConfigError('config: expected a JSON object');
  checkConfig(SIGNER_CONFIG_SCHEMA, raw);
  const c = raw as Record<string, unknown>;
  const listen = addrField(c.listen ?? '/ip4/127.0.0.1/tcp/0', 'listen');
  if (typeof c.dataDir !== 'string' || c.dataDir === '') throw new ConfigError('dataDir: required');
  const dataDir = isAbsolute(c.dataDir) ? c.dataDir : resolve(baseDir, c.dataDir);
  if (!Array.isArray(c.peers)) throw new ConfigError('peers: expected a list');
  const peers = c.peers.map((p: unknown, i) => {
    const r = (p ?? {}) as Record<string, unknown>;
    const addrs = Array.isArray(r.addrs) ? r.addrs.map((a, j) => addrField(a, `peers[${i}].addrs[${j}]`)) : [];
    return { peerId: peerIdField(r.peerId, `peers[${i}].peerId`), addrs };
  });
  const coord = (c.coordinator ?? {}) as Record<string, unknown>;
  const coordinator = { peerId: peerIdField(coord.peerId, 'coordinator.peerId') };
  const pp = (c.passphrase ?? {}) as Record<string, unknown>;
  let passphrase: PassphraseSource;
  if (typeof pp.env === 'string' && pp.env !== '') passphrase = { env: pp.env };
  else if (typeof pp.file === 'string' && pp.file !== '')
    passphrase = { file: isAbsolute(pp.file) ? pp.file : resolve(baseDir, pp.file) };
  else throw new ConfigError('passphrase: expected { "env": NAME } or { "file": PATH }');
  const logLevel = typeof c.logLevel === 'string' ? c.logLevel : 'info';
  const scrypt = c.scrypt as ScryptParams | undefined;
  let ecdsa: SignerConfig['ecdsa'];
  if (c.ecdsa !== undefined) {
    const e = (c.ecdsa ?? {}) as Record<string, unknown>;
    const level = e.level ?? 'SECURITY_128';
    if (level !== 'SECURITY_128' && level !== 'SECURITY_112')
      throw new ConfigError('ecdsa.level: SECURITY_128 or SECURITY_112');
    const primePool = e.primePool ?? 4;
    if (!Number.isSafeInteger(primePool) || (primePool as number) < 0 || (primePool as number) > 64)
      throw new ConfigError('ecdsa.primePool: 0..64');
    let primeSeedFile: string | undefined;
    if (e.primeSeedFile !== undefined) {
      if (typeof e.primeSeedFile !== 'string') throw new ConfigError('ecdsa.primeSeedFile: expected a path');
      primeSeedFile = isAbsolute(e.primeSeedFile) ? e.primeSeedFile : resolve(baseDir, e.primeSeedFile);
    }
    ecdsa = { level, primePool: primePool as number, ...(primeSeedFile ? { primeSeedFile } : {}) };
  }
  let trustedAdminDevices: SignerConfig['trustedAdminDevices'];
  if (c.trustedAdminDevices !== undefined) {
    if (!Array.isArray(c.trustedAdminDevices)) throw new ConfigError('trustedAdminDevices: expected a list');
    trustedAdminDevices = c.trustedAdminDevices.map((d: unknown, i) => {
      const r = (d ?? {}) as Record<string, unknown>;
      if (typeof r.deviceId !== 'string' || r.deviceId === '')
        throw new ConfigError(`trustedAdminDevices[${i}].deviceId: required`);
      if (typeof r.publicKey !== 'string' || !/^0[23][0-9a-f]{64}$/.test(r.publicKey))
        throw new ConfigError(`trustedAdminDevices[${i}].publicKey: 33-byte compressed P-256 key, lowercase hex`);
      return { deviceId: r.deviceId, publicKey: r.publicKey };
    });
  }
  const allowUnenforcedSigning = c.allowUnenforcedSigning ?? false;
  if (typeof allowUnenforcedSigning !== 'boolean')
    throw new ConfigError('allowUnenforcedSigning: expected true or false');
  if (allowUnenforcedSigning && trustedAdminDevices)
    throw new ConfigError('allowUnenforcedSigning: not with trustedAdminDevices (enforcement is either on or off)');
  const chains = c.chains === undefined ? undefined : parseChainsConfig(c.chains);
  let generationFile: string | undefined;
  if (c.generationFile !== undefined) {
    if (typeof c.generationFile !== 'string' || c.generationFile === '')
      throw new ConfigError('generationFile: expected a path');
    generationFile = isAbsolute(c.generationFile) ? c.generationFile : resolve(baseDir, c.generationFile);
    const inside = relative(dataDir, generationFile);
    if (inside === '' || (!inside.startsWith('..') && !isAbsolute(inside)))
      throw new ConfigError('generationFile: must be outside dataDir (a restored data folder must not bring it back)');
  }
  const health = healthFields(c.healthPort, c.healthHost);
  return {
    ...health,
    listen,
    dataDir,
    peers,
    coordinator,
    passphrase,
    logLevel,
    ...(scrypt ? { scrypt } : {}),
    ...(ecdsa ? { ecdsa } : {}),
    ...(trustedAdminDevices ? { trustedAdminDevices } : {}),
    ...(allowUnenforcedSigning ? { allowUnenforcedSigning } : {}),
    ...(chains ? { chains } : {}),
    ...(generationFile ? { generationFile } : {}),
  };
}

/** Read and validate a config file. @throws ConfigError / file errors */
export async function loadConfig(path: string): Promise<SignerConfig> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path, 'utf8'));
  } catch (e) {
    throw new ConfigError(`${path}: ${e instanceof Error ? e.message : 'unreadable'}`);
  }
  return parseConfig(raw, dirname(resolve(path)));
}

/**
 * Read the passphrase from its source (trailing newline of a file trimmed).
 * @throws ConfigError when the variable is unset or the file is unreadable/empty
 */
export async function readPassphrase(src: PassphraseSource): Promise<string> {
  let v: string | undefined;
  if ('env' in src) v = process.env[src.env];
  else
    v = await readFile(src.file, 'utf8').then(
      (s) => s.replace(/\r?\n$/, ''),
      () => undefined,
    );
  if (!v)
    throw new ConfigError(
      `passphrase: ${'env' in src ? `environment variable ${src.env} is not set` : `file ${src.file} is unreadable or empty`}`,
    );
  return v;
}
