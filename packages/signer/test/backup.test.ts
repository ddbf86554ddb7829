/**
 * Encrypted signer backup (backup.ts, backup-envelope.ts) on real LevelDB stores: what a restore
 * brings back (identity, committed key shares and records, learned-policy floors) and what it never
 * does (presignatures, the FROST nonce ledger, the transfer ledger, the store generation, pending
 * reshare entries); that the first start of a restored store records a restore through the
 * existing generation mechanism; and that a wrong recovery key or any changed, missing or
 * re-versioned byte is an error that writes nothing.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SecureStore } from '@custodian/ceremony/level-store';
import { afterAll, describe, expect, it } from 'vitest';
import {
  BACKUP_VERSION,
  BackupError,
  createBackup,
  createIdentity,
  inspectBackup,
  keyBackupState,
  loadIdentity,
  restoreBackup,
  startGeneration,
  writeGenerationFile,
  writeRecoveryKey,
} from '../src/index.js';
import { tempDir } from './cluster.js';

const PASS = 'backup test passphrase';
const SCRYPT = { N: 1 << 10, r: 8, p: 1 };
const enc = new TextEncoder();
const dec = new TextDecoder();
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const keyId = 'cd'.repeat(16);
/** A recognisable stand-in for share bytes (the store treats every value alike). */
const SHARE = 'SHARE-SECRET-0123456789abcdef-do-not-log';
const REVOKED = '[{"deviceId":"lost-phone","publicKey":"02aa"}]';

/** A stopped signer's data folder: identity + a store with every kind of record. */
async function signerFolder(label: string) {
  const dir = tempDir(label);
  dirs.push(dir);
  const dataDir = join(dir, 'signer');
  const id = await createIdentity(dataDir, PASS, SCRYPT);
  const store = await SecureStore.open(join(dataDir, 'db'), PASS, SCRYPT);
  const record = { keyId, threshold: 2, parties: [id.peerId], keys: [], epoch: 3, createdAt: '2026-01-01T00:00:00Z' };
  await store.batch([
    { type: 'put', sublevel: 'shares', key: `${keyId}/meta`, value: enc.encode(JSON.stringify(record)) },
    { type: 'put', sublevel: 'shares', key: `${keyId}/ed25519`, value: enc.encode(SHARE) },
    { type: 'put', sublevel: 'shares', key: `pending/${keyId}/ed25519`, value: enc.encode('pending reshare share') },
    { type: 'put', sublevel: 'presignatures', key: `${keyId}/p1`, value: enc.encode('presignature p1') },
    { type: 'put', sublevel: 'nonces', key: 'n1', value: enc.encode('nonce commitment') },
    { type: 'put', sublevel: 'ledger', key: 't/transfer-1', value: enc.encode('{"signed":true}') },
    { type: 'put', sublevel: 'ledger', key: 'policy-known/p-1', value: enc.encode('{"version":4}') },
    { type: 'put', sublevel: 'primes', key: 'q1', value: enc.encode('safe prime') },
    { type: 'put', sublevel: 'state', key: 'generation', value: enc.encode('7') },
    { type: 'put', sublevel: 'state', key: 'rollback', value: enc.encode('{"detectedAt":"2026-01-01T00:00:00Z"}') },
    { type: 'put', sublevel: 'state', key: 'revoked-approvers', value: enc.encode(REVOKED) },
  ]);
  await store.close();
  const keys = await writeRecoveryKey(join(dir, 'recovery'));
  return { dir, dataDir, peerId: id.peerId, keys };
}

async function backupOf(f: Awaited<ReturnType<typeof signerFolder>>) {
  const out = join(f.dir, 'signer.backup');
  const summary = await createBackup({
    dataDir: f.dataDir,
    passphrase: PASS,
    scrypt: SCRYPT,
    recoveryPub: readFileSync(f.keys.pub, 'utf8'),
    out,
  });
  return { out, summary, bytes: new Uint8Array(readFileSync(out)) };
}

async function allKeys(store: SecureStore, sub: Parameters<SecureStore['keys']>[0]) {
  return store.keys(sub);
}

describe('signer backup and restore', () => {
  it('round trip: identity, committed shares, records and policy floors come back; presignatures, nonces, transfer ledger, primes and pending entries do not; the first start records a restore', async () => {
    const f = await signerFolder('backup-rt');
    const { out, summary } = await backupOf(f);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    expect(statSync(f.keys.key).mode & 0o777).toBe(0o600);
    expect(summary.keys).toEqual([{ keyId, epoch: 3 }]);
    expect(summary.peerId).toBe(f.peerId);
    // no temp file left beside it
    expect(readdirSync(f.dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);

    const target = join(f.dir, 'new-machine', 'signer');
    const r = await restoreBackup({
      file: new Uint8Array(readFileSync(out)),
      recoveryKey: readFileSync(f.keys.key, 'utf8'),
      dataDir: target,
      passphrase: 'another passphrase on the new machine',
      scrypt: SCRYPT,
    });
    expect(r.peerId).toBe(f.peerId);
    expect((await loadIdentity(target, 'another passphrase on the new machine')).peerId).toBe(f.peerId);
    const store = await SecureStore.open(join(target, 'db'), 'another passphrase on the new machine', SCRYPT);
    try {
      expect(await allKeys(store, 'shares')).toEqual([`${keyId}/ed25519`, `${keyId}/meta`]);
      expect(dec.decode((await store.get('shares', `${keyId}/ed25519`)) as Uint8Array)).toBe(SHARE);
      expect(await allKeys(store, 'presignatures')).toEqual([]);
      expect(await allKeys(store, 'nonces')).toEqual([]);
      expect(await allKeys(store, 'primes')).toEqual([]);
      expect(await allKeys(store, 'ledger')).toEqual(['policy-known/p-1']);
      // revocations survive; the old generation and rollback record do not (a new store)
      expect(dec.decode((await store.get('state', 'revoked-approvers')) as Uint8Array)).toBe(REVOKED);
      expect(await allKeys(store, 'state')).toEqual([`backup/${keyId}`, 'generation', 'restored', 'revoked-approvers']);
      expect(dec.decode((await store.get('state', 'generation')) as Uint8Array)).toBe('1');
      // the backup it came from is current for the restored shares
      expect(await keyBackupState(store, keyId)).toEqual({ epoch: 3, unixMs: Date.parse(summary.createdAt) });
      // first start (no state file on the new machine): the existing rollback rule applies
      const g = await startGeneration(store, join(f.dir, 'new-machine', 'signer.generation.json'));
      expect(g.detectedNow).toBe(true);
      expect(g.rollback?.reason).toBe('state-file-missing');
    } finally {
      await store.close();
    }
  });

  it('restored where the old state file survived (same path, the lost store): recorded as a restore too', async () => {
    const f = await signerFolder('backup-samepath');
    const { out } = await backupOf(f);
    const old = await SecureStore.open(join(f.dataDir, 'db'), PASS, SCRYPT);
    const genFile = join(f.dir, 'signer.generation.json');
    await writeGenerationFile(genFile, { store: old.id, generation: 9 });
    await old.close();
    rmSync(f.dataDir, { recursive: true });
    await restoreBackup({
      file: new Uint8Array(readFileSync(out)),
      recoveryKey: readFileSync(f.keys.key, 'utf8'),
      dataDir: f.dataDir,
      passphrase: PASS,
      scrypt: SCRYPT,
    });
    const store = await SecureStore.open(join(f.dataDir, 'db'), PASS, SCRYPT);
    try {
      const g = await startGeneration(store, genFile);
      expect(g.detectedNow).toBe(true);
      expect(g.rollback?.reason).toBe('other-store');
    } finally {
      await store.close();
    }
  });

  it('records the backup epoch and time per key; a later epoch makes it not current', async () => {
    const f = await signerFolder('backup-state');
    const now = new Date('2026-11-26T08:00:00.000Z');
    await createBackup({
      dataDir: f.dataDir,
      passphrase: PASS,
      scrypt: SCRYPT,
      recoveryPub: readFileSync(f.keys.pub, 'utf8'),
      out: join(f.dir, 'b1'),
      now,
    });
    const store = await SecureStore.open(join(f.dataDir, 'db'), PASS, SCRYPT);
    try {
      expect(await keyBackupState(store, keyId)).toEqual({ epoch: 3, unixMs: now.getTime() });
    } finally {
      await store.close();
    }
  });

  it('the store of a running signer is locked: BACKUP_STORE_LOCKED, no file', async () => {
    const f = await signerFolder('backup-locked');
    const running = await SecureStore.open(join(f.dataDir, 'db'), PASS, SCRYPT);
    try {
      const e = await backupOf(f).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(BackupError);
      expect((e as BackupError).code).toBe('BACKUP_STORE_LOCKED');
      expect(existsSync(join(f.dir, 'signer.backup'))).toBe(false);
    } finally {
      await running.close();
    }
  });

  it('create refuses the secret recovery.key in place of recovery.pub', async () => {
    const f = await signerFolder('backup-secretkey');
    const e = await createBackup({
      dataDir: f.dataDir,
      passphrase: PASS,
      scrypt: SCRYPT,
      recoveryPub: readFileSync(f.keys.key, 'utf8'),
      out: join(f.dir, 'x.backup'),
    }).then(refusedWith, refusedWith);
    expect(e.code).toBe('RECOVERY_KEY_INVALID');
    expect(e.message).toMatch(/keep recovery.key offline/);
    expect(existsSync(join(f.dir, 'x.backup'))).toBe(false);
  });

  it('inspect reads the header without a secret', async () => {
    const f = await signerFolder('backup-inspect');
    const { bytes, summary } = await backupOf(f);
    const h = inspectBackup(bytes);
    expect(h).toMatchObject({
      format: 'custodian.signer.backup',
      version: BACKUP_VERSION,
      peerId: f.peerId,
      recipient: f.keys.fingerprint,
      createdAt: summary.createdAt,
      keys: [{ keyId, epoch: 3 }],
      authenticated: false,
    });
    expect(Buffer.from(bytes).includes(Buffer.from(SHARE))).toBe(false);
  });

  describe('bad input: an error with a stable code, nothing written', () => {
    const cases: [string, (b: Uint8Array, f: Awaited<ReturnType<typeof signerFolder>>) => Uint8Array, string][] = [
      ['a flipped ciphertext byte', (b) => flip(b, b.length - 30), 'BACKUP_INTEGRITY'],
      ['a flipped tag byte', (b) => flip(b, b.length - 1), 'BACKUP_INTEGRITY'],
      [
        'a changed header (key epoch)',
        (b) => editHeader(b, (h) => h.replace('"epoch":3', '"epoch":4')),
        'BACKUP_INTEGRITY',
      ],
      ['the file truncated inside the payload', (b) => b.subarray(0, b.length - 17), 'BACKUP_INTEGRITY'],
      ['the file truncated inside the header', (b) => b.subarray(0, 40), 'BACKUP_FORMAT'],
      ['the file truncated to its magic', (b) => b.subarray(0, 8), 'BACKUP_FORMAT'],
      ['an empty file', () => new Uint8Array(0), 'BACKUP_FORMAT'],
      ['another format version', (b) => editHeader(b, (h) => h.replace('"version":1', '"version":2')), 'BACKUP_FORMAT'],
      ['not a backup', () => enc.encode('{"hello":"world"}'), 'BACKUP_FORMAT'],
    ];
    it.each(cases)('%s', async (_name, mutate, code) => {
      const f = await signerFolder('backup-bad');
      const { bytes } = await backupOf(f);
      const target = join(f.dir, 'restored');
      const e = await restoreBackup({
        file: mutate(bytes, f),
        recoveryKey: readFileSync(f.keys.key, 'utf8'),
        dataDir: target,
        passphrase: PASS,
        scrypt: SCRYPT,
      }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(BackupError);
      expect((e as BackupError).code).toBe(code);
      expect(existsSync(target)).toBe(false);
      expect(readdirSync(f.dir).filter((n) => n.includes('restore'))).toEqual([]);
    });

    it('the wrong recovery key (and one claiming the right fingerprint)', async () => {
      const f = await signerFolder('backup-wrongkey');
      const { bytes } = await backupOf(f);
      const other = await writeRecoveryKey(join(f.dir, 'other'));
      const target = join(f.dir, 'restored');
      const restore = (file: Uint8Array) =>
        restoreBackup({
          file,
          recoveryKey: readFileSync(other.key, 'utf8'),
          dataDir: target,
          passphrase: PASS,
          scrypt: SCRYPT,
        }).then(refusedWith, refusedWith);
      expect((await restore(bytes)).code).toBe('BACKUP_WRONG_RECOVERY_KEY');
      // an attacker rewrites the header's recipient to the other key's fingerprint: the header is
      // authenticated and the key agreement differs
      const forged = editHeader(bytes, (h) => h.replace(f.keys.fingerprint, other.fingerprint));
      expect((await restore(forged)).code).toBe('BACKUP_INTEGRITY');
      expect(existsSync(target)).toBe(false);
      // a recovery key file whose public half does not match its secret
      const k = JSON.parse(readFileSync(other.key, 'utf8')) as Record<string, string>;
      const mixed = JSON.stringify({ ...k, publicKey: JSON.parse(readFileSync(f.keys.pub, 'utf8')).publicKey });
      const e = await restoreBackup({ file: bytes, recoveryKey: mixed, dataDir: target, passphrase: PASS }).then(
        refusedWith,
        refusedWith,
      );
      expect(e.code).toBe('RECOVERY_KEY_INVALID');
      expect(e.message).not.toContain(k.secretKey as string);
      expect(existsSync(target)).toBe(false);
    });

    it('a backup of another signer than the expected peer id (anyone with recovery.pub can write one)', async () => {
      const f = await signerFolder('backup-forged');
      const forger = await signerFolder('backup-forger');
      // the forger encrypts its own folder to the victim's PUBLIC recovery key
      const forged = join(forger.dir, 'forged.backup');
      await createBackup({
        dataDir: forger.dataDir,
        passphrase: PASS,
        scrypt: SCRYPT,
        recoveryPub: readFileSync(f.keys.pub, 'utf8'),
        out: forged,
      });
      const target = join(f.dir, 'restored');
      const e = await restoreBackup({
        file: new Uint8Array(readFileSync(forged)),
        recoveryKey: readFileSync(f.keys.key, 'utf8'),
        dataDir: target,
        passphrase: PASS,
        scrypt: SCRYPT,
        expectPeerId: f.peerId,
      }).then(refusedWith, refusedWith);
      expect(e.code).toBe('BACKUP_WRONG_SIGNER');
      expect(existsSync(target)).toBe(false);
    });

    it('a non-empty target folder is refused and left as it was', async () => {
      const f = await signerFolder('backup-nonempty');
      const { bytes } = await backupOf(f);
      const target = join(f.dir, 'occupied');
      mkdirSync(target);
      writeFileSync(join(target, 'keep.txt'), 'mine');
      const e = await restoreBackup({
        file: bytes,
        recoveryKey: readFileSync(f.keys.key, 'utf8'),
        dataDir: target,
        passphrase: PASS,
        scrypt: SCRYPT,
      }).then(refusedWith, refusedWith);
      expect(e.code).toBe('BACKUP_TARGET_NOT_EMPTY');
      expect(readdirSync(target)).toEqual(['keep.txt']);
      // the live data folder itself is never a restore target
      const live = await restoreBackup({
        file: bytes,
        recoveryKey: readFileSync(f.keys.key, 'utf8'),
        dataDir: f.dataDir,
        passphrase: PASS,
        scrypt: SCRYPT,
      }).then(refusedWith, refusedWith);
      expect(live.code).toBe('BACKUP_TARGET_NOT_EMPTY');
    });
  });
});

/** The error a restore was refused with (a restore that succeeds fails the test). */
function refusedWith(x: unknown): BackupError {
  expect(x).toBeInstanceOf(BackupError);
  return x as BackupError;
}

function flip(b: Uint8Array, i: number): Uint8Array {
  const c = Uint8Array.from(b);
  c[i] = (c[i] as number) ^ 0x01;
  return c;
}

/** Rewrite the JSON header (same length or not), keeping the payload bytes. */
function editHeader(b: Uint8Array, edit: (h: string) => string): Uint8Array {
  const h = new DataView(b.buffer, b.byteOffset).getUint32(8, false);
  const header = enc.encode(edit(dec.decode(b.subarray(12, 12 + h))));
  const out = new Uint8Array(12 + header.length + b.length - 12 - h);
  out.set(b.subarray(0, 8));
  new DataView(out.buffer).setUint32(8, header.length, false);
  out.set(header, 12);
  out.set(b.subarray(12 + h), 12 + header.length);
  return out;
}
