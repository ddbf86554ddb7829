/**
 * verifyBlame (docs/protocols.md "Blame evidence"): the coordinator checks a signer's blame itself.
 * Every check has a positive case (real Ed25519 identity keys, envelopes sealed by `sealEnvelope`)
 * and the attacker's cases: an accuser that forges, replays or re-labels evidence must not get
 * `verified`, and an unverified verdict names the accuser.
 *
 * The envelope fields of the signed echo (11–13) are not written by this branch's `sealEnvelope`:
 * `withEchoFields` adds them to a sealed envelope and signs it again with the sender's key, as the
 * sender's `sealEnvelope` will once branch `echo` lands.
 */
import { broadcastStatementBytes, type Canonical, echoHash, ed25519Sign } from '@custodian/crypto';
import { peerIdFromString } from '@libp2p/peer-id';
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { concatBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import fc from 'fast-check';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import {
  type BlameContext,
  type BlameMessageWire,
  type BlameWire,
  type BroadcastStatementWire,
  blameSessionId,
  canonicalToBytes,
  decodeMessage,
  encodeMessage,
  messageType,
  NOT_RE_RUN,
  PROTOCOL_SCHEMAS,
  roundType,
  runSessionId,
  sealEnvelope,
  verifyBlame,
} from '../src/index.js';
import { peerIdOf } from './peer-ids.js';

// ---------- identities ----------

const ids = [11, 12, 13, 14].map((i) => {
  const secretKey = new Uint8Array(32).fill(i);
  const publicKey = ed25519.getPublicKey(secretKey);
  return { secretKey, publicKey, peerId: peerIdOf(publicKey) };
});
type Id = (typeof ids)[number];
const [A, B, C, D] = ids as [Id, Id, Id, Id];
const session = [A, B, C]; // runtime indices 0, 1, 2; D is a ceremony party outside this run
const ceremonyId = sha256(utf8ToBytes('ceremony-1'));
const otherCeremonyId = sha256(utf8ToBytes('ceremony-2'));
const label = 'frost.dkg';
const sid = runSessionId(
  blameSessionId(ceremonyId, label),
  session.map((p) => p.peerId),
);
const PROTOCOL = 'custodian.frost.dkg'; // rounds 0–2, echo round 3
const ctx = (accuser: Id = A): BlameContext => ({
  ceremonyId,
  ceremonyParties: ids.map((i) => i.peerId),
  accuser: accuser.peerId,
});

// ---------- messages ----------

const EnvelopeType = messageType('custodian.v1.Envelope');
const SignedEnvelopeType = messageType('custodian.v1.SignedEnvelope');
const ENV_PREFIX = concatBytes(utf8ToBytes('custodian/v1/envelope'), Uint8Array.of(0));
const ST_PREFIX = concatBytes(utf8ToBytes('custodian/v1/broadcast-statement'), Uint8Array.of(0));

/** Party `sender`'s signed statement "my broadcast of round r has hash h". */
function statementSig(sender: number, round: number, hash: Uint8Array, over: { sessionId?: Uint8Array } = {}) {
  const by = session[sender] as Id;
  const bytes = broadcastStatementBytes(PROTOCOL, over.sessionId ?? sid, round, sender, hash);
  return ed25519Sign(concatBytes(ST_PREFIX, bytes), by.secretKey);
}

const echoRoundOf = (protocol: string) => PROTOCOL_SCHEMAS.find((s) => s.protocol === protocol)?.rounds.length;

function bodyBytes(round: number, kind: 'broadcast' | 'p2p', body: Canonical, protocol = PROTOCOL): Uint8Array {
  return canonicalToBytes(roundType(protocol, round, kind, echoRoundOf(protocol)), body);
}

/** A body of a registered round type with every field filled (BigInt 1, bytes 33 × 0x02, lists empty), then `over`. */
function filledBody(type: protobuf.Type, over: Record<string, Canonical> = {}): Canonical {
  const out: Record<string, Canonical> = {};
  for (const f of type.fieldsArray) {
    if (f.partOf) continue;
    const sub = f.resolvedType instanceof protobuf.Type ? f.resolvedType : undefined;
    out[f.name] = f.repeated
      ? []
      : sub?.fullName === '.custodian.v1.BigInt'
        ? 1n
        : sub
          ? filledBody(sub)
          : f.type === 'bytes'
            ? new Uint8Array(33).fill(2)
            : f.type === 'string'
              ? ''
              : f.type === 'bool'
                ? false
                : 0;
  }
  return { ...out, ...over };
}

const r1Body = (seed: number): Canonical => ({
  chainCode: new Uint8Array(32).fill(seed),
  randomness: new Uint8Array(32).fill(seed + 1),
});

interface SealOpts {
  from: Id;
  sender: number;
  round: number;
  body: Canonical;
  to?: number;
  echo?: Uint8Array[];
  sessionId?: Uint8Array;
  protocol?: string;
  /** Raw payload bytes instead of `body`'s encoding. */
  payload?: Uint8Array;
  /** Signed-echo fields (envelope fields 11–13). */
  echoSignatures?: Uint8Array[];
  statementSignature?: Uint8Array;
  echoRound?: number;
}

/** The receiver's one-message key of a point-to-point envelope (what the receiver hands over as evidence). */
function messageKeyOf(signedEnvelope: Uint8Array, receiver: Id): Uint8Array {
  const outer = decodeMessage(SignedEnvelopeType, signedEnvelope);
  if (!outer.ok) throw new Error('test: not a signed envelope');
  const inner = decodeMessage(EnvelopeType, (outer.value as unknown as { envelope: Uint8Array }).envelope);
  if (!inner.ok) throw new Error('test: not an envelope');
  const epk = (inner.value as unknown as { ephemeralKey: Uint8Array }).ephemeralKey;
  const selfX = ed25519.utils.toMontgomerySecret(receiver.secretKey);
  const selfPubX = x25519.getPublicKey(selfX);
  return hkdf(
    sha256,
    x25519.getSharedSecret(selfX, epk),
    concatBytes(epk, selfPubX),
    utf8ToBytes('custodian/v1/p2p'),
    32,
  );
}

/** Add the signed-echo fields to a sealed envelope and sign it again with the sender's key. */
function withEchoFields(signed: Uint8Array, o: SealOpts): Uint8Array {
  if (o.echoSignatures === undefined && o.statementSignature === undefined && o.echoRound === undefined) return signed;
  const outer = decodeMessage(SignedEnvelopeType, signed);
  if (!outer.ok) throw new Error('test: not a signed envelope');
  const inner = decodeMessage(EnvelopeType, (outer.value as unknown as { envelope: Uint8Array }).envelope);
  if (!inner.ok) throw new Error('test: not an envelope');
  const e = EnvelopeType.toObject(inner.value, { oneofs: false }) as Record<string, unknown>;
  const envelope = encodeMessage(EnvelopeType, {
    ...e,
    ...(o.echoSignatures ? { echoSignatures: o.echoSignatures } : {}),
    ...(o.statementSignature ? { statementSignature: o.statementSignature } : {}),
    ...(o.echoRound !== undefined ? { echoRound: o.echoRound } : {}),
  });
  const signature = ed25519Sign(concatBytes(ENV_PREFIX, envelope), o.from.secretKey);
  return encodeMessage(SignedEnvelopeType, { envelope, signature });
}

/** A message as evidence (BlameMessage): sealed by `from` with the real sealEnvelope, with its key when p2p. */
function msg(o: SealOpts): BlameMessageWire {
  const kind = o.to === undefined ? 'broadcast' : 'p2p';
  const sealed = sealEnvelope({
    sessionId: o.sessionId ?? sid,
    protocol: o.protocol ?? PROTOCOL,
    round: o.round,
    sender: o.sender,
    ...(o.to !== undefined ? { receiver: o.to, receiverPublicKey: (session[o.to] as Id).publicKey } : {}),
    echo: o.echo ?? [],
    payload: o.payload ?? bodyBytes(o.round, kind, o.body, o.protocol),
    senderSecretKey: o.from.secretKey,
  });
  const signedEnvelope = withEchoFields(sealed, o);
  return {
    signedEnvelope,
    messageKey: o.to !== undefined ? messageKeyOf(signedEnvelope, session[o.to] as Id) : new Uint8Array(0),
  };
}

/** C's honest round-1 broadcast with its statement signature. */
function signedBroadcast(sender: number, seed: number, from: Id = session[sender] as Id): BlameMessageWire {
  const body = r1Body(seed);
  const hash = echoHash(sid, 1, sender, body);
  return msg({ from, sender, round: 1, body, statementSignature: statementSig(sender, 1, hash) });
}

/** The blame fields every evidence-carrying blame shares (culprit C = index 2). */
const base = (over: Partial<BlameWire> = {}): BlameWire => ({
  party: 2,
  peerId: C.peerId,
  reason: 'test',
  round: 1,
  protocol: PROTOCOL,
  sessionParties: session.map((p) => p.peerId),
  sessionId: sid,
  sessionLabel: label,
  ...over,
});

const unverifiedAccusing = (v: ReturnType<typeof verifyBlame>, accuser: Id = A) => {
  expect(v.verified).toBe(false);
  expect(v.accuser).toBe(accuser.peerId);
};

// ---------- tests ----------

describe('test identities', () => {
  it('peer ids parse back to the Ed25519 keys (libp2p)', () => {
    for (const id of ids) expect(peerIdFromString(id.peerId).publicKey?.raw).toEqual(id.publicKey);
  });
});

describe('legacy blame and the common checks', () => {
  it('a blame without check or evidence is unverified, "no evidence", naming the accuser and the claim', () => {
    const v = verifyBlame({ party: 1, peerId: B.peerId, reason: 'bad proof' }, ctx());
    expect(v).toEqual({
      verified: false,
      culprit: B.peerId,
      accuser: A.peerId,
      check: 'check.unspecified',
      round: 0,
      protocol: '',
      detail: 'no evidence',
    });
  });

  it('a check without evidence is unverified', () => {
    const v = verifyBlame(base({ check: 'echo.equivocation' }), ctx());
    unverifiedAccusing(v);
    expect(v).toMatchObject({ culprit: C.peerId, detail: 'no evidence', check: 'echo.equivocation' });
  });

  const h1 = sha256(utf8ToBytes('x'));
  const h2 = sha256(utf8ToBytes('y'));
  const goodStatements = (): BroadcastStatementWire[] => [
    { protocol: PROTOCOL, sessionId: sid, round: 1, sender: 2, hash: h1, signature: statementSig(2, 1, h1) },
    { protocol: PROTOCOL, sessionId: sid, round: 1, sender: 2, hash: h2, signature: statementSig(2, 1, h2) },
  ];

  it.each<[string, Partial<BlameWire>, BlameContext | undefined, RegExp]>([
    ['session id of another ceremony', {}, { ...ctx(), ceremonyId: otherCeremonyId }, /session id/],
    ['session label re-labelled', { sessionLabel: 'frost.sign' }, undefined, /session id/],
    [
      'session party outside the ceremony',
      {},
      { ...ctx(), ceremonyParties: [A, B, D].map((i) => i.peerId) },
      /not a party/,
    ],
    ['duplicate session party', { sessionParties: [A.peerId, C.peerId, C.peerId] }, undefined, /duplicate/],
    ['party index out of range', { party: 3 }, undefined, /index/],
    ['peer id not the indexed party', { peerId: B.peerId }, undefined, /does not match/],
    [
      'a ceremony party that is not an Ed25519 peer id',
      { sessionParties: [A.peerId, B.peerId, 'not-a-peer-id'], peerId: '' },
      { ...ctx(), ceremonyParties: [A.peerId, B.peerId, 'not-a-peer-id'] },
      /Ed25519/,
    ],
    ['no protocol', { protocol: '' }, undefined, /protocol/],
  ])('valid equivocation evidence with %s is unverified', (_name, over, c, detail) => {
    const v = verifyBlame(base({ check: 'echo.equivocation', statements: goodStatements(), ...over }), c ?? ctx());
    unverifiedAccusing(v);
    expect(v.detail).toMatch(detail);
  });

  it('more evidence than the caps is unverified', () => {
    const m = signedBroadcast(2, 1);
    const v = verifyBlame(base({ check: 'message.conflict', messages: Array.from({ length: 9 }, () => m) }), ctx());
    unverifiedAccusing(v);
  });
});

describe('echo.equivocation: two different statements of one round signed by the culprit', () => {
  const h1 = sha256(utf8ToBytes('hash one'));
  const h2 = sha256(utf8ToBytes('hash two'));
  const st = (
    sender: number,
    hash: Uint8Array,
    over: Partial<BroadcastStatementWire> = {},
  ): BroadcastStatementWire => ({
    protocol: PROTOCOL,
    sessionId: sid,
    round: 1,
    sender,
    hash,
    signature: statementSig(sender, over.round ?? 1, hash),
    ...over,
  });

  it('verifies and names the signer', () => {
    const v = verifyBlame(base({ check: 'echo.equivocation', statements: [st(2, h1), st(2, h2)] }), ctx());
    expect(v).toMatchObject({ verified: true, culprit: C.peerId, accuser: A.peerId, check: 'echo.equivocation' });
    expect(v.detail).toBe('two different statements of round 1 signed by the culprit');
  });

  it('attack: the accuser forges the second statement (signed with its own key)', () => {
    const forged = ed25519Sign(concatBytes(ST_PREFIX, broadcastStatementBytes(PROTOCOL, sid, 1, 2, h2)), A.secretKey);
    const v = verifyBlame(
      base({ check: 'echo.equivocation', statements: [st(2, h1), st(2, h2, { signature: forged })] }),
      ctx(),
    );
    unverifiedAccusing(v);
    expect(v.culprit).toBe(C.peerId); // the claim is kept, not verified
  });

  it("attack: the accuser re-labels C's statements as B's (sender and party changed)", () => {
    const s = [st(2, h1, { sender: 1 }), st(2, h2, { sender: 1 })];
    s[0] = { ...s[0], signature: statementSig(2, 1, h1) };
    s[1] = { ...s[1], signature: statementSig(2, 1, h2) };
    const v = verifyBlame(base({ check: 'echo.equivocation', party: 1, peerId: B.peerId, statements: s }), ctx());
    unverifiedAccusing(v);
  });

  it('attack: the accuser names B for statements signed by C (party re-labelled only)', () => {
    const v = verifyBlame(
      base({ check: 'echo.equivocation', party: 1, peerId: B.peerId, statements: [st(2, h1), st(2, h2)] }),
      ctx(),
    );
    unverifiedAccusing(v);
  });

  it("attack: replays C's statements of another session", () => {
    const otherSid = runSessionId(
      blameSessionId(otherCeremonyId, label),
      session.map((p) => p.peerId),
    );
    const s = [h1, h2].map((h) =>
      st(2, h, { sessionId: otherSid, signature: statementSig(2, 1, h, { sessionId: otherSid }) }),
    );
    expect(verifyBlame(base({ check: 'echo.equivocation', statements: s }), ctx()).verified).toBe(false);
    // and with the blame's session id moved along: not derived from this ceremony
    const v = verifyBlame(base({ check: 'echo.equivocation', statements: s, sessionId: otherSid }), ctx());
    unverifiedAccusing(v);
  });

  it("attack: two honest statements of C's from different rounds", () => {
    const v = verifyBlame(
      base({ check: 'echo.equivocation', statements: [st(2, h1), st(2, h2, { round: 2 })] }),
      ctx(),
    );
    unverifiedAccusing(v);
    expect(v.detail).toMatch(/different rounds/);
  });

  it('attack: the same statement twice, one statement, or a statement of another protocol', () => {
    for (const statements of [
      [st(2, h1), st(2, h1)],
      [st(2, h1)],
      [st(2, h1), st(2, h2, { protocol: 'custodian.frost.sign' })],
    ]) {
      unverifiedAccusing(verifyBlame(base({ check: 'echo.equivocation', statements }), ctx()));
    }
  });

  it('attack: the statements are real but the blame claims another check', () => {
    const v = verifyBlame(base({ check: 'echo.false', statements: [st(2, h1), st(2, h2)] }), ctx());
    unverifiedAccusing(v);
  });
});

describe('echo.false: the culprit echoes a statement its party did not sign', () => {
  // Round 1 broadcasts of A, B, C and their statements; C's round-2 broadcast echoes them.
  const bodies = [r1Body(1), r1Body(3), r1Body(5)];
  const hashes = bodies.map((b, j) => echoHash(sid, 1, j, b));
  const sigs = hashes.map((h, j) => statementSig(j, 1, h));
  const confirm = { confirm: new Uint8Array(32).fill(9) };
  const echoMsg = (echo: Uint8Array[], echoSignatures: Uint8Array[], over: Partial<SealOpts> = {}) =>
    msg({
      from: C,
      sender: 2,
      round: 2,
      body: confirm,
      echo,
      echoSignatures,
      echoRound: 1,
      statementSignature: statementSig(2, 2, echoHash(sid, 2, 2, confirm)), // C's own, valid
      ...over,
    });

  it('verifies when C echoes for B a hash with a signature B did not make', () => {
    const fake = sha256(utf8ToBytes('not what B sent'));
    const garbage = ed25519Sign(utf8ToBytes('anything'), C.secretKey);
    const m = echoMsg([hashes[0], fake, hashes[2]] as Uint8Array[], [sigs[0], garbage, sigs[2]] as Uint8Array[]);
    const v = verifyBlame(base({ check: 'echo.false', round: 2, messages: [m] }), ctx());
    expect(v).toMatchObject({ verified: true, culprit: C.peerId, accuser: A.peerId });
    expect(v.detail).toMatch(/for party 1 a statement party 1 did not sign/);
  });

  it("attack: C's echo is honest (every entry signed by its party)", () => {
    const m = echoMsg(hashes, sigs);
    unverifiedAccusing(verifyBlame(base({ check: 'echo.false', round: 2, messages: [m] }), ctx()));
  });

  it("attack: the accuser permutes session_parties (A and B swapped) so C's honest echo reads as false", () => {
    const m = echoMsg(hashes, sigs);
    const v = verifyBlame(
      base({ check: 'echo.false', round: 2, messages: [m], sessionParties: [B.peerId, A.peerId, C.peerId] }),
      ctx(),
    );
    unverifiedAccusing(v);
  });

  it("attack: the accuser claims a smaller or larger run so C's honest echo has the wrong length", () => {
    const m = echoMsg(hashes, sigs);
    // C is index 2 of [A, B, C]; claimed runs [A, C] (C would be index 1: its signature fails) and [A, B, C, D]
    for (const sessionParties of [
      [A.peerId, B.peerId, C.peerId, D.peerId],
      [A.peerId, D.peerId, C.peerId, B.peerId],
    ]) {
      for (const check of ['echo.malformed', 'echo.false']) {
        unverifiedAccusing(verifyBlame(base({ check, round: 2, messages: [m], sessionParties }), ctx()));
      }
    }
  });

  it('verifies an echo whose signed echo_round names another round than its statements (no round search)', () => {
    // the runtime always sets echo_round to the round the echo covers (party.ts `covers`), and an
    // honest receiver checks the entries under exactly that round: round 1's statements under
    // echo_round 0 are false, as the receiver saw them
    const m = echoMsg(hashes, sigs, { echoRound: 0 });
    const v = verifyBlame(base({ check: 'echo.false', round: 2, messages: [m] }), ctx());
    expect(v).toMatchObject({ verified: true, culprit: C.peerId });
  });

  it('attack: the accuser seals the false echo itself, claiming sender C', () => {
    const garbage = new Uint8Array(64).fill(7);
    const m = echoMsg(hashes, [sigs[0], garbage, sigs[2]] as Uint8Array[], { from: A });
    const v = verifyBlame(base({ check: 'echo.false', round: 2, messages: [m] }), ctx());
    unverifiedAccusing(v);
    expect(v.detail).toMatch(/signature does not verify/);
  });

  it("attack: B's own false echo is blamed on C (the message is B's)", () => {
    const garbage = new Uint8Array(64).fill(7);
    const m = msg({
      from: B,
      sender: 1,
      round: 2,
      body: { confirm: new Uint8Array(32) },
      echo: hashes,
      echoSignatures: [garbage, sigs[1], sigs[2]] as Uint8Array[],
      echoRound: 1,
    });
    unverifiedAccusing(verifyBlame(base({ check: 'echo.false', round: 2, messages: [m] }), ctx()));
  });

  it("attack: a false echo from another session's envelope of C", () => {
    const otherSid = runSessionId(
      blameSessionId(ceremonyId, 'other-run'),
      session.map((p) => p.peerId),
    );
    const m = echoMsg(hashes, [sigs[0], new Uint8Array(64).fill(7), sigs[2]] as Uint8Array[], { sessionId: otherSid });
    const v = verifyBlame(base({ check: 'echo.false', round: 2, messages: [m] }), ctx());
    unverifiedAccusing(v);
    expect(v.detail).toMatch(/another session/);
  });
});

describe('echo.malformed: a broadcast whose statement signature fails, or a wrong-shaped echo', () => {
  it('verifies a broadcast of C whose statement signature fails', () => {
    const body = r1Body(5);
    const wrong = statementSig(2, 1, echoHash(sid, 1, 2, r1Body(6))); // a signature over another body's hash
    const m = msg({ from: C, sender: 2, round: 1, body, statementSignature: wrong });
    const v = verifyBlame(base({ check: 'echo.malformed', messages: [m] }), ctx());
    expect(v).toMatchObject({ verified: true, culprit: C.peerId });
    expect(v.detail).toMatch(/statement signature that fails/);
  });

  it('verifies a broadcast of C without a statement signature', () => {
    const m = msg({ from: C, sender: 2, round: 1, body: r1Body(5) });
    const v = verifyBlame(base({ check: 'echo.malformed', messages: [m] }), ctx());
    expect(v).toMatchObject({ verified: true, culprit: C.peerId });
    expect(v.detail).toMatch(/no statement signature/);
  });

  it('verifies a message of C with an echo vector of the wrong shape', () => {
    const h = sha256(utf8ToBytes('h'));
    const sig = statementSig(0, 1, h);
    const shapes: [Uint8Array[], Uint8Array[]][] = [
      [
        [h, h],
        [sig, sig],
      ], // two entries for three parties
      [
        [h, h, h],
        [sig, sig],
      ], // signatures missing
      [
        [h, h, new Uint8Array(0)],
        [sig, sig, sig],
      ], // a signature for an empty entry
    ];
    for (const [echo, echoSignatures] of shapes) {
      const m = msg({
        from: C,
        sender: 2,
        round: 2,
        to: 0,
        body: { share: new Uint8Array(32) },
        echo,
        echoSignatures,
        echoRound: 1,
      });
      const v = verifyBlame(base({ check: 'echo.malformed', round: 2, messages: [m] }), ctx());
      expect(v).toMatchObject({ verified: true, culprit: C.peerId });
    }
  });

  it("attack: C's honest broadcast (statement signature valid)", () => {
    const v = verifyBlame(base({ check: 'echo.malformed', messages: [signedBroadcast(2, 5)] }), ctx());
    unverifiedAccusing(v);
  });

  it('verifies an echo-round broadcast of C without a statement signature; not one with its statement', () => {
    const bare = msg({ from: C, sender: 2, round: 3, body: null });
    expect(verifyBlame(base({ check: 'echo.malformed', round: 3, messages: [bare] }), ctx())).toMatchObject({
      verified: true,
      culprit: C.peerId,
    });
    const signed = msg({
      from: C,
      sender: 2,
      round: 3,
      body: null,
      statementSignature: statementSig(2, 3, echoHash(sid, 3, 2, null)),
    });
    unverifiedAccusing(verifyBlame(base({ check: 'echo.malformed', round: 3, messages: [signed] }), ctx()));
  });

  it("attack: a sender's newer schema (an extra field) is not read as a failing statement", () => {
    // the sender's round type has a field 15 this coordinator does not know; its statement is honest
    const body = { ...(r1Body(5) as Record<string, Canonical>), extra: 1 };
    const payload = concatBytes(bodyBytes(1, 'broadcast', r1Body(5)), Uint8Array.of(0x78, 0x01));
    const statementSignature = statementSig(2, 1, echoHash(sid, 1, 2, body));
    const m = msg({ from: C, sender: 2, round: 1, body: r1Body(5), payload, statementSignature });
    const v = verifyBlame(base({ check: 'echo.malformed', messages: [m] }), ctx());
    unverifiedAccusing(v);
    expect(v.detail).toMatch(/does not decode/);
  });

  it('attack: a broadcast of a protocol without registered rounds', () => {
    const unknown = msg({ from: C, sender: 2, round: 1, body: { x: 1 }, protocol: 'custodian.test' });
    const v = verifyBlame(base({ check: 'echo.malformed', protocol: 'custodian.test', messages: [unknown] }), ctx());
    unverifiedAccusing(v);
    expect(v.detail).toMatch(/no registered broadcast type/);
  });

  it('attack: the accuser strips the statement signature and re-signs the envelope itself', () => {
    const m = msg({ from: A, sender: 2, round: 1, body: r1Body(5) });
    unverifiedAccusing(verifyBlame(base({ check: 'echo.malformed', messages: [m] }), ctx()));
  });
});

describe('message.conflict: two different messages of the culprit for one round and destination', () => {
  it('verifies two different broadcasts of C of one round', () => {
    const v = verifyBlame(
      base({ check: 'message.conflict', messages: [signedBroadcast(2, 1), signedBroadcast(2, 3)] }),
      ctx(),
    );
    expect(v).toMatchObject({ verified: true, culprit: C.peerId });
    expect(v.detail).toBe('two different broadcasts of round 1 signed by the culprit');
  });

  it('verifies two different point-to-point messages of C to A (opened with their keys)', () => {
    const m1 = msg({ from: C, sender: 2, round: 1, to: 0, body: { share: new Uint8Array(32).fill(1) } });
    const m2 = msg({ from: C, sender: 2, round: 1, to: 0, body: { share: new Uint8Array(32).fill(2) } });
    const v = verifyBlame(base({ check: 'message.conflict', messages: [m1, m2] }), ctx());
    expect(v).toMatchObject({ verified: true, culprit: C.peerId });
    expect(v.detail).toMatch(/point-to-point messages to party 0/);
  });

  it('verifies two broadcasts of C with the same body and echo but different echo signatures', () => {
    const h = [0, 1, 2].map((j) => echoHash(sid, 1, j, r1Body(j)));
    const sigs = h.map((x, j) => statementSig(j, 1, x));
    const body = { confirm: new Uint8Array(32).fill(4) };
    const one = msg({ from: C, sender: 2, round: 2, body, echo: h, echoSignatures: sigs, echoRound: 1 });
    const other = [sigs[0], new Uint8Array(64).fill(1), sigs[2]] as Uint8Array[];
    const two = msg({ from: C, sender: 2, round: 2, body, echo: h, echoSignatures: other, echoRound: 1 });
    expect(verifyBlame(base({ check: 'message.conflict', round: 2, messages: [one, two] }), ctx())).toMatchObject({
      verified: true,
      culprit: C.peerId,
    });
  });

  it('attack: the same message re-sealed (new ephemeral key, same content) is no conflict', () => {
    const body = { share: new Uint8Array(32).fill(1) };
    const m1 = msg({ from: C, sender: 2, round: 1, to: 0, body });
    const m2 = msg({ from: C, sender: 2, round: 1, to: 0, body });
    expect(m1.signedEnvelope).not.toEqual(m2.signedEnvelope);
    unverifiedAccusing(verifyBlame(base({ check: 'message.conflict', messages: [m1, m2] }), ctx()));
  });

  it('attack: the same envelope twice, two rounds, or two receivers', () => {
    const b = signedBroadcast(2, 1);
    const r2 = msg({ from: C, sender: 2, round: 2, body: { confirm: new Uint8Array(32) } });
    const toA = msg({ from: C, sender: 2, round: 1, to: 0, body: { share: new Uint8Array(32).fill(1) } });
    const toB = msg({ from: C, sender: 2, round: 1, to: 1, body: { share: new Uint8Array(32).fill(2) } });
    for (const messages of [
      [b, b],
      [b, r2],
      [toA, toB],
    ]) {
      unverifiedAccusing(verifyBlame(base({ check: 'message.conflict', messages }), ctx()));
    }
  });

  it('attack: point-to-point messages without keys, or with a key that is not theirs', () => {
    const m1 = msg({ from: C, sender: 2, round: 1, to: 0, body: { share: new Uint8Array(32).fill(1) } });
    const m2 = msg({ from: C, sender: 2, round: 1, to: 0, body: { share: new Uint8Array(32).fill(2) } });
    const noKeys = [m1, m2].map((m) => ({ signedEnvelope: m.signedEnvelope }));
    const v1 = verifyBlame(base({ check: 'message.conflict', messages: noKeys }), ctx());
    unverifiedAccusing(v1);
    expect(v1.detail).toMatch(/without their message keys/);
    const swapped = [{ ...m1, messageKey: m2.messageKey }, m2];
    const v2 = verifyBlame(base({ check: 'message.conflict', messages: swapped }), ctx());
    unverifiedAccusing(v2);
    expect(v2.detail).toMatch(/does not decrypt/);
  });

  it("attack: the accuser forges C's second broadcast, or blames B for C's conflict", () => {
    const forged = signedBroadcast(2, 3, A);
    unverifiedAccusing(
      verifyBlame(base({ check: 'message.conflict', messages: [signedBroadcast(2, 1), forged] }), ctx()),
    );
    const v = verifyBlame(
      base({
        check: 'message.conflict',
        party: 1,
        peerId: B.peerId,
        messages: [signedBroadcast(2, 1), signedBroadcast(2, 3)],
      }),
      ctx(),
    );
    unverifiedAccusing(v);
    expect(v.culprit).toBe(B.peerId);
  });
});

describe('checks the coordinator does not re-run', () => {
  it("proof.*: C's message is signed; unverified with the claim and the accuser named", () => {
    const m = msg({ from: C, sender: 2, round: 1, to: 0, body: { share: new Uint8Array(32) } });
    const v = verifyBlame(base({ check: 'proof.enc', messages: [m] }), ctx(B));
    expect(v).toEqual({
      verified: false,
      culprit: C.peerId,
      accuser: B.peerId,
      check: 'proof.enc',
      round: 1,
      protocol: PROTOCOL,
      detail: NOT_RE_RUN,
    });
  });

  it('proof.*: a forged message is reported as such', () => {
    const m = msg({ from: A, sender: 2, round: 1, body: r1Body(1) });
    const v = verifyBlame(base({ check: 'proof.enc', messages: [m] }), ctx());
    unverifiedAccusing(v);
    expect(v.detail).toMatch(/signature does not verify/);
  });
});

describe('presign.inconsistent-publication: the published MtA ciphertexts differ from the signed round-1 message', () => {
  const P = 'custodian.cggmp.presign.v1';
  const identRegistered =
    PROTOCOL_SCHEMAS.find((s) => s.protocol === P)?.rounds[3]?.broadcast === 'custodian.v1.cggmp.PresignIdentPublish';
  const pb = (over: Partial<BlameWire>) =>
    base({ check: 'presign.inconsistent-publication', protocol: P, round: 3, ...over });
  it('reads the publication with the registered identification round type', () => {
    expect(identRegistered).toBe(true);
  });
  /** C's round-1 point-to-point message to `to` with D, F, D̂, F̂ = 5, 6, 7, 8. */
  const direct = (to: number) =>
    msg({
      from: C,
      sender: 2,
      round: 1,
      to,
      protocol: P,
      body: filledBody(roundType(P, 1, 'p2p'), { D: 5n, F: 6n, Dh: 7n, Fh: 8n }),
    });
  /** C's round-3 publication in `mode`, stating (D, F) as sent to A and (1, 1) as sent to B. */
  const publish = (mode: string, D: bigint, F: bigint, from: Id = C) =>
    msg({
      from,
      sender: 2,
      round: 3,
      protocol: P,
      body: filledBody(roundType(P, 3, 'broadcast', echoRoundOf(P)), {
        mode,
        sent: [
          { j: 0, D, F },
          { j: 1, D: 1n, F: 1n },
        ],
      }),
    });

  it('verifies a publication that differs from what C sent A (mode delta and chi)', () => {
    for (const [mode, D, F] of [
      ['delta', 5n, 9n],
      ['chi', 9n, 8n],
      ['chi', 5n, 6n], // chi publishes D̂/F̂: D/F of round 1 are not what it sent for χ
    ] as const) {
      const v = verifyBlame(pb({ messages: [direct(0), publish(mode, D, F)] }), ctx());
      expect(v).toMatchObject({ verified: true, culprit: C.peerId, accuser: A.peerId });
    }
  });

  it('attack: a consistent publication, a forged one, or a round-1 message without its key', () => {
    for (const messages of [
      [direct(0), publish('delta', 5n, 6n)],
      [direct(0), publish('chi', 7n, 8n)],
      [direct(0), publish('delta', 5n, 9n, A)],
      [{ signedEnvelope: direct(0).signedEnvelope }, publish('delta', 5n, 9n)],
    ]) {
      unverifiedAccusing(verifyBlame(pb({ messages }), ctx()));
    }
  });
});

describe('property: a malicious accuser holding every honest message cannot get an honest party verified', () => {
  // The accuser A sees all honest traffic of B and C (broadcasts with statements, echoes, its own
  // point-to-point messages and their keys, re-sealed copies, another run's messages) and signs
  // anything with its own key. Whatever it assembles, a verified verdict names A, never B or C.
  const otherLabel = 'frost.dkg.other';
  const otherSid = runSessionId(
    blameSessionId(ceremonyId, otherLabel),
    session.map((p) => p.peerId),
  );
  const r1 = [0, 1, 2].map((j) => r1Body(10 + j));
  const h1 = r1.map((b, j) => echoHash(sid, 1, j, b));
  const s1 = h1.map((h, j) => statementSig(j, 1, h));
  const confirm = (j: number) => ({ confirm: new Uint8Array(32).fill(j) });
  const honest = (j: number, session = sid): BlameMessageWire[] => {
    const from = session_(j);
    const st = (round: number, body: Canonical) =>
      statementSig(j, round, echoHash(session, round, j, body), { sessionId: session });
    const share = { share: new Uint8Array(32).fill(j) };
    return [
      msg({
        from,
        sender: j,
        round: 1,
        body: r1[j] as Canonical,
        sessionId: session,
        statementSignature: st(1, r1[j] as Canonical),
      }),
      msg({
        from,
        sender: j,
        round: 2,
        body: confirm(j),
        sessionId: session,
        echo: h1,
        echoSignatures: s1,
        echoRound: 1,
        statementSignature: st(2, confirm(j)),
      }),
      msg({ from, sender: j, round: 3, body: null, sessionId: session, statementSignature: st(3, null) }),
      msg({ from, sender: j, round: 1, to: 0, body: share, sessionId: session }),
      msg({ from, sender: j, round: 1, to: 0, body: share, sessionId: session }), // re-sealed: new ephemeral key
    ];
  };
  function session_(j: number): Id {
    return session[j] as Id;
  }
  const honestStatements: BroadcastStatementWire[] = [1, 2].flatMap((j) =>
    [1, 2, 3].map((round) => {
      const body = round === 1 ? (r1[j] as Canonical) : round === 2 ? confirm(j) : null;
      const hash = echoHash(sid, round, j, body);
      return { protocol: PROTOCOL, sessionId: sid, round, sender: j, hash, signature: statementSig(j, round, hash) };
    }),
  );
  const forged: BlameMessageWire[] = [1, 2].flatMap((j) => [
    msg({ from: A, sender: j, round: 1, body: r1Body(40 + j) }),
    msg({
      from: A,
      sender: j,
      round: 2,
      body: confirm(j),
      echo: h1,
      echoSignatures: [s1[0], new Uint8Array(64), s1[2]] as Uint8Array[],
      echoRound: 1,
    }),
    msg({ from: A, sender: j, round: 1, to: 0, body: { share: new Uint8Array(32).fill(77) } }),
  ]);
  const forgedStatements: BroadcastStatementWire[] = [1, 2].map((j) => {
    const hash = sha256(utf8ToBytes(`forged ${j}`));
    const signature = ed25519Sign(
      concatBytes(ST_PREFIX, broadcastStatementBytes(PROTOCOL, sid, 1, j, hash)),
      A.secretKey,
    );
    return { protocol: PROTOCOL, sessionId: sid, round: 1, sender: j, hash, signature };
  });
  const pool = [
    ...honest(1),
    ...honest(2),
    ...honest(1, otherSid),
    ...forged,
    signedBroadcast(0, 50),
    signedBroadcast(0, 51),
  ];
  const withKeySwapped = (m: BlameMessageWire, k: BlameMessageWire): BlameMessageWire => ({
    ...m,
    messageKey: k.messageKey ?? new Uint8Array(0),
  });
  const orders = [
    [A, B, C],
    [B, A, C],
    [A, C, B],
    [C, B, A],
    [A, B, C, D],
    [A, B],
    [D, B, C],
  ].map((o) => o.map((i) => i.peerId));
  const checks = [
    'echo.equivocation',
    'echo.false',
    'echo.malformed',
    'message.conflict',
    'presign.inconsistent-publication',
    'proof.enc',
    'message.malformed',
  ];

  it('holds for any assembly of evidence, party list, label and check', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...checks),
        fc.nat(3),
        fc.constantFrom('', ...ids.map((i) => i.peerId)),
        fc.array(fc.tuple(fc.nat(pool.length - 1), fc.option(fc.nat(pool.length - 1))), { maxLength: 4 }),
        fc.array(fc.nat(honestStatements.length + forgedStatements.length - 1), { maxLength: 2 }),
        fc.nat(orders.length - 1),
        fc.boolean(),
        (check, party, peerId, picks, stPicks, order, otherRun) => {
          const all = [...honestStatements, ...forgedStatements];
          const messages = picks.map(([i, k]) =>
            k === null
              ? (pool[i] as BlameMessageWire)
              : withKeySwapped(pool[i] as BlameMessageWire, pool[k] as BlameMessageWire),
          );
          const v = verifyBlame(
            base({
              check,
              party,
              peerId,
              messages,
              statements: stPicks.map((i) => all[i] as BroadcastStatementWire),
              sessionParties: orders[order] as string[],
              ...(otherRun ? { sessionLabel: otherLabel, sessionId: otherSid } : {}),
            }),
            ctx(),
          );
          expect(v.accuser).toBe(A.peerId);
          if (v.verified) expect(v.culprit).toBe(A.peerId);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("is not vacuous: the accuser's own conflicting broadcasts are verified against it", () => {
    const v = verifyBlame(
      base({
        check: 'message.conflict',
        party: 0,
        peerId: A.peerId,
        messages: [signedBroadcast(0, 50), signedBroadcast(0, 51)],
      }),
      ctx(),
    );
    expect(v).toMatchObject({ verified: true, culprit: A.peerId });
  });
});

describe('never throws', () => {
  it('on arbitrary blames and contexts', () => {
    const m = signedBroadcast(2, 1);
    fc.assert(
      fc.property(
        fc.anything(),
        fc.record({
          check: fc.constantFrom(
            'echo.equivocation',
            'echo.false',
            'echo.malformed',
            'message.conflict',
            'proof.enc',
            '',
          ),
          messages: fc.array(
            fc.oneof(
              fc.constant(m),
              fc.record({
                signedEnvelope: fc.uint8Array({ maxLength: 200 }),
                messageKey: fc.uint8Array({ maxLength: 40 }),
              }),
              fc.anything(),
            ),
            { maxLength: 4 },
          ),
          statements: fc.array(fc.anything(), { maxLength: 3 }),
          party: fc.oneof(fc.nat(5), fc.anything()),
          sessionParties: fc.oneof(fc.constant(session.map((p) => p.peerId)), fc.anything()),
        }),
        (junk, fields) => {
          for (const b of [junk, { ...base(), ...fields }, fields]) {
            const v = verifyBlame(b as BlameWire, ctx());
            expect(typeof v.detail).toBe('string');
            if (v.verified) expect(v.culprit).toBe(C.peerId);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('on a blame whose getters throw', () => {
    const hostile = new Proxy(
      {},
      {
        get: () => {
          throw new Error('boom');
        },
      },
    );
    expect(verifyBlame(hostile as BlameWire, ctx()).verified).toBe(false);
  });
});
