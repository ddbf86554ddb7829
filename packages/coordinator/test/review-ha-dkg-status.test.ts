/**
 * Review of issue #25 (LOW): a DKG whose ceremony row was failed by recovery (its replica looked
 * dead: e.g. its heartbeat stalled) must not flip that row back when the DKG later ends in the
 * process that still runs it. signers/ceremonies.ts writes SUCCEEDED / FAILED only while the row
 * is RUNNING. The key a late success produced is kept as the instance's master key (the signers
 * hold shares of it; its public record must not be lost), the ceremony row stays as recovery left
 * it. Two services on one database stand for two replicas: A runs the DKG (owner A), B's recovery
 * fails it (A is not a live replica). Before the fix: the row went FAILED → SUCCEEDED (and a late
 * failure overwrote recovery's error).
 */
import { randomUUID } from 'node:crypto';
import { fingerprint } from '@custodian/signer-client';
import { peerIdFromString } from '@libp2p/peer-id';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_ADMIN_OPTIONS } from '../src/admin/options.js';
import { AuditLog } from '../src/audit/service.js';
import type { CeremonyClient, DkgRequest } from '../src/ceremony.js';
import { SignerService } from '../src/signers/service.js';
import { enrollmentBody, phoneKeys, userIdOf } from './device-fixtures.js';
import { ADMIN_EMAIL, type Harness, startHarness, testMasterKey } from './helpers.js';

const PEER = '12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN';
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** A signer network double: the DKG waits until `end('ok' | 'fail')`. */
function heldDkg() {
  let end: (how: 'ok' | 'fail') => void = () => {};
  let started: (req: DkgRequest) => void = () => {};
  const running = new Promise<DkgRequest>((r) => {
    started = r;
  });
  const client: CeremonyClient = {
    async runDkg(req) {
      const how = await new Promise<'ok' | 'fail'>((r) => {
        end = r;
        started(req);
      });
      if (how === 'fail') throw new Error('a signer went away');
      const mk = testMasterKey();
      return { secp256k1: mk.secp256k1, ed25519: mk.ed25519, transcriptHash: 'cd'.repeat(32) };
    },
  };
  return { client, running, end: (how: 'ok' | 'fail') => end(how) };
}

async function setup(client: CeremonyClient) {
  const h: Harness = await startHarness({ masterKey: false });
  cleanups.push(() => h.close());
  const s = await h.req('POST', '/admin/v1/signers', {
    token: h.adminToken,
    body: {
      name: 'signer-1',
      peer_id: PEER,
      address: '/ip4/127.0.0.1/tcp/7400',
      fingerprint: fingerprint((peerIdFromString(PEER).publicKey as { raw: Uint8Array }).raw),
    },
  });
  expect(s.status).toBe(201);
  const adminId = await userIdOf(h, ADMIN_EMAIL);
  const signers: { kind: 'server' | 'device'; id: string }[] = [{ kind: 'server', id: s.body.signer_id }];
  for (const name of ['phone-1', 'phone-2']) {
    const e = await h.req('POST', '/devices/v1/enrollments', { body: enrollmentBody(await phoneKeys(), name) });
    const a = await h.req('POST', `/admin/v1/devices/${e.body.device_id}/approve`, {
      token: h.adminToken,
      body: { fingerprint: e.body.fingerprint, user_id: adminId },
    });
    expect(a.status).toBe(200);
    signers.push({ kind: 'device', id: e.body.device_id });
  }
  const clock = () => new Date();
  const warnings: string[] = [];
  const service = (replicaId: string, c: CeremonyClient | undefined) =>
    new SignerService({
      db: h.c.db,
      clock,
      audit: new AuditLog({ db: h.c.db, clock }),
      ceremonyClient: c,
      options: DEFAULT_ADMIN_OPTIONS,
      replica: { id: replicaId, ttlMs: 60_000 },
      log: (_l, msg) => warnings.push(msg),
    });
  // replica A runs the DKG; replica B (another id) recovers ceremonies. A is not in
  // coordinator_replicas: to B it is a dead replica
  const a = service(randomUUID(), client);
  const b = service(randomUUID(), undefined);
  return { h, a, b, signers, adminId, warnings };
}

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 20));
  expect(cond()).toBe(true);
}

const ceremonyRow = async (h: Harness, id: string) =>
  (
    await h.c.db.query<{ status: string; error: string | null; master_key_id: string | null }>(
      'SELECT status, error, master_key_id FROM ceremonies WHERE ceremony_id = $1',
      [id],
    )
  )[0]!;

describe('review #25: a DKG ended by recovery stays ended', () => {
  it('a late success leaves the FAILED row as recovery wrote it and keeps the key it produced', async () => {
    const dkg = heldDkg();
    const { h, a, b, signers, adminId, warnings } = await setup(dkg.client);
    const started = await a.ceremonies.startDkg(adminId, { threshold: 2, signers });
    await dkg.running;
    const failed = await b.ceremonies.recoverCeremonies();
    expect(failed).toContain(started.ceremony_id);
    const recovered = await ceremonyRow(h, started.ceremony_id);
    expect(recovered.status).toBe('FAILED');
    dkg.end('ok');
    await until(() => warnings.length > 0); // the DKG's end was handled (its warning)
    const after = await ceremonyRow(h, started.ceremony_id);
    // before the fix: SUCCEEDED, with the master key
    expect(after).toEqual(recovered);
    // the key the signers now hold shares of is recorded (its public record is not lost)
    const keys = await h.c.db.query<{ ceremony_id: string }>('SELECT ceremony_id FROM master_keys');
    expect(keys).toEqual([{ ceremony_id: started.ceremony_id }]);
    expect(warnings).toContain('DKG finished after its ceremony was ended: master key recorded, ceremony left as is');
  });

  it('a late failure does not overwrite the error recovery wrote', async () => {
    const dkg = heldDkg();
    const { h, a, b, signers, adminId, warnings } = await setup(dkg.client);
    const started = await a.ceremonies.startDkg(adminId, { threshold: 2, signers });
    await dkg.running;
    await b.ceremonies.recoverCeremonies();
    const recovered = await ceremonyRow(h, started.ceremony_id);
    expect(recovered.status).toBe('FAILED');
    dkg.end('fail');
    await until(() => warnings.length > 0);
    expect(warnings).toEqual(['DKG failed after its ceremony was ended elsewhere: row left as is']);
    // before the fix: error 'a signer went away'
    expect(await ceremonyRow(h, started.ceremony_id)).toEqual(recovered);
    expect(await h.c.db.query('SELECT 1 FROM master_keys')).toEqual([]);
  });
});
