/**
 * The device vault: what a phone keeps in its secure storage, here a JSON file `device.json` in
 * the data folder (mode 0600). Two secret keys, each sealed under a key derived from the PIN:
 * - the **device identity key** (P-256, what phone secure enclaves hold): enrollment, the
 *   WebSocket challenge, approvals (`@custodian/wire` `deviceSign`: 64-byte r‖s over 32 bytes);
 * - the **MPC identity key** (Ed25519, RFC 8032; its libp2p peer id is the device's party id in
 *   ceremonies): signs and decrypts MPC envelopes.
 *
 * PIN-derived key: scrypt (RFC 7914, `@noble/hashes`) of the UTF-8 PIN with a 16-byte random salt,
 * N = 2^15, r = 8, p = 1 by default, 32-byte output. Sealing: XChaCha20-Poly1305 (`@noble/ciphers`)
 * with a 24-byte random nonce and the slot name as associated data; stored as hex of
 * `nonce(24) ‖ ciphertext ‖ tag(16)`. A wrong PIN fails the tag check ({@link WrongPinError}).
 *
 * Coordinator URLs: `urls` lists the base URLs of the coordinator's replicas (issue #25: they share
 * one identity, so the pinned peer id holds on every URL); `url` is kept equal to the first one, so
 * a vault written here still reads in an older version. A vault holding only `url` (written before
 * `urls`) reads as `urls: [url]`.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { deviceFingerprint } from '@custodian/wire';
import { generateKeyPair, privateKeyFromRaw } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { p256 } from '@noble/curves/nist.js';
import { bytesToHex, hexToBytes } from '@noble/curves/utils.js';
import { scryptAsync } from '@noble/hashes/scrypt.js';
import { MobileError } from './errors.js';

/** File name of the vault in the data folder. */
export const VAULT_FILE = 'device.json';

/** scrypt cost (RFC 7914 §2). */
export interface PinKdfParams {
  N: number;
  r: number;
  p: number;
}

/** Default PIN KDF cost: 32 MiB, ~100 ms. */
export const DEFAULT_PIN_KDF: PinKdfParams = { N: 1 << 15, r: 8, p: 1 };

/** The PIN did not open the vault. */
export class WrongPinError extends MobileError {
  constructor() {
    super('WRONG_PIN', 'wrong PIN');
  }
}

/** Public part of the vault (no secrets). */
export interface VaultInfo {
  version: 1;
  /** The first of {@link urls} (kept for vaults read by older versions). */
  url: string;
  /**
   * Coordinator base URLs, e.g. `["http://10.0.0.1:8080", "http://10.0.0.2:8080"]` (one per replica,
   * at least one, no trailing slash): the phone connects to one and moves to the next when it cannot
   * connect or the connection drops. Read as `[url]` from a vault that has none.
   */
  urls: string[];
  name: string;
  /** Set once the enrollment request was accepted. */
  deviceId: string | null;
  /** Compressed P-256 public key (33 bytes), hex. */
  devicePublicKey: string;
  /**
   * `@custodian/wire` `deviceFingerprint` of the device key: SHA-256 of the compressed key, 64
   * upper-case hex digits in 16 groups of 4 (the admin API's format). Recomputed on read.
   */
  fingerprint: string;
  /** libp2p peer id of the MPC identity. */
  mpcPeerId: string;
  /** Coordinator peer id pinned at the first authenticated connection (trust on first use). */
  coordinatorPeerId: string | null;
  kdf: { alg: 'scrypt'; salt: string } & PinKdfParams;
  sealed: { deviceKey: string; mpcKey: string };
}

/** An unlocked vault: secrets in memory. Call {@link UnlockedVault.wipe} when done. */
export interface UnlockedVault {
  info: VaultInfo;
  /** P-256 secret key (32 bytes). SECRET. */
  deviceSecretKey: Uint8Array;
  /** Ed25519 identity (libp2p private key). SECRET. */
  mpcKey: PrivateKey;
  /** Ed25519 seed (32 bytes). SECRET. */
  mpcSecretKey: Uint8Array;
  wipe(): void;
}

const enc = new TextEncoder();

/**
 * Derive the 32-byte PIN key.
 * @throws RangeError for a PIN shorter than 4 characters
 */
export async function derivePinKey(pin: string, salt: Uint8Array, params: PinKdfParams): Promise<Uint8Array> {
  if (typeof pin !== 'string' || pin.length < 4) throw new RangeError('PIN: at least 4 characters');
  return scryptAsync(enc.encode(pin.normalize('NFKC')), salt, { ...params, dkLen: 32 });
}

function sealWith(key: Uint8Array, slot: string, plaintext: Uint8Array): string {
  const nonce = Uint8Array.from(randomBytes(24));
  const ct = xchacha20poly1305(key, nonce, enc.encode(`custodian.mobile.${slot}/v1`)).encrypt(plaintext);
  return bytesToHex(Uint8Array.from([...nonce, ...ct]));
}

function openWith(key: Uint8Array, slot: string, hex: string): Uint8Array {
  const b = hexToBytes(hex);
  if (b.length < 24 + 16) throw new RangeError(`vault: sealed ${slot} too short`);
  try {
    return xchacha20poly1305(key, b.subarray(0, 24), enc.encode(`custodian.mobile.${slot}/v1`)).decrypt(b.subarray(24));
  } catch {
    throw new WrongPinError();
  }
}

/**
 * Normalise coordinator base URLs: each parsed (`http:` or `https:`), without a trailing slash;
 * duplicates dropped, order kept.
 * @throws RangeError for an empty list or a URL that does not parse or is not http(s)
 */
export function normalizeCoordinatorUrls(urls: readonly string[]): string[] {
  const out: string[] = [];
  for (const raw of urls) {
    if (typeof raw !== 'string') throw new RangeError('coordinator URL: not a string');
    let u: URL;
    try {
      u = new URL(raw.trim());
    } catch {
      throw new RangeError(`coordinator URL ${JSON.stringify(raw)}: not a URL`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw new RangeError(`coordinator URL ${JSON.stringify(raw)}: http or https only`);
    const s = u.toString().replace(/\/$/, '');
    if (!out.includes(s)) out.push(s);
  }
  if (out.length === 0) throw new RangeError('at least one coordinator URL');
  return out;
}

/** Read the public vault info. @throws Error when the folder has no vault */
export async function readVaultInfo(dataDir: string): Promise<VaultInfo> {
  const raw = await readFile(join(dataDir, VAULT_FILE), 'utf8').catch(() => {
    throw new Error(`no device in ${dataDir}: run \`custodian mobile enroll\` first`);
  });
  const v = JSON.parse(raw) as VaultInfo;
  if (v.version !== 1 || typeof v.sealed?.deviceKey !== 'string' || typeof v.devicePublicKey !== 'string')
    throw new Error(`${VAULT_FILE}: unsupported format`);
  let fingerprint: string;
  try {
    fingerprint = deviceFingerprint(hexToBytes(v.devicePublicKey));
  } catch {
    throw new Error(`${VAULT_FILE}: devicePublicKey is not hex`);
  }
  let urls: string[];
  try {
    urls = normalizeCoordinatorUrls(
      Array.isArray(v.urls) && v.urls.every((u) => typeof u === 'string') && v.urls.length > 0 ? v.urls : [v.url],
    );
  } catch (e) {
    throw new Error(`${VAULT_FILE}: ${e instanceof Error ? e.message : 'bad coordinator URL'}`);
  }
  return { ...v, url: urls[0] as string, urls, fingerprint };
}

/**
 * Replace the coordinator URLs of the vault in `dataDir` (no PIN needed: they are not secret;
 * the pinned coordinator peer id is kept, so a URL serving another identity is refused).
 * @returns the vault info written
 * @throws Error when the folder has no vault; RangeError for a bad URL list
 */
export async function setVaultUrls(dataDir: string, urls: readonly string[]): Promise<VaultInfo> {
  const list = normalizeCoordinatorUrls(urls);
  const info = await readVaultInfo(dataDir);
  const next: VaultInfo = { ...info, url: list[0] as string, urls: list };
  await writeVaultInfo(dataDir, next);
  return next;
}

/** Write the public vault info atomically (mode 0600). */
export async function writeVaultInfo(dataDir: string, info: VaultInfo): Promise<void> {
  const path = join(dataDir, VAULT_FILE);
  await writeFile(`${path}.tmp`, `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
  await rename(`${path}.tmp`, path);
  await chmod(path, 0o600);
}

/**
 * Create a new vault (fresh P-256 device key and Ed25519 MPC key) sealed under the PIN.
 * @throws Error when the folder already holds a device (never overwritten)
 */
export async function createVault(
  dataDir: string,
  pin: string,
  opts: { url: string | readonly string[]; name: string; kdf?: PinKdfParams },
): Promise<UnlockedVault> {
  const urls = normalizeCoordinatorUrls(typeof opts.url === 'string' ? [opts.url] : opts.url);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const exists = await readFile(join(dataDir, VAULT_FILE)).then(
    () => true,
    () => false,
  );
  if (exists) throw new Error(`${dataDir} already holds a device`);
  const params = opts.kdf ?? DEFAULT_PIN_KDF;
  const salt = Uint8Array.from(randomBytes(16));
  const key = await derivePinKey(pin, salt, params);
  const deviceSecretKey = p256.utils.randomSecretKey();
  const devicePublicKey = p256.getPublicKey(deviceSecretKey, true);
  const mpcKey = await generateKeyPair('Ed25519');
  const info: VaultInfo = {
    version: 1,
    url: urls[0] as string,
    urls,
    name: opts.name,
    deviceId: null,
    devicePublicKey: bytesToHex(devicePublicKey),
    fingerprint: deviceFingerprint(devicePublicKey),
    mpcPeerId: peerIdFromPrivateKey(mpcKey).toString(),
    coordinatorPeerId: null,
    kdf: { alg: 'scrypt', salt: bytesToHex(salt), ...params },
    sealed: {
      deviceKey: sealWith(key, 'device-key', deviceSecretKey),
      mpcKey: sealWith(key, 'mpc-key', mpcKey.raw),
    },
  };
  key.fill(0);
  await writeVaultInfo(dataDir, info);
  return unlocked(info, deviceSecretKey, mpcKey);
}

function unlocked(info: VaultInfo, deviceSecretKey: Uint8Array, mpcKey: PrivateKey): UnlockedVault {
  const mpcSecretKey = Uint8Array.from(mpcKey.raw.subarray(0, 32));
  return {
    info,
    deviceSecretKey,
    mpcKey,
    mpcSecretKey,
    wipe() {
      deviceSecretKey.fill(0);
      mpcSecretKey.fill(0);
    },
  };
}

/**
 * Open the vault with the PIN.
 * @throws WrongPinError for a wrong PIN; Error for a missing or corrupt vault
 */
export async function unlockVault(dataDir: string, pin: string): Promise<UnlockedVault> {
  const info = await readVaultInfo(dataDir);
  const key = await derivePinKey(pin, hexToBytes(info.kdf.salt), info.kdf);
  try {
    const deviceSecretKey = openWith(key, 'device-key', info.sealed.deviceKey);
    const mpcRaw = openWith(key, 'mpc-key', info.sealed.mpcKey);
    const mpcKey = privateKeyFromRaw(mpcRaw);
    if (mpcKey.type !== 'Ed25519') throw new Error('vault: MPC key is not Ed25519');
    if (bytesToHex(p256.getPublicKey(deviceSecretKey, true)) !== info.devicePublicKey)
      throw new Error('vault: device key does not match its public key');
    if (peerIdFromPrivateKey(mpcKey).toString() !== info.mpcPeerId) throw new Error('vault: MPC key does not match');
    return unlocked(info, deviceSecretKey, mpcKey);
  } finally {
    key.fill(0);
  }
}
