/**
 * Reliable broadcast with evidence over the wire (issue [blame]): statement signatures with the
 * parties' identity keys (sessionAuth), transport evidence on every opened message, and a third
 * party (the coordinator) that re-reads exactly what a culprit signed with `openAsThirdParty`.
 */
import {
  broadcastStatementBytes,
  type Canonical,
  echoHash,
  ed25519Verify,
  type OutgoingMessage,
  Party,
} from '@custodian/crypto';
import { seededRandom } from '@custodian/crypto/testing';
import { dkgProtocol } from '@custodian/frost';
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_LIMITS,
  decodeMessage,
  messageType,
  openAsThirdParty,
  SessionWire,
  STATEMENT_SIG_PREFIX,
  sealEnvelope,
  sessionAuth,
  statementSigningBytes,
} from '../src/index.js';

const keys = [11, 12, 13].map((i) => {
  const secretKey = new Uint8Array(32).fill(i);
  return { secretKey, publicKey: ed25519.getPublicKey(secretKey) };
});
const parties = keys.map((k) => k.publicKey);
const PROTOCOL = 'custodian.frost.dkg';
const BlameMessage = messageType('custodian.v1.BlameMessage');

function decodeEvidence(e: Uint8Array): { signedEnvelope: Uint8Array; messageKey: Uint8Array } {
  const d = decodeMessage(BlameMessage, e, DEFAULT_LIMITS);
  if (!d.ok) throw new Error(d.rejection.reason);
  const v = d.value as unknown as { signedEnvelope: Uint8Array; messageKey?: Uint8Array };
  return { signedEnvelope: v.signedEnvelope, messageKey: v.messageKey ?? new Uint8Array(0) };
}

/** FROST DKG 2-of-3 over SessionWire with signed statements; `cheat` may rewrite a message per receiver. */
function runDkgOverWire(sid: Uint8Array, cheat?: (m: OutgoingMessage, to: number) => OutgoingMessage) {
  const auths = [0, 1, 2].map((k) =>
    sessionAuth({ parties, self: k, secretKey: (keys[k] as { secretKey: Uint8Array }).secretKey }),
  );
  const ps = [0, 1, 2].map(
    (k) =>
      new Party(dkgProtocol({ suite: 'ed25519', threshold: 2 }), {
        self: k,
        n: 3,
        sessionId: sid,
        rng: seededRandom(`ev${k}`),
        auth: auths[k],
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
        secretKey: (keys[k] as { secretKey: Uint8Array }).secretKey,
      }),
  );
  const queue: { to: number; bytes: Uint8Array }[] = [];
  const route = (from: number, out: readonly OutgoingMessage[]) => {
    for (const m of out) {
      const targets = m.kind === 'p2p' ? [m.to as number] : [0, 1, 2].filter((j) => j !== from);
      for (const to of targets) queue.push({ to, bytes: (ws[from] as SessionWire).seal(cheat ? cheat(m, to) : m) });
    }
  };
  for (const [k, p] of ps.entries()) route(k, p.start().messages);
  while (queue.length) {
    const { to, bytes } = queue.shift() as { to: number; bytes: Uint8Array };
    const opened = (ws[to] as SessionWire).open(bytes);
    if (!opened.ok) throw new Error(opened.rejection.reason);
    route(to, (ps[to] as (typeof ps)[number]).receive(opened.value.message).messages);
  }
  return { ps, auths };
}

describe('wire: signed broadcast statements and evidence', () => {
  it('an honest DKG over the wire with sessionAuth completes', () => {
    const { ps } = runDkgOverWire(new TextEncoder().encode('blame-evidence-honest-dkg'));
    for (const p of ps) expect(p.status).toBe('done');
  });

  it('a validly signed equivocation is named with evidence a third party can check', () => {
    const sid = new TextEncoder().encode('blame-evidence-equivocating-dkg');
    const cheaterAuth = sessionAuth({ parties, self: 1, secretKey: (keys[1] as { secretKey: Uint8Array }).secretKey });
    const { ps } = runDkgOverWire(sid, (m, to) => {
      if (m.from !== 1 || m.round !== 0 || m.kind !== 'broadcast' || to !== 2) return m;
      const b = m.body as Record<string, Canonical>;
      const cc = Uint8Array.from(b.chainCodeCommitment as Uint8Array);
      cc[0] = (cc[0] as number) ^ 1;
      const body = { ...b, chainCodeCommitment: cc };
      const hash = echoHash(m.sessionId, 0, 1, body);
      return { ...m, body, statementSignature: cheaterAuth.sign(broadcastStatementBytes(PROTOCOL, sid, 0, 1, hash)) };
    });
    for (const i of [0, 2]) {
      const c = ps[i]?.aborted?.culprits;
      expect(c).toHaveLength(1);
      expect(c?.[0]).toMatchObject({ party: 1, check: 'echo.equivocation', round: 0 });
      // the two statements verify under party 1's identity key, with the wire's prefix
      const st = c?.[0]?.evidence?.statements ?? [];
      expect(st).toHaveLength(2);
      for (const s of st) {
        const bytes = statementSigningBytes(
          broadcastStatementBytes(s.protocol, s.sessionId, s.round, s.sender, s.hash),
        );
        expect(ed25519Verify(s.signature, bytes, parties[1] as Uint8Array)).toBe(true);
      }
      // messages: party 1's broadcast as received here, then the echoer's message
      const msgs = (c?.[0]?.evidence?.messages ?? []).map(decodeEvidence);
      expect(msgs).toHaveLength(2);
      const first = openAsThirdParty(msgs[0]?.signedEnvelope as Uint8Array, parties[1] as Uint8Array);
      expect(first.ok).toBe(true);
      if (first.ok) {
        expect(first.value.header.sender).toBe(1);
        expect(first.value.header.statementSignature).toEqual(st[0]?.signature);
      }
      const echoer = i === 0 ? 2 : 0;
      const second = openAsThirdParty(msgs[1]?.signedEnvelope as Uint8Array, parties[echoer] as Uint8Array);
      expect(second.ok).toBe(true);
      if (second.ok) {
        expect(second.value.header.echoRound).toBe(0);
        expect(second.value.header.echo[1]).toEqual(st[1]?.hash);
        expect(second.value.header.echoSignatures[1]).toEqual(st[1]?.signature);
      }
    }
  });

  it('openAsThirdParty: p2p needs the message key; a wrong sender key or key is rejected', () => {
    const sid = new TextEncoder().encode('blame-evidence-p2p-open');
    const sender = new SessionWire({
      sessionId: sid,
      protocol: 'custodian.test',
      rounds: 2,
      parties,
      self: 0,
      secretKey: (keys[0] as { secretKey: Uint8Array }).secretKey,
    });
    const receiver = new SessionWire({
      sessionId: sid,
      protocol: 'custodian.test',
      rounds: 2,
      parties,
      self: 2,
      secretKey: (keys[2] as { secretKey: Uint8Array }).secretKey,
    });
    const body: Canonical = { x: 42n, y: new Uint8Array([1, 2, 3]) };
    const bytes = sender.seal({ sessionId: sid, round: 0, kind: 'p2p', from: 0, to: 2, body });
    const opened = receiver.open(bytes);
    if (!opened.ok) throw new Error(opened.rejection.reason);
    const ev = decodeEvidence(opened.value.message.evidence as Uint8Array);
    expect(ev.signedEnvelope).toEqual(bytes);
    expect(ev.messageKey).toHaveLength(32);
    const third = openAsThirdParty(ev.signedEnvelope, parties[0] as Uint8Array, ev.messageKey);
    expect(third.ok).toBe(true);
    const noKey = openAsThirdParty(ev.signedEnvelope, parties[0] as Uint8Array);
    expect(noKey.ok ? 'ok' : noKey.rejection.code).toBe('malformed');
    const wrongKey = openAsThirdParty(ev.signedEnvelope, parties[0] as Uint8Array, new Uint8Array(32).fill(5));
    expect(wrongKey.ok ? 'ok' : wrongKey.rejection.code).toBe('decrypt-failed');
    const wrongSender = openAsThirdParty(ev.signedEnvelope, parties[1] as Uint8Array, ev.messageKey);
    expect(wrongSender.ok ? 'ok' : wrongSender.rejection.code).toBe('bad-signature');
    for (const junk of [new Uint8Array(0), Uint8Array.of(1, 2, 3), bytes.slice(0, bytes.length - 1)]) {
      expect(openAsThirdParty(junk, parties[0] as Uint8Array, ev.messageKey).ok).toBe(false);
    }
  });

  it('seal/open carry echo signatures, echo round and the statement signature; the prefix is domain-separated', () => {
    const sid = new TextEncoder().encode('blame-evidence-fields-0001');
    const sig = new Uint8Array(64).fill(9);
    const bytes = sealEnvelope({
      sessionId: sid,
      protocol: 'custodian.test',
      round: 2,
      sender: 1,
      echo: [new Uint8Array(32).fill(1), new Uint8Array(0), new Uint8Array(32).fill(3)],
      echoSignatures: [sig, new Uint8Array(0), sig],
      echoRound: 1,
      statementSignature: sig,
      payload: new Uint8Array([7]),
      senderSecretKey: (keys[1] as { secretKey: Uint8Array }).secretKey,
    });
    const o = openAsThirdParty(bytes, parties[1] as Uint8Array);
    if (!o.ok) throw new Error(o.rejection.reason);
    expect(o.value.header.echoSignatures).toEqual([sig, new Uint8Array(0), sig]);
    expect(o.value.header.echoRound).toBe(1);
    expect(o.value.header.statementSignature).toEqual(sig);
    expect(new TextDecoder().decode(STATEMENT_SIG_PREFIX.subarray(0, -1))).toBe('custodian/v1/broadcast-statement');
    expect(STATEMENT_SIG_PREFIX.at(-1)).toBe(0);
    // a malformed echo signature (not 64 bytes) is rejected by the wire
    const bad = sealEnvelope({
      sessionId: sid,
      protocol: 'custodian.test',
      round: 2,
      sender: 1,
      echo: [new Uint8Array(32)],
      echoSignatures: [new Uint8Array(10)],
      payload: new Uint8Array([7]),
      senderSecretKey: (keys[1] as { secretKey: Uint8Array }).secretKey,
    });
    const r = openAsThirdParty(bad, parties[1] as Uint8Array);
    expect(r.ok ? 'ok' : r.rejection.code).toBe('malformed');
  });
});
