/**
 * Attack (issue #23 part 3): one malicious signer has the coordinator report an honest one. The
 * gateway took the first ABORTED result's blame at face value: a signer that aborts and names an
 * honest party — with no evidence, or with evidence it forged — got that party recorded as the
 * culprit (transfer FAILED "aborted, blaming <honest>", `custodian_ceremony_blame_total`).
 *
 * Must hold: a blame names a culprit only with evidence the coordinator verifies itself
 * (`verifyBlame` of @custodian/wire, against the ceremony's own id and parties). An unverified blame
 * names nobody as culprit (not the claimed party, not the accuser — an honest victim of a share or
 * proof sent to it alone cannot prove it either): it is recorded (`ceremony_blames`) as a dispute,
 * `culprit` null, accuser and claim kept; the admin API shows it, a SIGNER_MISBEHAVIOUR event is queued for
 * the instance webhooks. Valid equivocation evidence (two different broadcast statements of one
 * round, both signed with the culprit's real Ed25519 identity key) names the culprit, verified.
 *
 * A real coordinator (PGlite, real HTTP admin API), the real signing gateway and attempt log, a
 * real libp2p control client. The parties answer through the gateway's device port (the
 * control-protocol boundary: each answer is the CeremonyResult a signer sends); their peer ids are
 * registered as server signers so the coordinator has their names.
 */
import { broadcastStatementBytes, ed25519Sign } from '@custodian/crypto';
import { ControlClient, fingerprint } from '@custodian/signer-client';
import {
  blameSessionId,
  type CeremonyResult,
  Outcome,
  runSessionId,
  type StartCeremony,
  type TransferIntent,
} from '@custodian/wire';
import { generateKeyPair, publicKeyFromRaw } from '@libp2p/crypto/keys';
import { peerIdFromPublicKey } from '@libp2p/peer-id';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { concatBytes, randomBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCoordinatorMetrics } from '../src/metrics/registry.js';
import { BlameStore } from '../src/signing/blame-store.js';
import {
  createSignerGateway,
  type GatewaySignResult,
  presignCeremony,
  type SignParty,
} from '../src/signing/gateway.js';
import { PresignaturePool } from '../src/signing/presignature-pool.js';
import { type Harness, type Json, startHarness } from './helpers.js';

const PROTOCOL = 'custodian.frost.sign';
const LABEL = 'frost.sign';
const ST_PREFIX = concatBytes(utf8ToBytes('custodian/v1/broadcast-statement'), Uint8Array.of(0));

/** A signer identity: 32-byte Ed25519 seed, its libp2p peer id. */
function identity() {
  const seed = randomBytes(32);
  const pub = ed25519.getPublicKey(seed);
  return { seed, pub, peerId: peerIdFromPublicKey(publicKeyFromRaw(pub)).toString() };
}
type Identity = ReturnType<typeof identity>;

/** `signer`'s signed broadcast statement of (protocol, session, round, sender, hash). */
function statement(signer: Identity, sessionId: Uint8Array, sender: number, hash: Uint8Array, round = 1) {
  const signed = concatBytes(ST_PREFIX, broadcastStatementBytes(PROTOCOL, sessionId, round, sender, hash));
  return { protocol: PROTOCOL, sessionId, round, sender, hash, signature: ed25519Sign(signed, signer.seed) };
}

describe('attack: a signer blames an honest signer (issue #23 part 3)', () => {
  let h: Harness;
  let control: ControlClient;
  let webhookId: string;
  const metrics = createCoordinatorMetrics();
  /** `custodian_blame_reports_total` for (check, verified). */
  const reports = async (check: string, verified: boolean) =>
    (await metrics.signing.blameReports.get()).values.find(
      (v) => v.labels.check === check && v.labels.verified === String(verified),
    )?.value ?? 0;
  const A = identity(); // the malicious accuser
  const H = identity(); // honest
  const C = identity(); // really equivocates
  const parties: Record<string, Identity> = { a: A, h: H, c: C };
  const names: [Identity, string][] = [
    [A, 'accuser-signer'],
    [H, 'honest-signer'],
    [C, 'culprit-signer'],
  ];

  beforeAll(async () => {
    h = await startHarness({ coordinator: { webhooks: { runWorker: false } } });
    for (const [id, name] of names) {
      const r = await h.req('POST', '/admin/v1/signers', {
        token: h.adminToken,
        body: { name, peer_id: id.peerId, address: '/ip4/127.0.0.1/tcp/7400', fingerprint: fingerprint(id.pub) },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    webhookId = crypto.randomUUID();
    const now = new Date();
    await h.c.db.query(
      `INSERT INTO webhooks (webhook_id, profile_id, url, event_types, description, created_at, updated_at)
       VALUES ($1, NULL, 'https://ops.example/hook', '["SIGNER_MISBEHAVIOUR"]'::jsonb, 'ops', $2, $2)`,
      [webhookId, now],
    );
    control = await ControlClient.create(await generateKeyPair('Ed25519'), new Map());
  }, 60_000);

  afterAll(async () => {
    await control?.host.node.stop();
    await h?.close();
  });

  /**
   * Sign with parties a, h, c (device port: each answers `answer(partyId, start)`); returns the
   * result and the ceremony id (hex) of the attempt.
   */
  async function sign(
    answer: (id: string, start: StartCeremony) => CeremonyResult,
  ): Promise<{ result: GatewaySignResult; ceremonyId: string }> {
    const pool = new PresignaturePool({
      db: h.c.db,
      masterKeys: { listMasterKeys: async () => [] },
      presign: async () => ({ ok: false, error: 'not used' }),
      options: { target: 0, reconcileMs: 0 },
    });
    let ceremonyId = '';
    const gateway = createSignerGateway({
      control,
      directory: {
        async peerIdOf(p: SignParty) {
          const id = parties[p.id];
          if (!id) throw new Error(`unknown party ${p.id}`);
          return id.peerId;
        },
      },
      devices: {
        async startCeremony(id, start) {
          ceremonyId = Buffer.from(start.ceremonyId).toString('hex');
          return answer(id, start);
        },
        async abortCeremony() {},
      },
      attempts: pool,
      blames: new BlameStore({ db: h.c.db, clock: () => new Date(), metrics: metrics.signing }),
    });
    const result = await gateway.sign({
      keyId: 'k1',
      algorithm: 'ED25519',
      parties: ['a', 'h', 'c'].map((id) => ({ kind: 'device', id })),
      derivationPath: [],
      digests: [utf8ToBytes('pay 1 coin')],
      evidence: {
        intent: { transfer_id: crypto.randomUUID() } as unknown as TransferIntent,
        policy: null,
        approvals: [],
        chainContext: '{}',
      },
      deadline: new Date(Date.now() + 30_000),
    });
    return { result, ceremonyId };
  }

  /** A's ABORTED result naming `culprit` (session [A, H, C]) with `evidence`; the others abort without blame. */
  const accusing =
    (culprit: Identity, evidence: (start: StartCeremony) => Record<string, unknown>) =>
    (id: string, start: StartCeremony): CeremonyResult =>
      id === 'a'
        ? {
            ceremonyId: start.ceremonyId,
            outcome: Outcome.ABORTED,
            error: 'equivocation',
            blame: [
              {
                party: [A, H, C].indexOf(culprit),
                peerId: culprit.peerId,
                reason: 'sent two different broadcasts',
                ...evidence(start),
              },
            ],
          }
        : { ceremonyId: start.ceremonyId, outcome: Outcome.ABORTED, error: 'aborted by the coordinator' };

  /** The run's peer ids in runtime-index order (bound into the wire session id: runSessionId). */
  const RUN = [A.peerId, H.peerId, C.peerId];
  const run = (start: StartCeremony) => ({
    check: 'echo.equivocation',
    round: 1,
    protocol: PROTOCOL,
    sessionParties: RUN,
    sessionLabel: LABEL,
    sessionId: runSessionId(blameSessionId(start.ceremonyId, LABEL), RUN),
  });

  async function view(ceremonyId: string): Promise<Json> {
    const r = await h.req('GET', `/admin/v1/signing-ceremonies/${ceremonyId}`, { token: h.adminToken });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  }

  async function events(ceremonyId: string): Promise<Json[]> {
    const rows = await h.c.db.query<{ body: string }>(
      `SELECT e.body FROM webhook_notifications n JOIN webhook_events e USING (event_id)
        WHERE n.webhook_id = $1 AND e.event_type = 'SIGNER_MISBEHAVIOUR' ORDER BY e.occurred_at`,
      [webhookId],
    );
    return rows.map((r) => JSON.parse(r.body)).filter((b) => b.data.ceremony_id === ceremonyId);
  }

  it('a blame of an honest signer with no evidence names nobody: a dispute (accuser, claimed), unverified', async () => {
    const { result, ceremonyId } = await sign(
      accusing(H, () => ({})), // legacy blame: party, peer id, reason only
    );
    expect(result.ok).toBe(false);
    if (result.ok || result.reason !== 'ABORTED') throw new Error(`ABORTED expected: ${JSON.stringify(result)}`);
    expect(result.culprits).toEqual([]);
    expect(result.accusers).toEqual([{ kind: 'device', id: 'a' }]);
    expect(result.disputes).toEqual([
      { accuser: { kind: 'device', id: 'a' }, claimed: { kind: 'device', id: 'h' }, check: 'check.unspecified' },
    ]);
    const v = await view(ceremonyId);
    expect(v.outcome).toBe('ABORTED');
    expect(v.blame).toEqual([
      expect.objectContaining({
        culprit: null,
        culprit_name: null,
        claimed_culprit: H.peerId,
        claimed_culprit_name: 'honest-signer',
        accuser: A.peerId,
        accuser_name: 'accuser-signer',
        verified: false,
        detail: 'no evidence',
        summary: `unverified: accuser-signer (${A.peerId}) accuses honest-signer (${H.peerId}) of check.unspecified`,
      }),
    ]);
    const e = await events(ceremonyId);
    expect(e.map((b) => b.data)).toEqual([
      {
        ceremony_id: ceremonyId,
        culprit: null,
        culprit_name: null,
        claimed_culprit: H.peerId,
        accuser: A.peerId,
        check: 'check.unspecified',
        round: 0,
        verified: false,
      },
    ]);
    expect(e[0].profile_id).toBe('00000000-0000-0000-0000-000000000000');
    expect(await reports('check.unspecified', false)).toBeGreaterThanOrEqual(1);
  });

  it('forged equivocation evidence (statements "of" the honest signer signed with the accuser\'s key) is not believed', async () => {
    const { result, ceremonyId } = await sign(
      accusing(H, (start) => {
        const sid = runSessionId(blameSessionId(start.ceremonyId, LABEL), RUN);
        return {
          ...run(start),
          statements: [
            statement(A, sid, 1, sha256(utf8ToBytes('one'))),
            statement(A, sid, 1, sha256(utf8ToBytes('two'))),
          ],
        };
      }),
    );
    if (result.ok || result.reason !== 'ABORTED') throw new Error(`ABORTED expected: ${JSON.stringify(result)}`);
    expect(result.culprits).toEqual([]);
    const v = await view(ceremonyId);
    expect(v.blame).toHaveLength(1);
    expect(v.blame[0]).toMatchObject({
      culprit: null,
      claimed_culprit: H.peerId,
      verified: false,
      check: 'echo.equivocation',
    });
    expect(v.blame[0].detail).toMatch(/signature does not verify/);
  });

  it('replayed valid evidence of another ceremony is not believed', async () => {
    const other = randomBytes(24);
    const sid = runSessionId(blameSessionId(other, LABEL), RUN);
    const { result, ceremonyId } = await sign(
      accusing(C, (start) => ({
        ...run(start),
        sessionId: sid,
        statements: [
          statement(C, sid, 2, sha256(utf8ToBytes('one'))),
          statement(C, sid, 2, sha256(utf8ToBytes('two'))),
        ],
      })),
    );
    if (result.ok || result.reason !== 'ABORTED') throw new Error(`ABORTED expected: ${JSON.stringify(result)}`);
    expect(result.culprits).toEqual([]);
    expect((await view(ceremonyId)).blame[0]).toMatchObject({
      culprit: null,
      claimed_culprit: C.peerId,
      verified: false,
    });
  });

  it('valid equivocation evidence signed by the culprit names it, verified (API, webhook, metric)', async () => {
    const before = await reports('echo.equivocation', true);
    const { result, ceremonyId } = await sign(
      accusing(C, (start) => {
        const sid = runSessionId(blameSessionId(start.ceremonyId, LABEL), RUN);
        return {
          ...run(start),
          statements: [
            statement(C, sid, 2, sha256(utf8ToBytes('one'))),
            statement(C, sid, 2, sha256(utf8ToBytes('two'))),
          ],
        };
      }),
    );
    if (result.ok || result.reason !== 'ABORTED') throw new Error(`ABORTED expected: ${JSON.stringify(result)}`);
    expect(result.culprits).toEqual([{ kind: 'device', id: 'c' }]);
    const v = await view(ceremonyId);
    expect(v).toMatchObject({ ceremony_id: ceremonyId, kind: 'sign', outcome: 'ABORTED', key_id: 'k1' });
    expect(v.blame).toEqual([
      expect.objectContaining({
        culprit: C.peerId,
        culprit_name: 'culprit-signer',
        claimed_culprit: C.peerId,
        accuser: A.peerId,
        accuser_name: 'accuser-signer',
        check: 'echo.equivocation',
        round: 1,
        protocol: PROTOCOL,
        verified: true,
        detail: 'two different statements of round 1 signed by the culprit',
        summary: `culprit-signer (${C.peerId}) failed echo.equivocation`,
      }),
    ]);
    expect((await events(ceremonyId)).map((b) => b.data)).toEqual([
      {
        ceremony_id: ceremonyId,
        culprit: C.peerId,
        culprit_name: 'culprit-signer',
        claimed_culprit: C.peerId,
        accuser: A.peerId,
        check: 'echo.equivocation',
        round: 1,
        verified: true,
      },
    ]);
    expect(await reports('echo.equivocation', true)).toBe(before + 1);
  });

  it('a PRESIGN ceremony: a blame without evidence is recorded as a dispute naming nobody (kind presign)', async () => {
    let ceremonyId = '';
    const r = await presignCeremony(
      {
        control,
        directory: { peerIdOf: async (p: SignParty) => (parties[p.id] as Identity).peerId },
        devices: {
          async startCeremony(id, start) {
            ceremonyId = Buffer.from(start.ceremonyId).toString('hex');
            return accusing(H, () => ({}))(id, start);
          },
          async abortCeremony() {},
        },
        blames: new BlameStore({ db: h.c.db, clock: () => new Date() }),
      },
      'k1',
      ['a', 'h'].map((id) => ({ kind: 'device', id })),
      1,
      new Date(Date.now() + 30_000),
    );
    expect(r.ok).toBe(false);
    const v = await view(ceremonyId);
    expect(v).toMatchObject({ kind: 'presign', outcome: 'ABORTED' });
    expect(v.blame).toEqual([
      expect.objectContaining({ culprit: null, accuser: A.peerId, claimed_culprit: H.peerId, verified: false }),
    ]);
  });

  it('an unknown signing ceremony id is 404; a malformed one 422', async () => {
    const r = await h.req('GET', `/admin/v1/signing-ceremonies/${'ab'.repeat(24)}`, { token: h.adminToken });
    expect(r.status).toBe(404);
    const bad = await h.req('GET', '/admin/v1/signing-ceremonies/xyz', { token: h.adminToken });
    expect(bad.status).toBe(422);
  });
});
