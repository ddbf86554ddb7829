/**
 * Bounded work of `echo.false` verification (review MEDIUM 4): each echo entry j is checked with one
 * Ed25519 verification under the run's key of j (the party order is bound into the session id), at
 * the round the envelope's signed `echo_round` names, and at most
 * BLAME_EVIDENCE_LIMITS.maxEchoVerifications entries are checked per blame. Before, every entry was
 * tried under every ceremony key and two rounds (P × P × 2 verifications per message).
 */
import { broadcastStatementBytes, ed25519Sign } from '@custodian/crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import {
  BLAME_EVIDENCE_LIMITS,
  blameSessionId,
  runSessionId,
  sealEnvelope,
  statementSigningBytes,
  verifyBlame,
} from '../src/index.js';
import { peerIdOf } from './peer-ids.js';

const PROTOCOL = 'custodian.frost.dkg';
const LABEL = 'frost.dkg.ed25519';
const ROUND = 2;
const COVERS = 1;

/**
 * A blame by the last of `P` parties against itself (`echo.false`), with `BLAME_EVIDENCE_LIMITS.maxMessages`
 * round-2 messages whose echo entries (covering round 1) are signed by `signerOf(j)`.
 */
function selfBlame(P: number, signerOf: (j: number, me: number) => number) {
  const keys = Array.from({ length: P }, (_, i) => {
    const secretKey = new Uint8Array(32).fill(100 + i);
    const publicKey = ed25519.getPublicKey(secretKey);
    return { secretKey, publicKey, peerId: peerIdOf(publicKey) };
  });
  const me = P - 1;
  const ceremonyId = sha256(utf8ToBytes(`bounds-${P}`));
  const peerIds = keys.map((k) => k.peerId);
  const sid = runSessionId(blameSessionId(ceremonyId, LABEL), peerIds);
  const echo = keys.map((_, j) => sha256(utf8ToBytes(`h${j}`)));
  const echoSignatures = echo.map((h, j) =>
    ed25519Sign(
      statementSigningBytes(broadcastStatementBytes(PROTOCOL, sid, COVERS, j, h)),
      keys[signerOf(j, me)]!.secretKey,
    ),
  );
  const messages = Array.from({ length: BLAME_EVIDENCE_LIMITS.maxMessages }, (_, k) => ({
    signedEnvelope: sealEnvelope({
      sessionId: sid,
      protocol: PROTOCOL,
      round: ROUND,
      sender: me,
      echo,
      echoSignatures,
      echoRound: COVERS,
      payload: Uint8Array.of(k),
      senderSecretKey: keys[me]!.secretKey,
    }),
    messageKey: new Uint8Array(0),
  }));
  const blame = {
    party: me,
    peerId: keys[me]!.peerId,
    reason: 'false echo',
    check: 'echo.false',
    round: ROUND,
    protocol: PROTOCOL,
    messages,
    statements: [],
    sessionParties: peerIds,
    sessionId: sid,
    sessionLabel: LABEL,
  };
  return { blame, ctx: { ceremonyId, ceremonyParties: peerIds, accuser: keys[me]!.peerId }, keys, me };
}

describe('echo.false verification is bounded', () => {
  it('entries signed by the echoer itself (the review DoS shape) are proven false at the first entry', () => {
    const { blame, ctx, keys, me } = selfBlame(30, (_j, me) => me);
    const v = verifyBlame(blame, ctx);
    expect(v).toMatchObject({ verified: true, culprit: keys[me]!.peerId, check: 'echo.false' });
    expect(v.detail).toMatch(/for party 0 a statement party 0 did not sign/);
  });

  it('8 messages × 63 honest entries (504 verifications, within the cap) are all checked: no false echo', () => {
    const { blame, ctx } = selfBlame(64, (j) => j);
    expect(8 * 63).toBeLessThanOrEqual(BLAME_EVIDENCE_LIMITS.maxEchoVerifications);
    const v = verifyBlame(blame, ctx);
    expect(v.verified).toBe(false);
    expect(v.detail).toMatch(/every echo entry of the culprit's messages is signed by its party/);
  });

  it('8 messages × 65 honest entries exceed the cap: unverified after maxEchoVerifications checks', () => {
    const { blame, ctx } = selfBlame(66, (j) => j);
    expect(8 * 65).toBeGreaterThan(BLAME_EVIDENCE_LIMITS.maxEchoVerifications);
    const v = verifyBlame(blame, ctx);
    expect(v.verified).toBe(false);
    expect(v.detail).toMatch(/more echo entries than the verifier examines/);
  });
});
