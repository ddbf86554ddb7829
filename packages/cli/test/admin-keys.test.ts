/**
 * `custodian admin keys …` end to end (issue #22): the commander program in process, real HTTP to
 * a real coordinator, real signer daemons on real LevelDB (test/keys-harness.ts): refresh, a
 * replace-signer the CLI signs with the Admin device key file, the recovery drill's report, the
 * key changes listed, a coordinator answer tampered on the way (a proxy: a coordinator that shows
 * one document and asks to sign another digest) refused before anything is signed, the CLI's own
 * refusals (unknown party, unreadable device key) with stable codes and no key change made, and a
 * Viewer refused.
 */

import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { bytesToHex } from '@custodian/crypto';
import { type KeyChangeDocument, keyChangeDigest } from '@custodian/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD } from '../../coordinator/test/helpers.js';
import { type KeysHarness, startKeysHarness } from './keys-harness.js';

let k: KeysHarness;
beforeAll(async () => {
  k = await startKeysHarness();
}, 240_000);
afterAll(async () => {
  await k?.close();
});

/** The master key as listed. */
async function masterKey() {
  const r = await k.cli('--json', 'master-keys', 'list');
  expect(r.code, r.err).toBe(0);
  type Mk = {
    master_key_id: string;
    threshold: number;
    parties: { kind: string; id: string }[];
    secp256k1_public_key: string;
    ed25519_public_key: string;
  };
  const mk = (JSON.parse(r.out) as { data: Mk[] }).data.find((m) => m.master_key_id === k.masterKeyId);
  if (mk === undefined) throw new Error('no master key');
  return mk;
}

/**
 * A proxy in front of the coordinator that rewrites the `digest` of a created key change to the
 * digest of another document (one more party): what a coordinator that shows one document and
 * asks to sign another would answer. Records every request it forwards.
 */
async function tamperingProxy(target: string): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    seen.push(`${req.method} ${req.url}`);
    const headers: Record<string, string> = {};
    for (const [h, v] of Object.entries(req.headers)) if (typeof v === 'string' && h !== 'host') headers[h] = v;
    const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
    const r = await fetch(target + (req.url ?? ''), { method: req.method, headers, ...(body ? { body } : {}) });
    let text = await r.text();
    if (req.method === 'POST' && /\/key-changes$/.test(req.url ?? '') && r.status === 201) {
      const v = JSON.parse(text) as { document: KeyChangeDocument; digest: string };
      const other = { ...v.document, new_parties: [...v.document.new_parties, '12D3KooWAttackerAttackerAttacker'] };
      v.digest = bytesToHex(keyChangeDigest(other));
      text = JSON.stringify(v);
    }
    res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
    res.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const a = server.address();
  const port = typeof a === 'object' && a !== null ? a.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('custodian admin keys', () => {
  it('refresh --wait: the ceremony succeeds, the public keys stay', async () => {
    const before = await masterKey();
    const r = await k.cli('--json', 'keys', 'refresh', k.masterKeyId, '--wait');
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ kind: 'refresh', status: 'SUCCEEDED', master_key_id: k.masterKeyId });
    const after = await masterKey();
    expect(after.secp256k1_public_key).toBe(before.secp256k1_public_key);
    expect(after.ed25519_public_key).toBe(before.ed25519_public_key);
    // table output prints the progress lines, then the ceremony
    const t = await k.cli('keys', 'refresh', k.masterKeyId, '--wait');
    expect(t.code, t.err).toBe(0);
    expect(t.out).toMatch(/^refresh [A-Z_]+ \d+\/3/m);
    expect(t.out).toMatch(/status\s+SUCCEEDED/);
  }, 120_000);

  it('a digest that is not the shown document’s is refused before anything is signed', async () => {
    const proxy = await tamperingProxy(k.h.url);
    try {
      const r = await k.cli(
        '--coordinator-url',
        proxy.url,
        'keys',
        'replace-signer',
        k.masterKeyId,
        `server:${k.signers[2]!.signerId}`,
        `server:${k.signers[3]!.signerId}`,
        '--device-key',
        k.adminDeviceKeyFile,
      );
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/KEY_CHANGE_DIGEST_MISMATCH/);
      expect(r.out).toMatch(/digest: [0-9a-f]{64}/); // the document was shown
      expect(proxy.seen.some((x) => x.startsWith('POST') && x.endsWith('/key-changes'))).toBe(true);
      expect(proxy.seen.filter((x) => x.includes('/signature'))).toEqual([]);
      // the change waits for a signature that never came; nothing ran
      const list = await k.cli('--json', 'keys', 'changes', k.masterKeyId);
      const changes = (JSON.parse(list.out) as { data: { status: string; ceremony_id: string | null }[] }).data;
      expect(changes[0]).toMatchObject({ status: 'AWAITING_SIGNATURE', ceremony_id: null });
    } finally {
      await proxy.close();
    }
  }, 60_000);

  it('replace-signer: shows the change, signs it with the Admin device key, the new set holds the key', async () => {
    const before = await masterKey();
    const [, , s3, s4] = k.signers;
    const r = await k.cli(
      'keys',
      'replace-signer',
      k.masterKeyId,
      `server:${s3!.signerId}`,
      s4!.name, // a bare name is looked up
      '--device-key',
      k.adminDeviceKeyFile,
      '--wait',
    );
    expect(r.code, `${r.out}\n${r.err}`).toBe(0);
    expect(r.out).toMatch(/old set: 2-of-3/);
    expect(r.out).toMatch(/new set: 2-of-3/);
    expect(r.out).toContain(`server:${s4!.signerId} (s4)  (new)`);
    expect(r.out).toMatch(/status\s+SUCCEEDED/);
    const after = await masterKey();
    expect(after.parties.map((p) => p.id).sort()).toEqual(
      [k.signers[0]!.signerId, k.signers[1]!.signerId, s4!.signerId].sort(),
    );
    expect(after.secp256k1_public_key).toBe(before.secp256k1_public_key);
    expect(after.ed25519_public_key).toBe(before.ed25519_public_key);
    // listed, and shown with its document
    const list = await k.cli('keys', 'changes', k.masterKeyId);
    expect(list.out).toMatch(/replace-signer\s+SUCCEEDED/);
    const id = /^([0-9a-f-]{36})\s+replace-signer\s+SUCCEEDED/m.exec(list.out)?.[1] as string;
    const show = await k.cli('--json', 'keys', 'changes', 'show', k.masterKeyId, id);
    expect(JSON.parse(show.out)).toMatchObject({ change_id: id, status: 'SUCCEEDED', reason: 'replace-signer' });
  }, 180_000);

  it('drill --wait: per key type whether the signature verified, per signer whether its backup is current', async () => {
    const r = await k.cli('keys', 'drill', k.masterKeyId, '--wait');
    expect(r.out).toMatch(/ED25519\s+true/);
    expect(r.out).toMatch(/SECP256K1_TAPROOT\s+true/);
    expect(r.out).toMatch(/BACKUP_CURRENT/);
    // no signer was ever backed up: the drill fails on that, and says so
    expect(r.out).toMatch(/server:[0-9a-f-]{36}\s.*false/);
    expect(r.out).toMatch(/drill FAILED/);
    expect(r.code).toBe(1);
    const j = await k.cli('--json', 'keys', 'drill', k.masterKeyId, '--wait');
    const v = JSON.parse(j.out);
    expect(v).toMatchObject({ kind: 'drill', status: 'SUCCEEDED', passed: false });
    expect(v.result.signatures.every((s: { verified: boolean }) => s.verified)).toBe(true);
  }, 120_000);

  it('drill --wait passes (exit 0) once every party is backed up at the current epoch', async () => {
    const recovery = join(k.dir, 'offline');
    const g = await k.signerCli('backup', 'keygen', '--out', recovery);
    expect(g.code, g.out).toBe(0);
    for (const s of k.signers) await k.backup(s, join(recovery, 'recovery.pub'));
    const r = await k.cli('keys', 'drill', k.masterKeyId, '--wait');
    expect(r.out, r.err).toMatch(/drill passed/);
    expect(r.out).not.toMatch(/\sfalse(\s|$)/m);
    expect(r.code).toBe(0);
    // a refresh moves the epoch on: the backups are no longer current
    expect((await k.cli('keys', 'refresh', k.masterKeyId, '--wait')).code).toBe(0);
    const stale = await k.cli('keys', 'drill', k.masterKeyId, '--wait');
    expect(stale.out).toMatch(/drill FAILED/);
    expect(stale.code).toBe(1);
  }, 180_000);

  it('refusals of the CLI itself carry stable codes: an unknown party, an unreadable device key', async () => {
    const before = JSON.parse((await k.cli('--json', 'keys', 'changes', k.masterKeyId)).out).total;
    const unknown = await k.cli(
      '--json',
      'keys',
      'replace-signer',
      k.masterKeyId,
      'nobody',
      `server:${k.signers[3]!.signerId}`,
      '--device-key',
      k.adminDeviceKeyFile,
    );
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.err)).toMatchObject({ code: 'UNKNOWN_PARTY' });
    const badKey = join(k.dir, 'not-a-key');
    await writeFile(badKey, 'not hex at all\n');
    const bad = await k.cli(
      'keys',
      'reshare',
      k.masterKeyId,
      '--threshold',
      '2',
      '--signers',
      's1,s2',
      '--device-key',
      badKey,
    );
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/expected a P-256 secret key as 64 hex digits/);
    expect(bad.err).not.toContain('not hex at all');
    // neither created a key change
    expect(JSON.parse((await k.cli('--json', 'keys', 'changes', k.masterKeyId)).out).total).toBe(before);
  }, 60_000);

  it('attack: an Admin session without a fresh step-up starts nothing; the CLI names the step-up', async () => {
    const token = await k.h.login('admin@example.com', ADMIN_PASSWORD);
    const count = async () =>
      (
        await k.h.c.db.query<{ n: number }>(
          `SELECT (SELECT count(*) FROM ceremonies) + (SELECT count(*) FROM key_changes) AS n`,
        )
      )[0]?.n;
    const before = await count();
    for (const args of [
      ['keys', 'refresh', k.masterKeyId],
      ['keys', 'drill', k.masterKeyId],
      [
        'keys',
        'replace-signer',
        k.masterKeyId,
        `server:${k.signers[2]!.signerId}`,
        `server:${k.signers[3]!.signerId}`,
        '--device-key',
        k.adminDeviceKeyFile,
      ],
    ]) {
      const r = await k.cliAs(token, ...args);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.err, args.join(' ')).toMatch(/403 STEP_UP_REQUIRED/);
      expect(r.err, args.join(' ')).toMatch(/custodian admin step-up/);
    }
    expect(await count()).toBe(before);
  }, 60_000);

  it('a Viewer is refused every key operation', async () => {
    const u = await k.cli(
      '--json',
      'users',
      'create',
      '--email',
      'viewer@example.com',
      '--name',
      'V',
      '--role',
      'VIEWER',
      '--password',
      ADMIN_PASSWORD,
    );
    expect(u.code, u.err).toBe(0);
    const token = await k.h.login('viewer@example.com', ADMIN_PASSWORD);
    for (const args of [
      ['keys', 'refresh', k.masterKeyId],
      ['keys', 'drill', k.masterKeyId],
      ['keys', 'changes', k.masterKeyId],
    ]) {
      const r = await k.cliAs(token, ...args);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.err, args.join(' ')).toMatch(/^error: 403 [A-Z_]+/);
    }
    const r = await k.cliAs(
      token,
      '--json',
      'keys',
      'reshare',
      k.masterKeyId,
      '--threshold',
      '2',
      '--signers',
      k.signers.map((s) => `server:${s.signerId}`).join(','),
      '--device-key',
      k.adminDeviceKeyFile,
    );
    expect(r.code).toBe(1);
    expect(JSON.parse(r.err)).toMatchObject({ status: 403 });
  }, 60_000);
});
