/**
 * End to end: blames produced by the real runtime (Party with sessionAuth) over SessionWire, mapped
 * to custodian.v1.Blame as the ceremony does, verified by verifyBlame as the coordinator does.
 */
import {
  broadcastStatementBytes,
  type Canonical,
  type Culprit,
  echoHash,
  type OutgoingMessage,
  Party,
} from '@custodian/crypto';
import { seededRandom } from '@custodian/crypto/testing';
import { dkgProtocol } from '@custodian/frost';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import {
  type BlameWire,
  blameSessionId,
  DEFAULT_LIMITS,
  decodeMessage,
  messageType,
  runSessionId,
  SessionWire,
  sessionAuth,
  verifyBlame,
} from '../src/index.js';
import { peerIdOf } from './peer-ids.js';

const keys = [21, 22, 23].map((i) => {
  const secretKey = new Uint8Array(32).fill(i);
  const publicKey = ed25519.getPublicKey(secretKey);
  return { secretKey, publicKey, peerId: peerIdOf(publicKey) };
});
const parties = keys.map((k) => k.publicKey);
const PROTOCOL = 'custodian.frost.dkg';
const ceremonyId = sha256(utf8ToBytes('e2e'));
const BlameMessage = messageType('custodian.v1.BlameMessage');

function toBlame(c: Culprit, label: string): BlameWire {
  return {
    party: c.party,
    peerId: keys[c.party]?.peerId ?? '',
    reason: c.reason,
    check: c.check ?? '',
    round: c.round ?? 0,
    protocol: PROTOCOL,
    messages: (c.evidence?.messages ?? []).map((e) => {
      const d = decodeMessage(BlameMessage, e, DEFAULT_LIMITS);
      if (!d.ok) throw new Error('evidence');
      return d.value as unknown as { signedEnvelope: Uint8Array; messageKey: Uint8Array };
    }),
    statements: (c.evidence?.statements ?? []).map((s) => ({ ...s })),
    sessionParties: keys.map((k) => k.peerId),
    sessionId: runSessionId(
      blameSessionId(ceremonyId, label),
      keys.map((k) => k.peerId),
    ),
    sessionLabel: label,
  };
}

function run(label: string, cheat?: (m: OutgoingMessage, to: number) => OutgoingMessage | OutgoingMessage[]) {
  const sid = runSessionId(
    blameSessionId(ceremonyId, label),
    keys.map((k) => k.peerId),
  );
  const ps = [0, 1, 2].map(
    (k) =>
      new Party(dkgProtocol({ suite: 'ed25519', threshold: 2 }), {
        self: k,
        n: 3,
        sessionId: sid,
        rng: seededRandom(`e2e${k}${label}`),
        auth: sessionAuth({ parties, self: k, secretKey: keys[k]!.secretKey }),
      }),
  );
  const ws = [0, 1, 2].map(
    (k) =>
      new SessionWire({
        sessionId: sid,
        protocol: PROTOCOL,
        rounds: 3,
        parties,
        self: k,
        secretKey: keys[k]!.secretKey,
      }),
  );
  const queue: { to: number; bytes: Uint8Array }[] = [];
  const route = (from: number, out: readonly OutgoingMessage[]) => {
    for (const m of out) {
      const targets = m.kind === 'p2p' ? [m.to as number] : [0, 1, 2].filter((j) => j !== from);
      for (const to of targets) {
        const ms = cheat ? cheat(m, to) : m;
        for (const x of Array.isArray(ms) ? ms : [ms]) queue.push({ to, bytes: ws[from]!.seal(x) });
      }
    }
  };
  for (const [k, p] of ps.entries()) route(k, p.start().messages);
  while (queue.length) {
    const { to, bytes } = queue.shift()!;
    if (ps[to]!.status !== 'running') continue;
    const opened = ws[to]!.open(bytes);
    if (!opened.ok) continue;
    route(to, ps[to]!.receive(opened.value.message).messages);
  }
  const verdicts = ps.flatMap((p, i) =>
    (p.aborted?.culprits ?? []).map((c) => ({
      by: i,
      c,
      v: verifyBlame(toBlame(c, label), {
        ceremonyId,
        ceremonyParties: keys.map((k) => k.peerId),
        accuser: keys[i]!.peerId,
      }),
    })),
  );
  return { ps, verdicts, sid };
}

describe('e2e', () => {
  it('equivocation → verified, names party 1', () => {
    const label = 'eq';
    const sid = runSessionId(
      blameSessionId(ceremonyId, label),
      keys.map((k) => k.peerId),
    );
    const auth1 = sessionAuth({ parties, self: 1, secretKey: keys[1]!.secretKey });
    const { verdicts } = run(label, (m, to) => {
      if (m.from !== 1 || m.round !== 0 || m.kind !== 'broadcast' || to !== 2) return m;
      const b = m.body as Record<string, Canonical>;
      const cc = Uint8Array.from(b.chainCodeCommitment as Uint8Array);
      cc[0] = (cc[0] as number) ^ 1;
      const body = { ...b, chainCodeCommitment: cc };
      const hash = echoHash(m.sessionId, 0, 1, body);
      return { ...m, body, statementSignature: auth1.sign(broadcastStatementBytes(PROTOCOL, sid, 0, 1, hash)) };
    });
    expect(verdicts.length).toBeGreaterThan(0);
    for (const { by, v } of verdicts) {
      if (by === 1)
        expect(v.verified).toBe(false); // the cheater's own accusation of an honest echoer
      else expect(v).toMatchObject({ verified: true, culprit: keys[1]!.peerId, check: 'echo.equivocation' });
    }
  });

  it('false echo → verified, names the liar (party 2)', () => {
    const { verdicts } = run('false', (m, to) => {
      if (m.from !== 2 || m.round !== 1 || !m.echo || to !== 0) return m;
      const echo = m.echo.map((h, j) => (j === 1 ? sha256(utf8ToBytes('lie')) : h));
      return { ...m, echo };
    });
    expect(verdicts.length).toBeGreaterThan(0);
    for (const { v } of verdicts) {
      expect(v).toMatchObject({ verified: true, culprit: keys[2]!.peerId });
    }
  });

  it("false echo signed with the liar's OWN key → verified, names the liar, never the honest accuser (review R3)", () => {
    // party 2 forges "party 1's statement" for party 0 and signs it with its own identity key: the
    // old any-ceremony-key check accepted the entry and left the honest accuser named
    const label = 'selfsigned';
    const sid = runSessionId(
      blameSessionId(ceremonyId, label),
      keys.map((k) => k.peerId),
    );
    const auth2 = sessionAuth({ parties, self: 2, secretKey: keys[2]!.secretKey });
    const { ps, verdicts } = run(label, (m, to) => {
      if (m.from !== 2 || m.round !== 1 || !m.echo || to !== 0) return m;
      const echo = [...m.echo];
      const echoSignatures = [...(m.echoSignatures ?? [])];
      echo[1] = sha256(utf8ToBytes('lie'));
      echoSignatures[1] = auth2.sign(broadcastStatementBytes(PROTOCOL, sid, 0, 1, echo[1]));
      return { ...m, echo, echoSignatures };
    });
    expect(ps[0]!.aborted?.culprits.map((c) => [c.party, c.check])).toEqual([[2, 'echo.false']]);
    const fromHonest = verdicts.filter(({ by }) => by !== 2);
    expect(fromHonest.length).toBeGreaterThan(0);
    for (const { v } of fromHonest) {
      expect(v).toMatchObject({ verified: true, culprit: keys[2]!.peerId, check: 'echo.false' });
    }
  });

  it('missing statement signature → verified echo.malformed', () => {
    const { verdicts } = run('nosig', (m) => {
      if (m.from !== 2 || m.round !== 0 || m.kind !== 'broadcast') return m;
      const { statementSignature: _s, ...rest } = m;
      return rest;
    });
    expect(verdicts.length).toBeGreaterThan(0);
    for (const { v } of verdicts) {
      expect(v).toMatchObject({ verified: true, culprit: keys[2]!.peerId, check: 'echo.malformed' });
    }
  });

  it('conflicting duplicate p2p → verified message.conflict', () => {
    const { verdicts } = run('dup', (m, to) => {
      if (m.from !== 2 || m.round !== 1 || m.kind !== 'p2p' || to !== 0) return m;
      const b = m.body as Record<string, Canonical>;
      const share = Uint8Array.from(b.share as Uint8Array);
      share[0] = (share[0] as number) ^ 1;
      return [m, { ...m, body: { ...b, share } }];
    });
    expect(verdicts.length).toBeGreaterThan(0);
    for (const { c, v } of verdicts) {
      if (c.check === 'message.conflict') expect(v).toMatchObject({ verified: true, culprit: keys[2]!.peerId });
      else expect(v.verified === false || v.culprit === keys[2]!.peerId).toBe(true);
    }
  });

  it('honest run: no blame', () => {
    const { ps, verdicts } = run('honest');
    expect(verdicts).toHaveLength(0);
    for (const p of ps) expect(p.status).toBe('done');
  });
});
