/**
 * Key lifecycle end to end with real signer processes (issue #22; keys/service.ts): a refresh keeps
 * the public keys and moves the epoch; a drill returns signatures the coordinator verified and
 * each signer's epoch and backup state; replace-signer (server → new server) signed by the Admin's
 * device commits — the master key's parties change, the public keys do not, the new set signs
 * (a drill among it) — and a change left COMMITTING by a previous process is completed at the next
 * start; removing a device pushes its revocation to every signer before the answer.
 * Review fixes: a new party down at the commit does not hold the change COMMITTING (SUCCEEDED once
 * t′ new parties and every leaving party committed; it is listed `uncommitted` and retried, and the
 * key is not busy); a signer restored from a backup made before a revocation (a new store id) gets
 * the revocation again before its next ceremony.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deviceSign } from '@custodian/wire';
import { bytesToHex, hexToBytes } from '@noble/curves/utils.js';
import { afterEach, describe, expect, it } from 'vitest';
import { MAIN, PASS, startNode, stopNode } from '../../signer/test/cluster.js';
import { enrollPhone, phoneKeys, userIdOf } from './device-fixtures.js';
import { ADMIN_EMAIL, type Json } from './helpers.js';
import { type KeyEnv, settled, startKeyEnv } from './key-env.js';

let env: KeyEnv | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const K = (e: KeyEnv) => `/admin/v1/master-keys/${e.masterKeyId}`;
const masterKey = async (e: KeyEnv): Promise<Json> =>
  (await e.h.req('GET', '/admin/v1/master-keys', { token: e.h.adminToken })).body.data.find(
    (m: Json) => m.master_key_id === e.masterKeyId,
  );

async function drill(e: KeyEnv): Promise<Json> {
  const r = await e.h.req('POST', `${K(e)}/drill`, { token: e.h.adminToken, body: {} });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  expect(r.body.kind).toBe('drill');
  return settled(e.h, r.body.ceremony_id);
}

/** Create and sign a replace-signer change; returns the change and the finished RESHARE ceremony. */
async function replaceSigner(e: KeyEnv, oldIndex: number, newIndex: number): Promise<{ change: Json; ceremony: Json }> {
  const c = await e.h.req('POST', `${K(e)}/key-changes`, {
    token: e.h.adminToken,
    body: {
      reason: 'replace-signer',
      old: { kind: 'server', id: e.serverIds[oldIndex] },
      new: { kind: 'server', id: e.serverIds[newIndex] },
    },
  });
  expect(c.status, JSON.stringify(c.body)).toBe(201);
  expect(c.body.status).toBe('AWAITING_SIGNATURE');
  const s = await e.h.req('POST', `${K(e)}/key-changes/${c.body.change_id}/signature`, {
    token: e.h.adminToken,
    body: {
      device_id: e.admin.deviceId,
      signature: bytesToHex(deviceSign(hexToBytes(c.body.digest), e.admin.keys.sk)),
    },
  });
  expect(s.status, JSON.stringify(s.body)).toBe(202);
  expect(s.body).toMatchObject({ kind: 'reshare', key_change_id: c.body.change_id });
  return { change: c.body, ceremony: await settled(e.h, s.body.ceremony_id) };
}

async function changeStatus(e: KeyEnv, changeId: string, want: string, ms = 60_000): Promise<Json> {
  const until = Date.now() + ms;
  for (;;) {
    const r = await e.h.req('GET', `${K(e)}/key-changes/${changeId}`, { token: e.h.adminToken });
    if (r.body.status === want || Date.now() > until) return r.body;
    await new Promise((res) => setTimeout(res, 200));
  }
}

describe('key lifecycle with real signers', () => {
  it('refresh keeps the public keys, moves the epoch and emits REFRESH_KEY_SHARES; a drill verifies', async () => {
    env = await startKeyEnv(3, 3);
    const before = await masterKey(env);
    const r = await env.h.req('POST', `${K(env)}/refresh`, { token: env.h.adminToken, body: {} });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(r.body).toMatchObject({ kind: 'refresh', master_key_id: env.masterKeyId });
    const done = await settled(env.h, r.body.ceremony_id);
    expect(done.status, JSON.stringify(done)).toBe('SUCCEEDED');
    expect(done.result).toEqual({ epoch: 1 });
    const after = await masterKey(env);
    expect(after.secp256k1_public_key).toBe(before.secp256k1_public_key);
    expect(after.ed25519_public_key).toBe(before.ed25519_public_key);
    const events = await env.h.c.db.query<{ body: string }>(
      `SELECT body FROM webhook_events WHERE event_type = 'REFRESH_KEY_SHARES'`,
    );
    expect(events.map((e) => JSON.parse(e.body).data)).toEqual([
      { master_key_id: env.masterKeyId, ceremony_id: r.body.ceremony_id, reason: 'refresh', epoch: 1 },
    ]);

    const d = await drill(env);
    expect(d.status, JSON.stringify(d)).toBe('SUCCEEDED');
    expect(d.result.signatures.map((s: Json) => s.algorithm).sort()).toEqual(['ED25519', 'SECP256K1_TAPROOT']);
    for (const s of d.result.signatures) {
      expect(s.verified).toBe(true);
      expect(s.signature).toMatch(/^[0-9a-f]{128}$/);
    }
    expect(d.result.signers).toHaveLength(3);
    for (const s of d.result.signers) {
      expect(s).toMatchObject({ kind: 'server', epoch: 1, backup_current: false, backup_at: null });
    }
  }, 600_000);

  it('replace-signer (server → new server) commits: parties change, public keys do not, the new set signs', async () => {
    env = await startKeyEnv(4, 3);
    const before = await masterKey(env);
    const { change, ceremony } = await replaceSigner(env, 2, 3);
    expect(ceremony.status, JSON.stringify(ceremony)).toBe('SUCCEEDED');
    expect(ceremony.result.signatures.every((s: Json) => s.verified)).toBe(true);
    const done = await changeStatus(env, change.change_id, 'SUCCEEDED');
    expect(done.status, JSON.stringify(done)).toBe('SUCCEEDED');
    const after = await masterKey(env);
    expect(after.parties.map((p: Json) => p.id)).toEqual([env.serverIds[0], env.serverIds[1], env.serverIds[3]]);
    expect(after.threshold).toBe(2);
    expect(after.secp256k1_public_key).toBe(before.secp256k1_public_key);
    expect(after.ed25519_public_key).toBe(before.ed25519_public_key);
    // the new set signs: a drill among t of the new parties, verified by the coordinator
    const d = await drill(env);
    expect(d.status, JSON.stringify(d)).toBe('SUCCEEDED');
    expect(d.result.signatures.every((s: Json) => s.verified)).toBe(true);
    expect(d.result.signers.map((s: Json) => s.id)).toEqual(after.parties.map((p: Json) => p.id));
  }, 600_000);

  it('a change left COMMITTING by a previous process is committed at the next start', async () => {
    env = await startKeyEnv(4, 3);
    const { change, ceremony } = await replaceSigner(env, 2, 3);
    expect(ceremony.status, JSON.stringify(ceremony)).toBe('SUCCEEDED');
    expect((await changeStatus(env, change.change_id, 'SUCCEEDED')).status).toBe('SUCCEEDED');
    // as a process that stopped after the COMMITTING transaction left it (the signers' commit is idempotent)
    await env.h.c.keys.stop();
    await env.h.c.db.query(`UPDATE key_changes SET status = 'COMMITTING' WHERE change_id = $1`, [change.change_id]);
    await env.h.c.keys.start();
    const done = await changeStatus(env, change.change_id, 'SUCCEEDED');
    expect(done.status, JSON.stringify(done)).toBe('SUCCEEDED');
  }, 600_000);

  it('removing a device pushes RevokeApprover to every signer before the answer', async () => {
    env = await startKeyEnv(3, 3);
    const phone = await enrollPhone(env.h, await phoneKeys(), 'lost phone', {
      userId: await userIdOf(env.h, ADMIN_EMAIL),
    });
    const r = await env.h.req('DELETE', `/admin/v1/devices/${phone}`, { token: env.h.adminToken });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const acks = await env.h.c.db.query<{ peer_id: string }>(
      'SELECT peer_id FROM revocation_acks WHERE device_id = $1',
      [phone],
    );
    expect(acks.map((a) => a.peer_id).sort()).toEqual(env.nodes.map((n) => n.peerId).sort());
  }, 600_000);

  it('a reshare whose new signer is down fails before COMMITTING; the old set keeps its key and signs', async () => {
    env = await startKeyEnv(4, 3);
    const before = await masterKey(env);
    await stopNode(env.nodes[3]!);
    const { change, ceremony } = await replaceSigner(env, 2, 3);
    expect(ceremony.status, JSON.stringify(ceremony)).toBe('FAILED');
    const v = await env.h.req('GET', `${K(env)}/key-changes/${change.change_id}`, { token: env.h.adminToken });
    expect(v.body.status).toBe('FAILED');
    expect(v.body.error).toBeTruthy();
    const after = await masterKey(env);
    expect(after.parties).toEqual(before.parties);
    const d = await drill(env);
    expect(d.status, JSON.stringify(d)).toBe('SUCCEEDED');
    expect(d.result.signatures.every((s: Json) => s.verified)).toBe(true);
    // a failed change is not signed again: a new change is needed
    const again = await env.h.req('POST', `${K(env)}/key-changes/${change.change_id}/signature`, {
      token: env.h.adminToken,
      body: {
        device_id: env.admin.deviceId,
        signature: bytesToHex(deviceSign(hexToBytes(change.digest), env.admin.keys.sk)),
      },
    });
    expect(again.status).toBe(409);
  }, 600_000);

  it('a signer offline at a device removal gets the revocation before its next ceremony', async () => {
    env = await startKeyEnv(3, 3);
    const phone = await enrollPhone(env.h, await phoneKeys(), 'lost phone', {
      userId: await userIdOf(env.h, ADMIN_EMAIL),
    });
    const offline = env.nodes[2]!;
    await stopNode(offline);
    const r = await env.h.req('DELETE', `/admin/v1/devices/${phone}`, { token: env.h.adminToken });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const acked = async () =>
      (
        await env!.h.c.db.query<{ peer_id: string }>('SELECT peer_id FROM revocation_acks WHERE device_id = $1', [
          phone,
        ])
      )
        .map((a) => a.peer_id)
        .sort();
    expect(await acked()).toEqual([env.nodes[0]!.peerId, env.nodes[1]!.peerId].sort());
    await startNode(offline);
    // its next ceremony (a refresh: every party of the key) first delivers the revocation
    const r2 = await env.h.req('POST', `${K(env)}/refresh`, { token: env.h.adminToken, body: {} });
    expect(r2.status, JSON.stringify(r2.body)).toBe(202);
    expect((await settled(env.h, r2.body.ceremony_id)).status).toBe('SUCCEEDED');
    expect(await acked()).toEqual(env.nodes.map((n) => n.peerId).sort());
  }, 600_000);

  it('keys.refreshIntervalHours refreshes a key whose last refresh is older than the interval, once', async () => {
    env = await startKeyEnv(3, 3, { refreshIntervalHours: 1, scheduleTickMs: 200 });
    const refreshes = async () =>
      env!.h.c.db.query<{ ceremony_id: string; status: string; started_by: string | null }>(
        `SELECT ceremony_id::text AS ceremony_id, status, started_by::text AS started_by FROM ceremonies WHERE kind = 'refresh'`,
      );
    await new Promise((r) => setTimeout(r, 1000));
    expect(await refreshes()).toEqual([]); // not due: the key was just created
    // the key as created two hours ago (the clock itself stays: ceremony deadlines are absolute times)
    await env.h.c.db.query(
      `UPDATE master_keys SET created_at = created_at - interval '2 hours' WHERE master_key_id = $1`,
      [env.masterKeyId],
    );
    const until = Date.now() + 120_000;
    while ((await refreshes()).length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    const [first] = await refreshes();
    expect(first?.started_by).toBeNull();
    expect((await settled(env.h, first!.ceremony_id)).status).toBe('SUCCEEDED');
    await new Promise((r) => setTimeout(r, 1000));
    expect(await refreshes()).toHaveLength(1); // refreshed now: not due again
    expect((await masterKey(env)).epoch).toBe(1);
  }, 600_000);

  it('reshare 2-of-3 → 3-of-4 (a signer added, threshold raised) commits with the public keys unchanged', async () => {
    env = await startKeyEnv(4, 3);
    const before = await masterKey(env);
    const c = await env.h.req('POST', `${K(env)}/key-changes`, {
      token: env.h.adminToken,
      body: { reason: 'reshare', threshold: 3, signers: env.serverIds.map((id) => ({ kind: 'server', id })) },
    });
    expect(c.status, JSON.stringify(c.body)).toBe(201);
    expect(c.body.document).toMatchObject({ new_threshold: 3, reason: 'reshare' });
    expect(c.body.document.new_parties).toEqual(env.nodes.map((n) => n.peerId));
    const s = await env.h.req('POST', `${K(env)}/key-changes/${c.body.change_id}/signature`, {
      token: env.h.adminToken,
      body: {
        device_id: env.admin.deviceId,
        signature: bytesToHex(deviceSign(hexToBytes(c.body.digest), env.admin.keys.sk)),
      },
    });
    expect(s.status, JSON.stringify(s.body)).toBe(202);
    expect((await settled(env.h, s.body.ceremony_id)).status).toBe('SUCCEEDED');
    expect((await changeStatus(env, c.body.change_id, 'SUCCEEDED')).status).toBe('SUCCEEDED');
    const after = await masterKey(env);
    expect(after).toMatchObject({ threshold: 3, epoch: 1, secp256k1_public_key: before.secp256k1_public_key });
    expect(after.parties.map((p: Json) => p.id)).toEqual(env.serverIds);
    const d = await drill(env);
    expect(d.status, JSON.stringify(d)).toBe('SUCCEEDED');
    expect(d.result.signatures.every((x: Json) => x.verified)).toBe(true);
    expect(d.result.signers.every((x: Json) => x.epoch === 1)).toBe(true);
  }, 600_000);

  it('a new party down at the commit: SUCCEEDED with it listed uncommitted, the key not busy; it commits when back', async () => {
    env = await startKeyEnv(4, 3);
    const { change, ceremony } = await replaceSigner(env, 2, 3);
    expect(ceremony.status, JSON.stringify(ceremony)).toBe('SUCCEEDED');
    expect((await changeStatus(env, change.change_id, 'SUCCEEDED')).status).toBe('SUCCEEDED');
    // as a process that stopped right after the COMMITTING transaction, with the new party then down
    await env.h.c.keys.stop();
    await env.h.c.db.query(`UPDATE key_changes SET status = 'COMMITTING', uncommitted = NULL WHERE change_id = $1`, [
      change.change_id,
    ]);
    const down = env.nodes[3]!;
    await stopNode(down);
    await env.h.c.keys.start();
    const done = await changeStatus(env, change.change_id, 'SUCCEEDED');
    expect(done.status, JSON.stringify(done)).toBe('SUCCEEDED');
    expect(done.uncommitted).toEqual([`server:${env.serverIds[3]}`]);
    // a later key operation is not refused as busy: a drill among the new set's reachable parties
    const d = await drill(env);
    expect(d.status, JSON.stringify(d)).toBe('SUCCEEDED');
    // back up: the background retry commits it and the list empties
    await startNode(down);
    const until = Date.now() + 120_000;
    let v: Json = done;
    while (v.uncommitted.length > 0 && Date.now() < until) {
      await new Promise((res) => setTimeout(res, 500));
      v = (await env.h.req('GET', `${K(env)}/key-changes/${change.change_id}`, { token: env.h.adminToken })).body;
    }
    expect(v).toMatchObject({ status: 'SUCCEEDED', uncommitted: [] });
  }, 600_000);

  it('a signer restored from a backup made before a revocation gets the revocation again before its next ceremony', async () => {
    env = await startKeyEnv(3, 3);
    const e = env;
    const n2 = e.nodes[2]!;
    const tmp = await mkdtemp(join(tmpdir(), 'custodian-restore-'));
    const signerCli = (args: string[]) =>
      new Promise<{ code: number; out: string }>((resolve) => {
        execFile(
          process.execPath,
          [MAIN, 'signer', ...args],
          { env: { ...process.env, CUSTODIAN_TEST_PASS: PASS }, timeout: 60_000 },
          (err, stdout, stderr) =>
            resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
        );
      });
    try {
      const rec = join(tmp, 'recovery');
      const backup = join(tmp, 'signer.backup');
      expect((await signerCli(['backup', 'keygen', '--out', rec])).code).toBe(0);
      await stopNode(n2);
      const made = await signerCli([
        'backup',
        'create',
        '-c',
        n2.config,
        '--recovery-key',
        join(rec, 'recovery.pub'),
        '--out',
        backup,
      ]);
      expect(made.code, made.out).toBe(0);
      await startNode(n2);
      const phone = await enrollPhone(e.h, await phoneKeys(), 'lost phone', {
        userId: await userIdOf(e.h, ADMIN_EMAIL),
      });
      const r = await e.h.req('DELETE', `/admin/v1/devices/${phone}`, { token: e.h.adminToken });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const acks = async () =>
        e.h.c.db.query<{ store_id: string }>(
          'SELECT store_id FROM revocation_acks WHERE device_id = $1 AND peer_id = $2 ORDER BY acked_at',
          [phone, n2.peerId],
        );
      const first = await acks();
      expect(first).toHaveLength(1);
      expect(first[0]!.store_id).toMatch(/^[0-9a-f]{32}$/);
      // the machine is lost; the backup (from before the revocation) is restored: a new store
      await stopNode(n2);
      await rm(n2.dataDir, { recursive: true, force: true });
      const restored = await signerCli([
        'backup',
        'restore',
        '-c',
        n2.config,
        '--in',
        backup,
        '--recovery-key',
        join(rec, 'recovery.key'),
        '--peer-id',
        n2.peerId,
      ]);
      expect(restored.code, restored.out).toBe(0);
      await startNode(n2);
      // its next ceremony (a refresh: every party of the key) first delivers the revocation to the new store
      const f = await e.h.req('POST', `${K(e)}/refresh`, { token: e.h.adminToken, body: {} });
      expect(f.status, JSON.stringify(f.body)).toBe(202);
      await settled(e.h, f.body.ceremony_id);
      const second = await acks();
      expect(second).toHaveLength(2);
      expect(second[1]!.store_id).toMatch(/^[0-9a-f]{32}$/);
      expect(second[1]!.store_id).not.toBe(first[0]!.store_id);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  }, 600_000);
});
