/**
 * Attack (review HIGH 2, R1): a cheater sends a bad point-to-point share to ONE honest victim only.
 * The victim aborts and honestly names the cheater, but cannot prove it to the coordinator (the
 * share is for its eyes; its envelope signature proves only that the cheater sent those bytes, not
 * that they were wrong): the blame is unverified. The coordinator used to record the ACCUSER — the
 * honest victim — as `culprit` (DB row, SIGNER_MISBEHAVIOUR webhook, API, CLI).
 *
 * Must hold: an unverified blame names nobody (`culprit` null); it is a dispute listing the accuser
 * (the victim) and the claimed culprit (the cheater); the next signing attempt leaves out both when
 * the key still has a signing set without them, else neither.
 *
 * Real runtime (`Party` of @custodian/crypto with Ed25519 session auth), real `SessionWire` envelopes,
 * real `assessBlames` / `mapSignResults`; the protocol is a two-round one whose round 1 checks a
 * point-to-point share (the shape of a FROST/CGGMP share check).
 */
import { blame, type Canonical, type Culprit, type OutgoingMessage, Party, type ProtocolSpec } from '@custodian/crypto';
import { seededRandom } from '@custodian/crypto/testing';
import {
  type BlameWire,
  blameSessionId,
  DEFAULT_LIMITS,
  decodeMessage,
  messageType,
  Outcome,
  SessionWire,
  sessionAuth,
} from '@custodian/wire';
import { equalBytes } from '@noble/curves/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { concatBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import { assessBlames } from '../src/signing/blame.js';
import { mapSignResults, type SignParty } from '../src/signing/sign-results.js';
import { leftOutForDisputes } from '../src/transfers/signing-attempt.js';
import { identity } from './blame-fixtures.js';

const PROTOCOL = 'custodian.test.share';
const LABEL = 'share';
const BlameMessage = messageType('custodian.v1.BlameMessage');
const ids = [identity(), identity(), identity()];
const parties = ids.map((i) => i.pub);
const signParties: SignParty[] = [
  { kind: 'server', id: 's0' },
  { kind: 'server', id: 's1' },
  { kind: 'device', id: 'd2' },
];
const targets = ids.map((i, k) => ({ party: signParties[k] as SignParty, peerId: i.peerId }));

// round 0: party i sends j the share H(session ‖ i ‖ j); round 1: each checks the share it received
const expected = (sid: Uint8Array, from: number, to: number) => sha256(concatBytes(sid, Uint8Array.of(from, to)));
const shareProtocol: ProtocolSpec<null, true> = {
  name: PROTOCOL,
  start: (ctx) => ({
    state: null,
    send: {
      p2p: new Map(
        [0, 1, 2].filter((j) => j !== ctx.self).map((j) => [j, { share: expected(ctx.sessionId, ctx.self, j) }]),
      ),
    },
  }),
  rounds: [
    {
      name: 'test.share.check',
      p2p: (body) => (body as { share: Uint8Array }).share,
      process(_s, received, ctx) {
        for (const [from, parts] of received)
          if (!equalBytes(parts.p2p as Uint8Array, expected(ctx.sessionId, from, ctx.self)))
            blame(from, 'share does not match', 'test.share');
        return { output: true };
      },
    },
  ],
};

function run(ceremonyId: Uint8Array, cheat: (m: OutgoingMessage, to: number) => OutgoingMessage) {
  const sid = blameSessionId(ceremonyId, LABEL);
  const ps = [0, 1, 2].map(
    (k) =>
      new Party(shareProtocol, {
        self: k,
        n: 3,
        sessionId: sid,
        rng: seededRandom(`p${k}`),
        auth: sessionAuth({ parties, self: k, secretKey: (ids[k] as (typeof ids)[0]).seed }),
      }),
  );
  const ws = [0, 1, 2].map(
    (k) =>
      new SessionWire({
        sessionId: sid,
        protocol: PROTOCOL,
        rounds: 2,
        parties,
        self: k,
        secretKey: (ids[k] as (typeof ids)[0]).seed,
      }),
  );
  const queue: { to: number; bytes: Uint8Array }[] = [];
  const route = (from: number, out: readonly OutgoingMessage[]) => {
    for (const m of out) {
      const to = [m.kind === 'p2p' ? (m.to as number) : [0, 1, 2].filter((j) => j !== from)].flat();
      for (const t of to) queue.push({ to: t, bytes: (ws[from] as SessionWire).seal(cheat(m, t)) });
    }
  };
  for (const [k, p] of ps.entries()) route(k, p.start().messages);
  while (queue.length > 0) {
    const { to, bytes } = queue.shift() as { to: number; bytes: Uint8Array };
    const p = ps[to] as (typeof ps)[0];
    if (p.status !== 'running') continue;
    const opened = (ws[to] as SessionWire).open(bytes);
    if (opened.ok) route(to, p.receive(opened.value.message).messages);
  }
  const toBlame = (c: Culprit): BlameWire => ({
    party: c.party,
    peerId: ids[c.party]?.peerId ?? '',
    reason: c.reason,
    check: c.check ?? '',
    round: c.round ?? 0,
    protocol: PROTOCOL,
    messages: (c.evidence?.messages ?? []).map((e) => {
      const d = decodeMessage(BlameMessage, e, DEFAULT_LIMITS);
      if (!d.ok) throw new Error('evidence does not decode');
      return d.value as unknown as { signedEnvelope: Uint8Array; messageKey: Uint8Array };
    }),
    statements: (c.evidence?.statements ?? []).map((s) => ({ ...s })),
    sessionParties: ids.map((i) => i.peerId),
    sessionId: sid,
    sessionLabel: LABEL,
  });
  return ps.map((p, k) => ({
    party: signParties[k] as SignParty,
    peerId: (ids[k] as (typeof ids)[0]).peerId,
    unreachable: false,
    result: {
      ceremonyId,
      outcome: p.aborted ? Outcome.ABORTED : Outcome.OK,
      // BlameWire (the encoder's input) is what a signer sends; the decoded type has the same fields
      blame: (p.aborted?.culprits ?? []).map(toBlame) as never[],
      ...(p.aborted ? { error: p.aborted.reason } : {}),
    },
  }));
}

describe('attack: a bad share sent to one victim only', () => {
  it('names nobody: a dispute (victim accuses cheater), never the honest victim as culprit', () => {
    const ceremonyId = sha256(utf8ToBytes('victim'));
    // party 2 cheats towards party 0 only
    const results = run(ceremonyId, (m, to) => {
      if (m.from !== 2 || m.kind !== 'p2p' || to !== 0) return m;
      const share = Uint8Array.from((m.body as { share: Uint8Array }).share);
      share[31] = (share[31] as number) ^ 1;
      return { ...m, body: { share } as Canonical };
    });
    // the victim (party 0) names the cheater; the others finish
    expect(results.map((r) => r.result.outcome)).toEqual([Outcome.ABORTED, Outcome.OK, Outcome.OK]);
    expect(((results[0] as (typeof results)[0]).result.blame as BlameWire[]).map((b) => [b.party, b.check])).toEqual([
      [2, 'test.share'],
    ]);
    const records = assessBlames(
      ceremonyId,
      ids.map((i) => i.peerId),
      results,
    );
    expect(records).toHaveLength(1);
    // before the fix: culprit === the victim's peer id
    expect(records[0]).toMatchObject({
      verified: false,
      culprit: null,
      accuser: ids[0]?.peerId,
      claimedCulprit: ids[2]?.peerId,
      check: 'test.share',
    });
    const r = mapSignResults({ algorithm: 'ED25519', digests: [new Uint8Array(32)] }, targets, results, records);
    expect(r).toMatchObject({
      ok: false,
      reason: 'ABORTED',
      culprits: [],
      disputes: [{ accuser: signParties[0], claimed: signParties[2], check: 'test.share' }],
    });
  });

  it('the next attempt leaves out both the accuser and the claimed culprit when the key has enough others, else neither', () => {
    const disputes = [
      { accuser: signParties[0] as SignParty, claimed: signParties[2] as SignParty, check: 'test.share' },
    ];
    expect([...leftOutForDisputes(disputes, 4, 2)].sort()).toEqual(['device:d2', 'server:s0']);
    expect([...leftOutForDisputes(disputes, 3, 2)]).toEqual([]);
    // a claim naming no party of the set: only the accuser is left out (when possible)
    expect([...leftOutForDisputes([{ accuser: signParties[0] as SignParty, check: 'x' }], 3, 2)]).toEqual([
      'server:s0',
    ]);
  });
});
