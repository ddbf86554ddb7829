/**
 * Encrypted backup and restore of a server signer (issue #22, "Backup and recovery"); the file
 * format and its cryptography are in backup-envelope.ts.
 *
 * What a backup holds ({@link backupScope}): the signer's identity (its libp2p key: the restored
 * signer has the peer id the key records name), every COMMITTED key record and key share (sublevel
 * `shares`: `<keyId>/meta`, `<keyId>/<suite>`, `<keyId>/cggmp`; the CGGMP21 share includes its
 * Paillier keys), and the floor of every learned policy version (`ledger` keys `policy-known/…`:
 * a restored signer never accepts an older policy version than the one it had learned), and the
 * devices revoked as approvers (`state/revoked-approvers`).
 * What it never holds: presignatures (a presignature that signs twice reveals the key share),
 * the FROST nonce ledger, the ledger of signed transfers and daily sums, the safe-prime pool,
 * ceremony audit records, the store generation, and pending (uncommitted) reshare entries — a
 * backup is of committed shares only; after a reshare's commit the key's epoch moves on and the
 * backup shows as not current until the next one.
 *
 * Taken of a STOPPED signer: {@link createBackup} opens the data folder's LevelDB itself, which
 * the daemon keeps locked (`BACKUP_STORE_LOCKED` while it runs). That is the rule of the operator
 * guide for any backup (a consistent store), and it keeps the backup path off the network: no
 * control request can make a signer export its shares.
 *
 * State recorded in the backed-up store (sublevel `state`, key `backup/<keyId>`, JSON
 * `{ epoch, unixMs }`), one synced batch after the file is in place: the daemon's status reports
 * it as KeyInfo `backupEpoch` / `backupUnixMs` (current when `backupEpoch` = the key's epoch).
 *
 * Restore ({@link restoreBackup}) into a new, empty data folder: everything is decrypted and
 * checked first (nothing is written for a wrong key or a changed byte), then built in a sibling
 * temporary folder and renamed into place (a crash leaves no half-restored folder). The restored
 * store is marked as having run before (store generation 1) while it is a NEW store (new salt, new
 * store id): at its first start generation.ts finds the state file missing or belonging to
 * another store and records a rollback (`STORE_ROLLED_BACK`), the existing rule for restored
 * stores — transfers created before then are refused, daily limits are not trusted that day.
 * The same batch records `state/restored` (JSON `{ restoredAt, backupCreatedAt, peerId }`, for
 * the operator's forensics) and the backup state of each key restored (the backup is current for
 * the shares it brought back).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open as openFile, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { type KeyRecord, listKeys, type StoreOp } from '@custodian/ceremony';
import { type ScryptParams, SecureStore } from '@custodian/ceremony/level-store';
import { privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import {
  type BackupEntry,
  BackupError,
  type BackupHeader,
  decryptBackup,
  encryptBackup,
  generateRecoveryKey,
  parseRecoveryKey,
  parseRecoveryPublicKey,
  readBackupHeader,
  recoveryFingerprint,
  recoveryKeyFiles,
} from './backup-envelope.js';
import { loadIdentity, writeIdentity } from './identity.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Key of the signer's revoked approver devices in sublevel `state` (ceremony revoke.ts, #22). */
export const REVOKED_APPROVERS_KEY = 'revoked-approvers';

/**
 * Whether a store entry belongs in a backup: `shares` except pending reshare entries (`pending/…`;
 * the `pending` sublevel is never read), the learned-policy floors of `ledger`
 * (`policy-known/…`), and the revoked approver devices (`state/revoked-approvers`: a restore must
 * not let a revoked phone approve again). Everything else stays behind.
 */
export function backupScope(sublevel: BackupEntry['s'], key: string): boolean {
  if (sublevel === 'shares') return !key.startsWith('pending/');
  if (sublevel === 'ledger') return key.startsWith('policy-known/');
  return sublevel === 'state' && key === REVOKED_APPROVERS_KEY;
}

/** Backup state of a key in the store (`state/backup/<keyId>`). */
export interface KeyBackupState {
  /** The key's epoch the newest backup holds. */
  readonly epoch: number;
  /** When that backup was written (Unix ms). */
  readonly unixMs: number;
}

const stateKey = (keyId: string) => `backup/${keyId}`;

/** The backup state of `keyId` (undefined: never backed up). */
export async function keyBackupState(
  store: Pick<SecureStore, 'get'>,
  keyId: string,
): Promise<KeyBackupState | undefined> {
  const v = await store.get('state', stateKey(keyId));
  return v ? (JSON.parse(dec.decode(v)) as KeyBackupState) : undefined;
}

function stateOps(keys: readonly { keyId: string; epoch: number }[], unixMs: number): StoreOp[] {
  return keys.map((k) => ({
    type: 'put',
    sublevel: 'state',
    key: stateKey(k.keyId),
    value: enc.encode(JSON.stringify({ epoch: k.epoch, unixMs } satisfies KeyBackupState)),
  }));
}

/** Write `bytes` to `path` atomically and durably (temp file, fsync, rename, fsync dir), mode `mode`. */
async function writeAtomic(path: string, bytes: Uint8Array | string, mode: number): Promise<void> {
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  const f = await openFile(tmp, 'wx', mode);
  try {
    await f.writeFile(bytes);
    await f.sync();
  } finally {
    await f.close();
  }
  try {
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  await syncDir(dirname(path));
}

async function syncDir(dir: string): Promise<void> {
  const d = await openFile(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

/**
 * `custodian signer backup keygen`: write `recovery.key` (0600, never overwritten) and
 * `recovery.pub` into `dir` (created 0700 if needed).
 * @returns the paths and the fingerprint
 * @throws Error when either file exists already
 */
export async function writeRecoveryKey(dir: string): Promise<{ key: string; pub: string; fingerprint: string }> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const k = generateRecoveryKey();
  const files = recoveryKeyFiles(k);
  k.secretKey.fill(0);
  const key = join(dir, 'recovery.key');
  const pub = join(dir, 'recovery.pub');
  for (const [p, text, mode] of [
    [key, files.secret, 0o600],
    [pub, files.pub, 0o644],
  ] as const) {
    await writeFile(p, text, { mode, flag: 'wx' }).catch((e: NodeJS.ErrnoException) => {
      throw e.code === 'EEXIST' ? new Error(`${p} exists already (never overwritten)`) : e;
    });
  }
  return { key, pub, fingerprint: recoveryFingerprint(k.publicKey) };
}

async function openStore(dataDir: string, passphrase: string, scrypt?: ScryptParams): Promise<SecureStore> {
  try {
    return await SecureStore.open(join(dataDir, 'db'), passphrase, scrypt);
  } catch (e) {
    const text = `${(e as Error).message} ${String((e as { cause?: unknown }).cause ?? '')}`;
    if ((e as { code?: string }).code === 'LEVEL_DATABASE_NOT_OPEN' && /lock/i.test(text))
      throw new BackupError(
        'BACKUP_STORE_LOCKED',
        `the store in ${dataDir} is in use: stop the signer first (a backup is taken of a stopped signer)`,
      );
    throw e;
  }
}

/** What {@link createBackup} wrote. */
export interface BackupSummary {
  readonly file: string;
  readonly bytes: number;
  readonly createdAt: string;
  readonly peerId: string;
  readonly recipient: string;
  readonly keys: readonly { keyId: string; epoch: number }[];
}

/**
 * `custodian signer backup create`: encrypt the signer's identity, key shares and records (see
 * the module comment) to `recoveryPub` (the text of `recovery.pub`) into `out` (atomic, 0600),
 * then record the backup state per key in the store.
 * @throws BackupError `BACKUP_STORE_LOCKED` (the daemon runs), `RECOVERY_KEY_INVALID`;
 *   StoreIntegrityError (wrong passphrase); ConfigError (no identity)
 */
export async function createBackup(opts: {
  dataDir: string;
  passphrase: string;
  scrypt?: ScryptParams;
  recoveryPub: string;
  out: string;
  now?: Date;
}): Promise<BackupSummary> {
  const recipient = parseRecoveryPublicKey(opts.recoveryPub);
  const store = await openStore(opts.dataDir, opts.passphrase, opts.scrypt);
  try {
    const identity = await loadIdentity(opts.dataDir, opts.passphrase);
    const entries: BackupEntry[] = [];
    for (const s of ['shares', 'ledger', 'state'] as const) {
      for (const k of await store.keys(s)) {
        if (!backupScope(s, k)) continue;
        const v = await store.get(s, k);
        if (v) entries.push({ s, k, v: Buffer.from(v).toString('base64') });
      }
    }
    const records: KeyRecord[] = await listKeys(store);
    const keys = records.map((r) => ({ keyId: r.keyId, epoch: r.epoch }));
    const now = opts.now ?? new Date();
    const file = encryptBackup(
      { createdAt: now.toISOString(), peerId: identity.peerId, keys },
      { identity: Buffer.from(privateKeyToProtobuf(identity.privateKey)).toString('base64'), entries },
      recipient,
    );
    identity.secretKey.fill(0);
    const out = resolve(opts.out);
    await writeAtomic(out, file, 0o600);
    // the file first, the state second: a crash between reports an older backup, never a newer one
    await store.batch(stateOps(keys, now.getTime()));
    return {
      file: out,
      bytes: file.length,
      createdAt: now.toISOString(),
      peerId: identity.peerId,
      recipient: recoveryFingerprint(recipient),
      keys,
    };
  } finally {
    await store.close();
  }
}

/** `custodian signer backup inspect`: the header (unauthenticated) and the file size. */
export function inspectBackup(file: Uint8Array): BackupHeader & { bytes: number; authenticated: false } {
  return { ...readBackupHeader(file).header, bytes: file.length, authenticated: false };
}

async function isEmptyOrAbsent(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw e;
  }
}

/** What {@link restoreBackup} restored. */
export interface RestoreSummary {
  readonly dataDir: string;
  readonly peerId: string;
  readonly createdAt: string;
  readonly keys: readonly { keyId: string; epoch: number }[];
  readonly entries: number;
}

/**
 * `custodian signer backup restore`: restore `file` (the backup's bytes) with `recoveryKey` (the
 * text of `recovery.key`) into `dataDir`, which must not exist or be empty; its store is sealed
 * with `passphrase` (the new machine's). No presignature, an empty nonce ledger and transfer
 * ledger, store generation 1 (the first start records the restore as a rollback).
 * @throws BackupError `BACKUP_FORMAT` / `BACKUP_WRONG_RECOVERY_KEY` / `BACKUP_INTEGRITY` /
 *   `RECOVERY_KEY_INVALID` / `BACKUP_WRONG_SIGNER` (nothing written), `BACKUP_TARGET_NOT_EMPTY`
 */
export async function restoreBackup(opts: {
  file: Uint8Array;
  recoveryKey: string;
  dataDir: string;
  passphrase: string;
  scrypt?: ScryptParams;
  now?: Date;
  /**
   * The peer id the restored signer must have (the lost signer's, as the coordinator and the key
   * records name it). Anyone holding recovery.pub can write a file that decrypts with
   * recovery.key: this pins whose backup it is.
   */
  expectPeerId?: string;
}): Promise<RestoreSummary> {
  const key = parseRecoveryKey(opts.recoveryKey);
  let opened: ReturnType<typeof decryptBackup>;
  try {
    opened = decryptBackup(opts.file, key);
  } finally {
    key.secretKey.fill(0);
  }
  const { header, payload } = opened;
  if (opts.expectPeerId !== undefined && header.peerId !== opts.expectPeerId)
    throw new BackupError(
      'BACKUP_WRONG_SIGNER',
      `backup is of signer ${header.peerId}, not of ${opts.expectPeerId}: nothing restored`,
    );
  const privateKey = (() => {
    try {
      return privateKeyFromProtobuf(Uint8Array.from(Buffer.from(payload.identity, 'base64')));
    } catch {
      throw new BackupError('BACKUP_FORMAT', 'backup payload: identity key malformed');
    }
  })();
  const values = payload.entries.map((e) => ({ ...e, bytes: Uint8Array.from(Buffer.from(e.v, 'base64')) }));
  if (values.some((e) => !backupScope(e.s, e.k)))
    throw new BackupError('BACKUP_FORMAT', 'backup payload: an entry outside the backup scope');
  for (const k of header.keys) {
    const meta = values.find((e) => e.s === 'shares' && e.k === `${k.keyId}/meta`);
    let epoch: unknown;
    try {
      epoch = meta ? (JSON.parse(dec.decode(meta.bytes)) as { epoch?: unknown }).epoch : undefined;
    } catch {
      epoch = undefined;
    }
    if (epoch !== k.epoch)
      throw new BackupError('BACKUP_FORMAT', `backup payload: no record of key ${k.keyId} at epoch ${k.epoch}`);
  }
  const dataDir = resolve(opts.dataDir);
  if (!(await isEmptyOrAbsent(dataDir)))
    throw new BackupError('BACKUP_TARGET_NOT_EMPTY', `${dataDir} is not empty: restore into a new, empty data folder`);
  await mkdir(dirname(dataDir), { recursive: true, mode: 0o700 });
  const tmp = join(dirname(dataDir), `.${basename(dataDir)}.restore-${randomBytes(6).toString('hex')}`);
  await mkdir(tmp, { mode: 0o700 });
  try {
    const id = await writeIdentity(tmp, privateKey, opts.passphrase, opts.scrypt);
    if (id.peerId !== header.peerId)
      throw new BackupError('BACKUP_FORMAT', 'backup payload: identity does not match the header peer id');
    id.secretKey.fill(0);
    const store = await SecureStore.open(join(tmp, 'db'), opts.passphrase, opts.scrypt);
    try {
      const now = opts.now ?? new Date();
      await store.batch([
        ...values.map((e): StoreOp => ({ type: 'put', sublevel: e.s, key: e.k, value: e.bytes })),
        // has run before: its first start finds no state file of its own → a restore (generation.ts)
        { type: 'put', sublevel: 'state', key: 'generation', value: enc.encode('1') },
        {
          type: 'put',
          sublevel: 'state',
          key: 'restored',
          value: enc.encode(
            JSON.stringify({ restoredAt: now.toISOString(), backupCreatedAt: header.createdAt, peerId: header.peerId }),
          ),
        },
        // the shares restored are those of this backup: it is current for them
        ...stateOps(header.keys, Date.parse(header.createdAt)),
      ]);
    } finally {
      await store.close();
    }
    for (const e of values) e.bytes.fill(0);
    await syncDir(tmp);
    // rename(2) onto an absent or EMPTY directory: all or nothing
    await rename(tmp, dataDir).catch((e: NodeJS.ErrnoException) => {
      throw e.code === 'ENOTEMPTY' || e.code === 'EEXIST'
        ? new BackupError('BACKUP_TARGET_NOT_EMPTY', `${dataDir} is not empty: restore into a new, empty data folder`)
        : e;
    });
    await syncDir(dirname(dataDir));
  } catch (e) {
    await rm(tmp, { recursive: true, force: true });
    throw e;
  }
  return {
    dataDir,
    peerId: header.peerId,
    createdAt: header.createdAt,
    keys: header.keys,
    entries: values.length,
  };
}

/** Read a backup file. @throws BackupError `BACKUP_FORMAT` when it cannot be read */
export async function readBackupFile(path: string): Promise<Uint8Array> {
  try {
    return new Uint8Array(await readFile(path));
  } catch (e) {
    throw new BackupError('BACKUP_FORMAT', `${path}: ${(e as NodeJS.ErrnoException).code ?? 'unreadable'}`);
  }
}
