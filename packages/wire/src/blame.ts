/**
 * Third-party verification of blame evidence (issue #23 part 3; docs/protocols.md "Blame evidence").
 *
 * A signer that aborts a protocol run reports each culprit as a `custodian.v1.Blame` (control.proto)
 * with the evidence it holds: the culprit's signed envelopes as received (`messages`, each with the
 * one-message ChaCha20-Poly1305 key of a point-to-point one) and, for a broadcast equivocation, two
 * broadcast statements signed by the culprit (`statements`). The coordinator must not believe the
 * accuser: {@link verifyBlame} checks the evidence itself, with the culprit's Ed25519 identity key
 * (behind its libp2p peer id), and says `verified` only when the evidence proves the misbehaviour
 * with no trust in the accuser. Everything else is `verified: false` and names the accuser.
 *
 * Binding to the ceremony and the run's party order: `session_id` must equal
 * {@link runSessionId}(SHA-256(canonical('custodian/v1/session', ceremonyId, session_label)),
 * session_parties) — the session id the runner (packages/ceremony runner.ts) puts on the wire, so
 * every envelope and broadcast statement of the run signs the ordered party list (the first hash is
 * packages/ceremony ceremonies/context.ts `sessionId`, re-derived here because `wire` may not import
 * `ceremony`: {@link blameSessionId}). Every envelope and statement must carry that session id and
 * the blame's protocol, and `session_parties` must be a subset of the ceremony's. So evidence cannot
 * be replayed from another ceremony, session or protocol, a signature cannot be moved to another
 * party (every signed byte names the signer's index), and the accuser cannot permute or resize the
 * party list (another list gives another session id, which no envelope of the culprit carries).
 *
 * Pure: no I/O, no clock, never throws (a malformed blame is an unverified verdict). Secrets: the
 * message keys open only their one message (a fresh ephemeral key per point-to-point message); no
 * payload byte is copied into a verdict.
 *
 * Third-party opening of envelopes uses envelope.ts's signature prefixes and point-to-point AAD;
 * `openAsThirdParty` cannot replace `openOne`: it rejects the wrong-shaped echo fields that
 * `echo.malformed` must be able to prove, and a point-to-point envelope without its key, which the
 * shape and session checks do not need.
 *
 * Length: over 400 lines because it holds one verifier per check of the catalogue, which share the
 * parsing and opening of the evidence; split it by check if another is added.
 */
import {
  broadcastStatementBytes,
  type Canonical,
  canonicalEncode,
  echoHash,
  ed25519Verify,
  equalBytes,
} from '@custodian/crypto';
import { peerIdFromString } from '@libp2p/peer-id';
import { chacha20poly1305 } from '@noble/ciphers/chacha.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { concatBytes } from '@noble/hashes/utils.js';
import { bytesToCanonical, canonicalToBytes, DEFAULT_LIMITS, decodeMessage } from './codec.js';
import { ENVELOPE_SIG_PREFIX, p2pAad, statementSigningBytes, WIRE_VERSION } from './envelope.js';
import { PROTOCOL_SCHEMAS, roundType } from './rounds.js';
import { messageType } from './schema.js';

/** `custodian.v1.BlameMessage` as the codec yields it: the SignedEnvelope bytes and, for point-to-point, its 32-byte key. */
export interface BlameMessageWire {
  readonly signedEnvelope?: Uint8Array;
  readonly messageKey?: Uint8Array;
}

/** `custodian.v1.BroadcastStatement` as the codec yields it (camelCase). */
export interface BroadcastStatementWire {
  readonly protocol?: string;
  readonly sessionId?: Uint8Array;
  readonly round?: number;
  readonly sender?: number;
  /** 32-byte echo hash. */
  readonly hash?: Uint8Array;
  /** 64-byte Ed25519 signature. */
  readonly signature?: Uint8Array;
}

/**
 * `custodian.v1.Blame` as the control codec yields it (camelCase; absent fields read as their proto3
 * defaults). A legacy blame has `party`, `peerId` and `reason` only.
 */
export interface BlameWire {
  readonly party?: number;
  readonly peerId?: string;
  readonly reason?: string;
  readonly check?: string;
  readonly round?: number;
  readonly protocol?: string;
  readonly messages?: readonly BlameMessageWire[];
  readonly statements?: readonly BroadcastStatementWire[];
  readonly sessionParties?: readonly string[];
  readonly sessionId?: Uint8Array;
  readonly sessionLabel?: string;
}

/** What the verifier knows of the ceremony, independently of the accuser. */
export interface BlameContext {
  readonly ceremonyId: Uint8Array;
  /** Peer ids of the ceremony's parties (any run's session_parties must be a subset). */
  readonly ceremonyParties: readonly string[];
  /** The peer id of the signer that reported the blame (the accuser). */
  readonly accuser: string;
}

/** The coordinator's verdict on one blame. `detail` never holds secret material. */
export interface BlameVerdict {
  /** true: the evidence proves `culprit` misbehaved (checked here); false: it does not (absent, malformed, or not proving). */
  readonly verified: boolean;
  /** verified: the proven culprit's peer id; else the peer id the accuser named (claimed), or '' */
  readonly culprit: string;
  readonly accuser: string;
  /** `blame.check`, or 'check.unspecified'. */
  readonly check: string;
  readonly round: number;
  readonly protocol: string;
  /** How it was checked / why not, e.g. "two different statements of round 2 signed by the culprit". */
  readonly detail: string;
}

/**
 * Evidence caps: at most this many messages and statements are examined, and at most
 * `maxEchoVerifications` echo-entry signatures checked per blame (one Ed25519 verification per
 * entry: 8 messages × 64 entries); more: unverified.
 */
export const BLAME_EVIDENCE_LIMITS = { maxMessages: 8, maxStatements: 2, maxEchoVerifications: 512 } as const;

/** Detail of a blame whose check is not re-run by the coordinator. */
export const NOT_RE_RUN = "culprit's message is signed; the failed check was not re-run by the coordinator";

const SignedEnvelopeType = messageType('custodian.v1.SignedEnvelope');
const EnvelopeType = messageType('custodian.v1.Envelope');
const ZERO_NONCE = new Uint8Array(12);
const MAX_STRING = 1024;

/**
 * Session id of one protocol run of a ceremony: SHA-256 of the canonical encoding of
 * ('custodian/v1/session', ceremony id, label); 32 bytes. Equal to packages/ceremony
 * ceremonies/context.ts `sessionId` (tested there).
 */
export function blameSessionId(ceremonyId: Uint8Array, label: string): Uint8Array {
  return sha256(canonicalEncode(['custodian/v1/session', ceremonyId, label]));
}

/**
 * The session id a run puts on the wire (Party context, envelopes, broadcast statements,
 * `Blame.session_id`): SHA-256 of the canonical encoding of ('custodian/v1/run', session id, the
 * run's peer ids in runtime-index order); 32 bytes. Binding the order makes every signature of the
 * run name it, so a blame's `session_parties` is checked against the culprit's own signatures.
 * @param sessionId the caller's session id (e.g. {@link blameSessionId}; 32 bytes)
 * @param peerIds libp2p peer id strings, position = runtime index
 */
export function runSessionId(sessionId: Uint8Array, peerIds: readonly string[]): Uint8Array {
  return sha256(canonicalEncode(['custodian/v1/run', sessionId, [...peerIds]]));
}

/** The signed bytes of a broadcast statement (envelope.ts `statementSigningBytes` of `broadcastStatementBytes`). */
function signedStatement(protocol: string, sessionId: Uint8Array, round: number, sender: number, hash: Uint8Array) {
  return statementSigningBytes(broadcastStatementBytes(protocol, sessionId, round, sender, hash));
}

type Check<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly detail: string };
const ok = <T>(value: T): Check<T> => ({ ok: true, value });
const no = <T>(detail: string): Check<T> => ({ ok: false, detail });

// ---------- untrusted input → typed values ----------

function asBytes(v: unknown): Uint8Array | undefined {
  if (v === undefined || v === null || (Array.isArray(v) && v.length === 0)) return new Uint8Array(0);
  if (!(v instanceof Uint8Array) || v.length > DEFAULT_LIMITS.maxFieldBytes) return undefined;
  return v;
}

function asString(v: unknown, max = MAX_STRING): string | undefined {
  if (v === undefined || v === null) return '';
  return typeof v === 'string' && v.length <= max ? v : undefined;
}

function asUint(v: unknown): number | undefined {
  if (v === undefined || v === null) return 0;
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= 0xffff_ffff ? v : undefined;
}

function asList(v: unknown, max: number): readonly unknown[] | undefined {
  if (v === undefined || v === null) return [];
  return Array.isArray(v) && v.length <= max ? v : undefined;
}

function field(o: unknown, k: string): unknown {
  return typeof o === 'object' && o !== null ? (o as Record<string, unknown>)[k] : undefined;
}

// ---------- the run: session, parties, keys ----------

interface Run {
  readonly protocol: string;
  readonly sessionId: Uint8Array;
  readonly parties: readonly string[];
  /** Ed25519 identity public keys (32 bytes) by runtime index. */
  readonly keys: readonly Uint8Array[];
  /** The named culprit's runtime index. */
  readonly party: number;
  /** Number of the ceremony's parties (an upper bound of any run's size). */
  readonly maxParties: number;
}

function ed25519KeyOf(peerId: string): Uint8Array | undefined {
  try {
    const pid = peerIdFromString(peerId);
    return pid.type === 'Ed25519' && pid.publicKey ? pid.publicKey.raw : undefined;
  } catch {
    return undefined;
  }
}

function checkRun(blame: unknown, ctx: BlameContext, protocol: string): Check<Run> {
  if (protocol === '') return no('no protocol');
  const label = asString(field(blame, 'sessionLabel'));
  const sessionId = asBytes(field(blame, 'sessionId'));
  if (label === undefined || sessionId === undefined) return no('malformed session label or id');
  if (!(ctx.ceremonyId instanceof Uint8Array)) return no('no ceremony id');
  const list = asList(field(blame, 'sessionParties'), ctx.ceremonyParties.length);
  if (list === undefined || list.length === 0) return no('session parties missing or more than the ceremony has');
  const parties: string[] = [];
  const keys: Uint8Array[] = [];
  for (const [i, p] of list.entries()) {
    if (typeof p !== 'string' || !ctx.ceremonyParties.includes(p)) {
      return no(`session party ${i} is not a party of this ceremony`);
    }
    if (parties.includes(p)) return no(`session party ${i} is a duplicate`);
    const key = ed25519KeyOf(p);
    if (!key) return no(`session party ${i} is not an Ed25519 peer id`);
    parties.push(p);
    keys.push(key);
  }
  if (!equalBytes(sessionId, runSessionId(blameSessionId(ctx.ceremonyId, label), parties))) {
    return no('session id is not derived from this ceremony, the session label and the session parties in order');
  }
  const party = asUint(field(blame, 'party'));
  if (party === undefined || party >= parties.length) return no('party is not an index of the session parties');
  const named = asString(field(blame, 'peerId'));
  if (named !== '' && named !== parties[party]) return no('peer id does not match the session party of that index');
  return ok({ protocol, sessionId, parties, keys, party, maxParties: ctx.ceremonyParties.length });
}

// ---------- envelopes, opened as a third party ----------

/** An envelope of the evidence: signature checked under its sender's key, session and protocol checked. */
interface Opened {
  /** Position in `blame.messages`. */
  readonly at: number;
  readonly round: number;
  readonly sender: number;
  /** Absent: broadcast. */
  readonly receiver?: number;
  /** Plaintext payload; absent for a point-to-point message without its key. */
  readonly payload?: Uint8Array;
  readonly echo: readonly Uint8Array[];
  readonly echoSignatures: readonly Uint8Array[];
  readonly echoRound: number;
  readonly statementSignature: Uint8Array;
}

function bytesList(v: unknown): Uint8Array[] | undefined {
  const l = asList(v, DEFAULT_LIMITS.maxRepeated);
  if (l === undefined) return undefined;
  const out: Uint8Array[] = [];
  for (const x of l) {
    const b = asBytes(x);
    if (b === undefined) return undefined;
    out.push(b);
  }
  return out;
}

function openOne(m: unknown, at: number, run: Run): Check<Opened> {
  const bad = (why: string) => no<Opened>(`message ${at}: ${why}`);
  const signedBytes = asBytes(field(m, 'signedEnvelope'));
  const messageKey = asBytes(field(m, 'messageKey'));
  if (signedBytes === undefined || messageKey === undefined || signedBytes.length === 0) return bad('malformed');
  const outer = decodeMessage(SignedEnvelopeType, signedBytes);
  if (!outer.ok) return bad('not a signed envelope');
  const envBytes = asBytes(field(outer.value, 'envelope'));
  const signature = asBytes(field(outer.value, 'signature'));
  if (!envBytes || !signature || envBytes.length === 0) return bad('not a signed envelope');
  const inner = decodeMessage(EnvelopeType, envBytes);
  if (!inner.ok) return bad('not an envelope');
  const e = inner.value as unknown as Record<string, unknown>;
  const sender = asUint(e.sender);
  const round = asUint(e.round);
  const echoRound = asUint(e.echoRound);
  const sessionId = asBytes(e.sessionId);
  const echo = bytesList(e.echo);
  const echoSignatures = bytesList(e.echoSignatures);
  const statementSignature = asBytes(e.statementSignature);
  const ephemeralKey = asBytes(e.ephemeralKey);
  const payload = asBytes(e.payload);
  if (
    sender === undefined ||
    round === undefined ||
    echoRound === undefined ||
    sessionId === undefined ||
    echo === undefined ||
    echoSignatures === undefined ||
    statementSignature === undefined ||
    ephemeralKey === undefined ||
    payload === undefined
  ) {
    return bad('malformed envelope fields');
  }
  if (e.version !== WIRE_VERSION) return bad('unsupported envelope version');
  if (sender >= run.keys.length) return bad('sender is not a session party');
  if (!ed25519Verify(signature, concatBytes(ENVELOPE_SIG_PREFIX, envBytes), run.keys[sender] as Uint8Array)) {
    return bad(`envelope signature does not verify under party ${sender}'s key`);
  }
  if (!equalBytes(sessionId, run.sessionId)) return bad("envelope is of another session than the blame's");
  if (e.protocol !== run.protocol) return bad("envelope is of another protocol than the blame's");
  const base = { at, round, sender, echo, echoSignatures, echoRound, statementSignature };
  if (e.destination === 'broadcast') return ok({ ...base, payload });
  if (e.destination !== 'receiver') return bad('envelope has no destination');
  const receiver = asUint(e.receiver);
  if (receiver === undefined || receiver >= run.keys.length) return bad('receiver is not a session party');
  if (messageKey.length === 0) return ok({ ...base, receiver });
  if (messageKey.length !== 32 || ephemeralKey.length !== 32) return bad('malformed message key or ephemeral key');
  try {
    const plain = chacha20poly1305(
      messageKey,
      ZERO_NONCE,
      p2pAad(
        {
          version: e.version as number,
          sessionId: e.sessionId as Uint8Array,
          protocol: e.protocol as string,
          round: e.round as number,
          sender: e.sender as number,
          receiver,
          echo: (e.echo as Uint8Array[]).map((h) => Uint8Array.from(h)),
        },
        ephemeralKey,
      ),
    ).decrypt(payload);
    return ok({ ...base, receiver, payload: plain });
  } catch {
    return bad('point-to-point payload does not decrypt with the given message key');
  }
}

/** Open every message of the evidence; one that fails makes the whole blame unverified (tampered evidence). */
function openAll(blame: unknown, run: Run): Check<Opened[]> {
  const list = asList(field(blame, 'messages'), BLAME_EVIDENCE_LIMITS.maxMessages) ?? [];
  const out: Opened[] = [];
  for (const [i, m] of list.entries()) {
    const o = openOne(m, i, run);
    if (!o.ok) return o;
    out.push(o.value);
  }
  return ok(out);
}

// ---------- round types ----------

/** The protocol's echo round (its number of rounds), if the protocol is registered. */
function echoRoundOf(protocol: string): number | undefined {
  return PROTOCOL_SCHEMAS.find((s) => s.protocol === protocol)?.rounds.length;
}

/** Whether (protocol, round) has a registered broadcast type (the echo round excluded). */
function registeredBroadcast(protocol: string, round: number): boolean {
  const schema = PROTOCOL_SCHEMAS.find((s) => s.protocol === protocol);
  return schema?.rounds[round]?.broadcast !== undefined;
}

/**
 * Whether a broadcast of (protocol, round) must carry a statement signature the coordinator can
 * check: a registered broadcast round, or the echo round of a registered protocol (its body is null;
 * the runtime signs every broadcast it sends and checks every one it receives).
 */
function signedBroadcastRound(protocol: string, round: number): boolean {
  return registeredBroadcast(protocol, round) || round === echoRoundOf(protocol);
}

/**
 * The runtime body of a message, decoded with this process's registered type of its (protocol,
 * round, part) — only when it re-encodes to exactly the payload (senders encode with
 * `canonicalToBytes`, which is deterministic). So a coordinator whose schema differs from the
 * sender's (another version: e.g. a round added) gets no body, never a wrong one, and cannot take an
 * honest statement for a false one.
 */
function decodeBody(protocol: string, m: Opened): Canonical | undefined {
  if (m.payload === undefined) return undefined;
  const kind = m.receiver === undefined ? 'broadcast' : 'p2p';
  const type = roundType(protocol, m.round, kind, echoRoundOf(protocol));
  const body = bytesToCanonical(type, m.payload);
  if (!body.ok) return undefined;
  try {
    return equalBytes(canonicalToBytes(type, body.value), m.payload) ? body.value : undefined;
  } catch {
    return undefined;
  }
}

// ---------- the checks ----------

/** echo.equivocation: two different statements of one round, both signed by the culprit. */
function equivocation(blame: unknown, run: Run): Check<string> {
  const list = asList(field(blame, 'statements'), BLAME_EVIDENCE_LIMITS.maxStatements);
  if (list === undefined || list.length !== 2) return no('equivocation needs exactly two statements');
  const st: { round: number; hash: Uint8Array }[] = [];
  for (const [i, s] of list.entries()) {
    const protocol = asString(field(s, 'protocol'));
    const sessionId = asBytes(field(s, 'sessionId'));
    const round = asUint(field(s, 'round'));
    const sender = asUint(field(s, 'sender'));
    const hash = asBytes(field(s, 'hash'));
    const signature = asBytes(field(s, 'signature'));
    if (protocol === undefined || !sessionId || round === undefined || sender === undefined || !hash || !signature) {
      return no(`statement ${i}: malformed`);
    }
    if (protocol !== run.protocol) return no(`statement ${i}: of another protocol than the blame's`);
    if (!equalBytes(sessionId, run.sessionId)) return no(`statement ${i}: of another session than the blame's`);
    if (sender !== run.party) return no(`statement ${i}: its sender is not the named party`);
    if (hash.length !== 32) return no(`statement ${i}: hash is not 32 bytes`);
    const signed = signedStatement(protocol, sessionId, round, sender, hash);
    if (!ed25519Verify(signature, signed, run.keys[sender] as Uint8Array)) {
      return no(`statement ${i}: signature does not verify under the named party's key`);
    }
    st.push({ round, hash });
  }
  const [a, b] = st as [(typeof st)[0], (typeof st)[0]];
  if (a.round !== b.round) return no('the two statements are of different rounds');
  if (equalBytes(a.hash, b.hash)) return no('the two statements are the same');
  return ok(`two different statements of round ${a.round} signed by the culprit`);
}

function fromCulprit(msgs: readonly Opened[], run: Run): Opened[] {
  return msgs.filter((m) => m.sender === run.party);
}

/** Whether `sig` verifies under `key` over the statement (protocol, session, round, j, hash): one Ed25519 verification. */
function statementVerifies(
  run: Run,
  key: Uint8Array,
  round: number,
  j: number,
  hash: Uint8Array,
  sig: Uint8Array,
): boolean {
  return ed25519Verify(sig, signedStatement(run.protocol, run.sessionId, round, j, hash), key);
}

/**
 * Why the echo vector of `m` has the wrong shape, or undefined when it is well formed (or absent).
 * Only faults provable without trusting the accuser's party list: the run's true size n is at most
 * the ceremony's and above the message's own sender and receiver indices (signed by the culprit), so
 * an echo longer than the ceremony or too short for those indices is wrong; entries are 0 or 32
 * bytes; one signature per entry, 64 bytes exactly where the entry is non-empty.
 */
function echoShapeFault(m: Opened, maxParties: number): string | undefined {
  if (m.echo.length === 0 && m.echoSignatures.length === 0) return undefined;
  const n = m.echo.length;
  if (n > maxParties) return `an echo vector of ${n} entries for a ceremony of ${maxParties} parties`;
  const own = Math.max(m.sender, m.receiver ?? 0);
  if (own >= n) return `an echo vector of ${n} entries, too short for party index ${own}`;
  if (m.echoSignatures.length !== n) return `${m.echoSignatures.length} echo signatures for ${n} echo entries`;
  for (let j = 0; j < n; j++) {
    const h = m.echo[j] as Uint8Array;
    const s = m.echoSignatures[j] as Uint8Array;
    if (h.length !== 0 && h.length !== 32) return `echo entry ${j} of ${h.length} bytes`;
    if (h.length === 0 && s.length !== 0) return `an echo signature for the empty echo entry ${j}`;
    if (h.length === 32 && s.length !== 64) return `echo entry ${j} without a 64-byte signature`;
  }
  return undefined;
}

/**
 * echo.false: the culprit's echo carries, for another index j, a signature that is not
 * session_parties[j]'s over j's statement of the round the echo covers (`echo_round`, signed in the
 * envelope). The order of `session_parties` is bound into the session id every envelope signs
 * ({@link runSessionId}), so j's key is known; one verification per entry, at most
 * {@link BLAME_EVIDENCE_LIMITS}.maxEchoVerifications per blame (more: unverified).
 */
function falseEcho(msgs: readonly Opened[], run: Run): Check<string> {
  const mine = fromCulprit(msgs, run);
  if (mine.length === 0) return no("no message of the culprit's in the evidence");
  let budget: number = BLAME_EVIDENCE_LIMITS.maxEchoVerifications;
  for (const m of mine) {
    if (m.echo.length === 0 || echoShapeFault(m, run.maxParties) !== undefined) continue;
    for (let j = 0; j < m.echo.length; j++) {
      const h = m.echo[j] as Uint8Array;
      if (j === m.sender || h.length === 0) continue;
      const key = run.keys[j];
      if (key === undefined) {
        return ok(
          `the culprit's signed message of round ${m.round} echoes for party ${j}, which is not a party of the run`,
        );
      }
      if (budget-- <= 0) return no('more echo entries than the verifier examines');
      if (!statementVerifies(run, key, m.echoRound, j, h, m.echoSignatures[j] as Uint8Array)) {
        return ok(
          `the culprit's signed message of round ${m.round} echoes for party ${j} a statement party ${j} did not sign`,
        );
      }
    }
  }
  return no("every echo entry of the culprit's messages is signed by its party (no false echo shown)");
}

/** echo.malformed: the culprit's broadcast statement signature fails, or its echo vector has the wrong shape. */
function malformedEcho(msgs: readonly Opened[], run: Run): Check<string> {
  const mine = fromCulprit(msgs, run);
  if (mine.length === 0) return no("no message of the culprit's in the evidence");
  let why = 'the echo and statement of every message of the culprit are well formed';
  for (const m of mine) {
    const fault = echoShapeFault(m, run.maxParties);
    if (fault !== undefined) return ok(`the culprit's signed message of round ${m.round} carries ${fault}`);
    if (m.receiver !== undefined) continue;
    if (!signedBroadcastRound(run.protocol, m.round)) {
      why = `round ${m.round} of ${run.protocol} has no registered broadcast type: its statement was not checked`;
      continue;
    }
    const body = decodeBody(run.protocol, m);
    if (body === undefined) {
      why = `the broadcast of round ${m.round} does not decode exactly with this coordinator's round type: its statement was not checked`;
      continue;
    }
    const hash = echoHash(run.sessionId, m.round, run.party, body);
    if (!statementVerifies(run, run.keys[run.party] as Uint8Array, m.round, run.party, hash, m.statementSignature)) {
      const what = m.statementSignature.length === 0 ? 'no statement signature' : 'a statement signature that fails';
      return ok(`the culprit's signed broadcast of round ${m.round} carries ${what}`);
    }
  }
  return no(why);
}

/**
 * The content the runtime compares for a duplicate (crypto runtime party.ts `sameMessage`): the
 * canonical body (the raw payload when it does not decode), the echo, its signatures and round, and
 * the statement signature. An honest re-send has the same content (Ed25519 signatures are
 * deterministic); only the ephemeral key of a re-sealed point-to-point message differs.
 */
function contentOf(protocol: string, m: Opened): Uint8Array | undefined {
  if (m.payload === undefined) return undefined;
  const body = decodeBody(protocol, m);
  const payload: Canonical = body === undefined ? ['raw', m.payload] : ['body', body];
  return canonicalEncode([
    payload,
    m.echo as Uint8Array[],
    m.echoSignatures as Uint8Array[],
    m.echoRound,
    m.statementSignature,
  ]);
}

/** message.conflict: two validly signed messages of the culprit for one (round, destination) with different content. */
function conflict(msgs: readonly Opened[], run: Run): Check<string> {
  const mine = fromCulprit(msgs, run);
  let why = 'no two messages of the culprit for the same round and destination';
  for (let a = 0; a < mine.length; a++) {
    for (let b = a + 1; b < mine.length; b++) {
      const x = mine[a] as Opened;
      const y = mine[b] as Opened;
      if (x.round !== y.round || x.receiver !== y.receiver) continue;
      const cx = contentOf(run.protocol, x);
      const cy = contentOf(run.protocol, y);
      if (cx === undefined || cy === undefined) {
        why = 'point-to-point messages without their message keys cannot be compared';
        continue;
      }
      if (equalBytes(cx, cy)) {
        why = 'the messages of the same round and destination have the same content';
        continue;
      }
      const dest = x.receiver === undefined ? 'broadcasts' : `point-to-point messages to party ${x.receiver}`;
      return ok(`two different ${dest} of round ${x.round} signed by the culprit`);
    }
  }
  return no(why);
}

const PRESIGN = 'custodian.cggmp.presign.v1';
const PRESIGN_PUBLISH = 'custodian.v1.cggmp.PresignIdentPublish';

function asRecord(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array)
    ? (v as Record<string, unknown>)
    : undefined;
}

/**
 * presign.inconsistent-publication (CGGMP21 presigning identification, packages/cggmp
 * presign-ident.ts round 3 "ident.publish"): the culprit's signed publication states, for its mode,
 * the MtA ciphertexts it sent to party j in round 1 (`sent[{ j, D, F }]`: D_{j,i}, F_{j,i} in mode
 * "delta", D̂_{j,i}, F̂_{j,i} in mode "chi"); its signed round-1 point-to-point message to j
 * (`PresignRound1Direct` D, F, Dh, Fh, opened with its key) holds different ones.
 */
function inconsistentPublication(msgs: readonly Opened[], run: Run): Check<string> {
  if (run.protocol !== PRESIGN) return no(`not a ${PRESIGN} run`);
  const schema = PROTOCOL_SCHEMAS.find((s) => s.protocol === PRESIGN);
  if (schema?.rounds[3]?.broadcast !== PRESIGN_PUBLISH) {
    return no('the presigning identification round is not registered: the publication was not compared');
  }
  const mine = fromCulprit(msgs, run);
  const published = mine.find((m) => m.receiver === undefined && m.round === 3);
  if (!published) return no("needs the culprit's round-3 publication");
  const pub = asRecord(decodeBody(PRESIGN, published));
  const mode = pub?.mode;
  const sent = pub?.sent;
  if (!pub || (mode !== 'delta' && mode !== 'chi') || !Array.isArray(sent)) {
    return no('the publication does not decode');
  }
  let why = "needs the culprit's round-1 point-to-point message with its message key";
  for (const m of mine) {
    if (m.round !== 1 || m.receiver === undefined || m.payload === undefined) continue;
    const direct = asRecord(decodeBody(PRESIGN, m));
    const entry = sent.map(asRecord).find((e) => e?.j === m.receiver);
    if (!direct || !entry) {
      why = `the round-1 message to party ${m.receiver} or its publication entry does not decode`;
      continue;
    }
    const [D, F] = mode === 'delta' ? [direct.D, direct.F] : [direct.Dh, direct.Fh];
    if (typeof D !== 'bigint' || typeof F !== 'bigint' || typeof entry.D !== 'bigint' || typeof entry.F !== 'bigint') {
      why = 'the ciphertexts do not decode';
      continue;
    }
    if (entry.D !== D || entry.F !== F) {
      return ok(
        `the culprit's signed round-3 publication (mode ${mode}) differs from its signed round-1 message to party ${m.receiver}`,
      );
    }
    why = `the publication matches the round-1 message to party ${m.receiver}`;
  }
  return no(why);
}

// ---------- the verdict ----------

/**
 * Verify one blame's evidence as a third party (the coordinator). Checks, by `blame.check`
 * (docs/protocols.md "Blame evidence"): `echo.equivocation` (two statements), `echo.false`,
 * `echo.malformed`, `message.conflict` (signed envelopes) → `verified` when proven; every other
 * check: the messages' signatures are checked, the check itself is not re-run (`verified: false`,
 * detail {@link NOT_RE_RUN}); no check and no evidence: "no evidence".
 * @param blame the decoded `custodian.v1.Blame` (untrusted: any shape is tolerated)
 * @returns the verdict; `culprit` is the proven party only when `verified`, else the claimed one (or '')
 * @throws never
 */
export function verifyBlame(blame: BlameWire, ctx: BlameContext): BlameVerdict {
  const accuser = typeof ctx?.accuser === 'string' ? ctx.accuser : '';
  const fallback = { verified: false, culprit: '', accuser, check: 'check.unspecified', round: 0, protocol: '' };
  try {
    return judge(blame, ctx, accuser);
  } catch {
    return { ...fallback, detail: 'the evidence could not be checked' };
  }
}

function judge(blame: unknown, ctx: BlameContext, accuser: string): BlameVerdict {
  const check = asString(field(blame, 'check'), 128) || 'check.unspecified';
  const round = asUint(field(blame, 'round')) ?? 0;
  const protocol = asString(field(blame, 'protocol'), 256) ?? '';
  let claimed = asString(field(blame, 'peerId'), 256) ?? '';
  const verdict = (verified: boolean, detail: string): BlameVerdict => ({
    verified,
    culprit: claimed,
    accuser,
    check,
    round,
    protocol,
    detail,
  });
  try {
    if (claimed === '') {
      const parties = field(blame, 'sessionParties');
      const party = asUint(field(blame, 'party'));
      const p = Array.isArray(parties) && party !== undefined ? parties[party] : undefined;
      if (typeof p === 'string' && p.length <= 256) claimed = p;
    }
    const messages = asList(field(blame, 'messages'), Number.MAX_SAFE_INTEGER) ?? [];
    const statements = asList(field(blame, 'statements'), Number.MAX_SAFE_INTEGER) ?? [];
    if (messages.length === 0 && statements.length === 0) return verdict(false, 'no evidence');
    if (
      messages.length > BLAME_EVIDENCE_LIMITS.maxMessages ||
      statements.length > BLAME_EVIDENCE_LIMITS.maxStatements
    ) {
      return verdict(false, 'more evidence than the verifier examines');
    }
    const run = checkRun(blame, ctx, protocol);
    if (!run.ok) return verdict(false, run.detail);
    const result = proves(check, blame, run.value);
    if (!result.ok) return verdict(false, result.detail);
    claimed = run.value.parties[run.value.party] as string;
    return verdict(true, result.value);
  } catch {
    return verdict(false, 'the evidence could not be checked');
  }
}

/** Run the verifier of `check` on the evidence. */
function proves(check: string, blame: unknown, run: Run): Check<string> {
  if (check === 'echo.equivocation') return equivocation(blame, run);
  const msgs = openAll(blame, run);
  if (!msgs.ok) return msgs;
  switch (check) {
    case 'echo.false':
      return falseEcho(msgs.value, run);
    case 'echo.malformed':
      return malformedEcho(msgs.value, run);
    case 'message.conflict':
      return conflict(msgs.value, run);
    case 'presign.inconsistent-publication':
      return inconsistentPublication(msgs.value, run);
    default:
      return msgs.value.length > 0 && fromCulprit(msgs.value, run).length === msgs.value.length
        ? no(NOT_RE_RUN)
        : no("the evidence holds a message that is not the culprit's, or none");
  }
}
