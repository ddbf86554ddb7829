/**
 * Harness of the key lifecycle tests with real signers (issue #22): a coordinator (PGlite) with its
 * signing services on and a data folder (so its libp2p identity is known before the signers start),
 * `count` real signer processes (packages/signer test cluster: TEST-ONLY safe primes, the Admin
 * phone's key as their trusted Admin device), each registered over the admin API, and a master key
 * made by the admin API's ceremony among the first `members` of them (threshold 2). FROST keys only
 * (Ed25519 and Taproot): the fixture has safe primes for one CGGMP21 aux info per signer, and a
 * reshare needs a second one (the ECDSA reshare is covered by the signer's and protocols' tests).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fingerprint } from '@custodian/signer-client';
import { KeyAlgorithm } from '@custodian/wire';
import { peerIdFromString } from '@libp2p/peer-id';
import { expect } from 'vitest';
import { type NodeSpec, startSeededNodes, stopNode } from '../../signer/test/cluster.js';
import { coordinatorPeerId } from '../src/signing/services.js';
import { enrollPhone, type PhoneKeys, phoneKeys, userIdOf } from './device-fixtures.js';
import { ADMIN_EMAIL, type Harness, type Json, startHarness } from './helpers.js';

export interface KeyEnv {
  h: Harness;
  nodes: NodeSpec[];
  /** signer_id of node i. */
  serverIds: string[];
  masterKeyId: string;
  /** The Admin's phone: an approved device of the Admin, trusted by the signers. */
  admin: { keys: PhoneKeys; deviceId: string };
  close(): Promise<void>;
}

/** Poll a ceremony until it leaves RUNNING; returns its view. */
export async function settled(h: Harness, ceremonyId: string, ms = 240_000): Promise<Json> {
  const until = Date.now() + ms;
  for (;;) {
    const r = await h.req('GET', `/admin/v1/ceremonies/${ceremonyId}`, { token: h.adminToken });
    if (r.body.status !== 'RUNNING') return r.body;
    if (Date.now() > until) throw new Error(`ceremony ${ceremonyId} still running: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 250));
  }
}

/** Start the coordinator and `count` signers; the master key among nodes [0, members). */
export async function startKeyEnv(count: number, members: number, keys: Record<string, unknown> = {}): Promise<KeyEnv> {
  const dir = await mkdtemp(join(tmpdir(), 'custodian-keys-'));
  const nodes: NodeSpec[] = [];
  let h: Harness | undefined;
  const close = async () => {
    await h?.close().catch(() => undefined);
    await Promise.all(nodes.map((n) => stopNode(n)));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const dataDir = join(dir, 'coord');
    const coordPeer = await coordinatorPeerId(dataDir);
    const adminKeys = await phoneKeys();
    nodes.push(
      ...(await startSeededNodes(dir, count, coordPeer, {
        trustedAdminDevices: [{ deviceId: 'admin-phone', publicKey: adminKeys.publicKey }],
      })),
    );
    h = await startHarness({
      masterKey: false,
      coordinator: {
        dataDir,
        signing: {
          enabled: true,
          presignaturePool: 0,
          algorithms: [KeyAlgorithm.ED25519, KeyAlgorithm.SECP256K1_TAPROOT],
        },
        transfers: { runPipeline: false },
        keys: { commitRetry: { initialMs: 200, maxMs: 1000 }, ...keys },
        admin: {
          stepUpTtlMs: 8 * 3600_000,
          sessionIdleMs: 8 * 3600_000,
          scrypt: { N: 1 << 10, r: 8, p: 1 },
          loginRateLimit: { max: 10_000, windowMs: 60_000 },
          accountLockout: { maxFailures: 1000, windowMs: 60_000 },
          maxOpenChallenges: 100,
          emailCodes: { max: 1000, windowMs: 60_000 },
          // server signers only in process (no phones): the seed §8 rule is checked in key-routes.test.ts
          minMobileSigners: 0,
        },
      },
    });
    const hh = h;
    const deviceId = await enrollPhone(hh, adminKeys, 'admin phone', { userId: await userIdOf(hh, ADMIN_EMAIL) });
    const serverIds: string[] = [];
    for (const n of nodes) {
      const r = await hh.req('POST', '/admin/v1/signers', {
        token: hh.adminToken,
        body: {
          name: n.name,
          peer_id: n.peerId,
          address: `/ip4/127.0.0.1/tcp/${n.port}`,
          fingerprint: fingerprint((peerIdFromString(n.peerId).publicKey as { raw: Uint8Array }).raw),
        },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      serverIds.push(r.body.signer_id);
    }
    const dkg = await hh.req('POST', '/admin/v1/master-keys', {
      token: hh.adminToken,
      body: { threshold: 2, signers: serverIds.slice(0, members).map((id) => ({ kind: 'server', id })) },
    });
    expect(dkg.status, JSON.stringify(dkg.body)).toBe(202);
    const done = await settled(hh, dkg.body.ceremony_id);
    expect(done.status, JSON.stringify(done)).toBe('SUCCEEDED');
    return {
      h: hh,
      nodes,
      serverIds,
      masterKeyId: done.master_key_id,
      admin: { keys: adminKeys, deviceId },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}
