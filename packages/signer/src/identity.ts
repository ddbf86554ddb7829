/**
 * Node identity: a libp2p Ed25519 key pair (RFC 8032). Its public key is the node's peer id, the
 * key that signs its MPC envelopes and terminates its Noise channels. The private key is stored in
 * `<dataDir>/identity.json`, sealed with a key derived from the storage passphrase (scrypt +
 * XChaCha20-Poly1305, `secretbox.ts`).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_SCRYPT, deriveStorageKey, open, type ScryptParams, seal } from '@custodian/ceremony/level-store';
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromPrivateKey, peerIdFromString } from '@libp2p/peer-id';
import { ConfigError } from './config.js';

/** File name of the sealed identity inside the data folder. */
export const IDENTITY_FILE = 'identity.json';
const AAD = new TextEncoder().encode('custodian.signer.identity/v1');

/** A loaded node identity. */
export interface NodeIdentity {
  readonly privateKey: PrivateKey;
  readonly peerId: string;
  /** Ed25519 secret key (32-byte seed). SECRET. */
  readonly secretKey: Uint8Array;
  /** Ed25519 public key (32 bytes). */
  readonly publicKey: Uint8Array;
}

function toIdentity(privateKey: PrivateKey): NodeIdentity {
  if (privateKey.type !== 'Ed25519') throw new TypeError('identity: not an Ed25519 key');
  return {
    privateKey,
    peerId: peerIdFromPrivateKey(privateKey).toString(),
    secretKey: Uint8Array.from(privateKey.raw.subarray(0, 32)),
    publicKey: Uint8Array.from(privateKey.publicKey.raw),
  };
}

/**
 * Create a new identity in `dataDir` (created if needed).
 * @throws Error if an identity already exists there (never overwritten)
 */
export async function createIdentity(
  dataDir: string,
  passphrase: string,
  params: ScryptParams = DEFAULT_SCRYPT,
): Promise<NodeIdentity> {
  return writeIdentity(dataDir, await generateKeyPair('Ed25519'), passphrase, params);
}

/**
 * Seal an existing Ed25519 identity key into `<dataDir>/identity.json` (mode 0600; `dataDir`
 * created if needed): `custodian signer init` with a new key, `custodian signer backup restore`
 * with the backed-up one.
 * @throws Error if an identity already exists there (never overwritten); TypeError for a non-Ed25519 key
 */
export async function writeIdentity(
  dataDir: string,
  privateKey: PrivateKey,
  passphrase: string,
  params: ScryptParams = DEFAULT_SCRYPT,
): Promise<NodeIdentity> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, IDENTITY_FILE);
  const id = toIdentity(privateKey);
  const salt = new Uint8Array(randomBytes(32));
  const key = await deriveStorageKey(passphrase, salt, params);
  const file = {
    format: 'custodian.signer.identity',
    version: 1,
    peerId: id.peerId,
    salt: Buffer.from(salt).toString('hex'),
    scrypt: params,
    sealed: Buffer.from(seal(key, privateKeyToProtobuf(privateKey), AAD)).toString('hex'),
  };
  key.fill(0);
  await writeFile(path, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600, flag: 'wx' }).catch(
    (e: NodeJS.ErrnoException) => {
      throw e.code === 'EEXIST' ? new Error(`identity already exists: ${path}`) : e;
    },
  );
  return id;
}

/**
 * Load the identity of `dataDir` (never creates one).
 * @throws ConfigError `CONFIG_INVALID` when absent; Error when malformed; StoreIntegrityError for a wrong passphrase
 */
export async function loadIdentity(dataDir: string, passphrase: string): Promise<NodeIdentity> {
  const path = join(dataDir, IDENTITY_FILE);
  const text = await readFile(path, 'utf8').catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT')
      throw new ConfigError(`no signer identity at ${path}: create one with \`custodian signer init -d ${dataDir}\``);
    throw e;
  });
  const file = JSON.parse(text) as {
    format?: string;
    version?: number;
    salt: string;
    scrypt: ScryptParams;
    sealed: string;
    peerId: string;
  };
  if (file.format !== 'custodian.signer.identity' || file.version !== 1)
    throw new Error(`${path}: unknown identity format`);
  const key = await deriveStorageKey(passphrase, Uint8Array.from(Buffer.from(file.salt, 'hex')), file.scrypt);
  const raw = open(key, Uint8Array.from(Buffer.from(file.sealed, 'hex')), AAD, 'identity');
  key.fill(0);
  const id = toIdentity(privateKeyFromProtobuf(raw));
  if (id.peerId !== file.peerId) throw new Error(`${path}: peer id does not match the sealed key`);
  return id;
}

/**
 * The public half of the identity of `dataDir` (its peer id and Ed25519 public key), read without
 * the passphrase from the identity file's `peerId` (an Ed25519 peer id embeds its public key).
 * @throws ConfigError `CONFIG_INVALID` when the folder has no identity (never creates one: that is
 *   `custodian signer init`) or the file is not a signer identity
 */
export async function readPublicIdentity(dataDir: string): Promise<{ peerId: string; publicKey: Uint8Array }> {
  const path = join(dataDir, IDENTITY_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT')
      throw new ConfigError(`no signer identity at ${path}: create one with \`custodian signer init -d ${dataDir}\``);
    throw e;
  }
  let file: { format?: string; peerId?: string };
  try {
    file = JSON.parse(text) as { format?: string; peerId?: string };
  } catch {
    throw new ConfigError(`${path}: not a signer identity file`);
  }
  if (file.format !== 'custodian.signer.identity' || typeof file.peerId !== 'string')
    throw new ConfigError(`${path}: not a signer identity file`);
  const publicKey = peerIdFromString(file.peerId).publicKey?.raw;
  if (!publicKey) throw new ConfigError(`${path}: peer id without a public key`);
  return { peerId: file.peerId, publicKey: Uint8Array.from(publicKey) };
}
