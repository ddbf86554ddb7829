/**
 * Attack (issue #23 part 3), the master key and key lifecycle ceremonies: the master key client
 * (signing/master-key.ts) and the keys room's `accepted` (keys/outcome.ts, reviewer finding: it
 * merged blame unchecked) recorded any party a signer named as `blamed`. Must hold: `blamed` lists
 * only culprits proven by evidence the coordinator verified; an unverified blame is recorded as a
 * dispute naming nobody (`blame[].culprit` null, its accuser in `unverified_accusers` and
 * `blame[].accuser`, the claim in `claimed_culprit`), shown by GET /admin/v1/ceremonies/{id}.
 *
 * A real coordinator (PGlite, HTTP admin API), the real ceremonies service and master key client,
 * a real libp2p control client; the parties answer through the client's device port (the
 * control-protocol boundary: each answer is the CeremonyResult a signer sends). Real Ed25519 keys
 * sign the evidence.
 */

import { ControlClient, fingerprint } from '@custodian/signer-client';
import { type CeremonyResult, Outcome, type StartCeremony } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { randomBytes } from '@noble/hashes/utils.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ADMIN_OPTIONS } from '../src/admin/options.js';
import { AuditLog } from '../src/audit/service.js';
import { accepted, CulpritError } from '../src/keys/outcome.js';
import { SignerService } from '../src/signers/service.js';
import { BlameStore } from '../src/signing/blame-store.js';
import { createMasterKeyClient } from '../src/signing/master-key.js';
import type { PartyResult } from '../src/signing/sign-results.js';
import { blameBy, type Identity, identity } from './blame-fixtures.js';
import { type Harness, type Json, startHarness } from './helpers.js';

const PROTOCOL = 'custodian.frost.dkg';
const LABEL = 'frost.dkg';

const A = identity(); // the malicious accuser
const H = identity(); // honest
const C = identity(); // really equivocates
const SESSION = [A, H, C];

/** A's Blame naming `culprit`: no evidence, or two statements of round 1 signed by `signer`. */
const blameOf = (culprit: Identity, ceremonyId: Uint8Array, signer?: Identity) =>
  blameBy({ culprit, session: SESSION, ceremonyId, protocol: PROTOCOL, label: LABEL }, signer);

describe('keys room: accepted() believes only verified blame', () => {
  const ceremonyId = randomBytes(16);
  const names = new Map(SESSION.map((i, n) => [i.peerId, `server:s${n}`]));
  const results = (blame: unknown): PartyResult[] =>
    SESSION.map((i, n) => ({
      party: { kind: 'server', id: `s${n}` },
      peerId: i.peerId,
      unreachable: false,
      result:
        i === A
          ? ({ ceremonyId, outcome: Outcome.ABORTED, error: 'misbehaviour', blame: [blame] } as CeremonyResult)
          : { ceremonyId, outcome: Outcome.ABORTED, error: 'aborted' },
    }));
  const thrown = (r: PartyResult[]) => {
    try {
      accepted(r, 'refresh', true, names, ceremonyId);
    } catch (e) {
      return e as CulpritError;
    }
    throw new Error('accepted() did not throw');
  };

  it('a blame of the honest party without evidence, or with forged evidence, names no culprit', () => {
    for (const blame of [blameOf(H, ceremonyId), blameOf(H, ceremonyId, A)]) {
      const e = thrown(results(blame));
      expect(e).toBeInstanceOf(CulpritError);
      expect(e.culprits).toEqual([]);
      expect(e.blames).toEqual([
        expect.objectContaining({ culprit: null, accuser: A.peerId, claimedCulprit: H.peerId, verified: false }),
      ]);
    }
  });

  it('valid evidence of another ceremony names no culprit; of this one names the culprit', () => {
    expect(thrown(results(blameOf(C, randomBytes(16), C))).culprits).toEqual([]);
    const e = thrown(results(blameOf(C, ceremonyId, C)));
    expect(e.culprits).toEqual(['server:s2']);
    expect(e.blames).toEqual([expect.objectContaining({ culprit: C.peerId, accuser: A.peerId, verified: true })]);
  });
});

describe('master key ceremony: blamed lists only verified culprits (admin API)', () => {
  let h: Harness;
  let control: ControlClient;
  const ids: string[] = [];
  const peerOf = new Map<string, Identity>();
  let accusation: (start: StartCeremony) => unknown = () => undefined;

  beforeAll(async () => {
    h = await startHarness({ masterKey: false, coordinator: { webhooks: { runWorker: false } } });
    for (const [n, i] of SESSION.entries()) {
      const r = await h.req('POST', '/admin/v1/signers', {
        token: h.adminToken,
        body: {
          name: `signer-${n}`,
          peer_id: i.peerId,
          address: '/ip4/127.0.0.1/tcp/7400',
          fingerprint: fingerprint(i.pub),
        },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      ids.push(r.body.signer_id);
      peerOf.set(r.body.signer_id, i);
    }
    control = await ControlClient.create(await generateKeyPair('Ed25519'), new Map());
  }, 60_000);

  afterAll(async () => {
    await control?.host.node.stop();
    await h?.close();
  });

  async function run(): Promise<Json> {
    const master = createMasterKeyClient({
      control,
      devicePeerId: async (id) => (peerOf.get(id) as Identity).peerId,
      devices: {
        async startCeremony(id, start): Promise<CeremonyResult> {
          return peerOf.get(id) === A
            ? ({
                ceremonyId: start.ceremonyId,
                outcome: Outcome.ABORTED,
                error: 'misbehaviour',
                blame: [accusation(start)],
              } as CeremonyResult)
            : { ceremonyId: start.ceremonyId, outcome: Outcome.ABORTED, error: 'aborted by the coordinator' };
        },
        async abortCeremony() {},
      },
    });
    const clock = () => new Date();
    const svc = new SignerService({
      db: h.c.db,
      clock,
      audit: new AuditLog({ db: h.c.db, clock }),
      // the parties answer through the device port (see the module comment)
      ceremonyClient: {
        runDkg: (req) => master.runDkg({ ...req, parties: req.parties.map((p) => ({ ...p, kind: 'device' })) }),
      },
      options: { ...DEFAULT_ADMIN_OPTIONS, minMobileSigners: 0 },
      blames: new BlameStore({ db: h.c.db, clock }),
    }).ceremonies;
    const me = (await h.req('GET', '/admin/v1/me', { token: h.adminToken })).body.user_id;
    const started = await svc.startDkg(me, { threshold: 2, signers: ids.map((id) => ({ kind: 'server', id })) });
    for (;;) {
      const c = (await h.req('GET', `/admin/v1/ceremonies/${started.ceremony_id}`, { token: h.adminToken })).body;
      if (c.status !== 'RUNNING') return c;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('a blame of an honest signer without evidence: not blamed; the accuser is recorded, unverified', async () => {
    accusation = (start) => blameOf(H, start.ceremonyId);
    const c = await run();
    expect(c).toMatchObject({ status: 'FAILED', outcome: 'ABORTED', blamed: [], unverified_accusers: [A.peerId] });
    expect(c.blame).toEqual([
      expect.objectContaining({
        culprit: null,
        culprit_name: null,
        accuser: A.peerId,
        accuser_name: 'signer-0',
        claimed_culprit: H.peerId,
        verified: false,
        detail: 'no evidence',
      }),
    ]);
  });

  it('forged evidence: not blamed; valid evidence signed by the culprit: blamed, verified', async () => {
    accusation = (start) => blameOf(H, start.ceremonyId, A);
    const forged = await run();
    expect(forged).toMatchObject({ outcome: 'ABORTED', blamed: [], unverified_accusers: [A.peerId] });
    accusation = (start) => blameOf(C, start.ceremonyId, C);
    const c = await run();
    expect(c).toMatchObject({ status: 'FAILED', outcome: 'ABORTED', blamed: [ids[2]], unverified_accusers: [] });
    expect(c.blame).toEqual([
      expect.objectContaining({
        culprit: C.peerId,
        culprit_name: 'signer-2',
        accuser: A.peerId,
        check: 'echo.equivocation',
        verified: true,
      }),
    ]);
    const events = await h.c.db.query<{ body: string }>(
      `SELECT body FROM webhook_events WHERE event_type = 'SIGNER_MISBEHAVIOUR'`,
    );
    expect(events.map((e) => JSON.parse(e.body).data)).toContainEqual(
      expect.objectContaining({
        ceremony_id: c.ceremony_id,
        culprit: C.peerId,
        culprit_name: 'signer-2',
        verified: true,
      }),
    );
  });
});
