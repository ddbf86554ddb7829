/**
 * Blame evidence with real keys (issue #23 part 3) for the coordinator and CLI tests: signer
 * identities (Ed25519 seed, libp2p peer id) and a `custodian.v1.Blame` as an accuser sends it —
 * without evidence, or with two broadcast statements of round 1 signed by a given key (valid
 * `echo.equivocation` evidence when that key is the culprit's and the session id is the ceremony's).
 */
import { broadcastStatementBytes, ed25519Sign } from '@custodian/crypto';
import { blameSessionId, runSessionId } from '@custodian/wire';
import { publicKeyFromRaw } from '@libp2p/crypto/keys';
import { peerIdFromPublicKey } from '@libp2p/peer-id';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { concatBytes, randomBytes, utf8ToBytes } from '@noble/hashes/utils.js';

const ST_PREFIX = concatBytes(utf8ToBytes('custodian/v1/broadcast-statement'), Uint8Array.of(0));

/** A signer identity: 32-byte Ed25519 seed, 32-byte public key, libp2p peer id. */
export function identity() {
  const seed = randomBytes(32);
  const pub = ed25519.getPublicKey(seed);
  return { seed, pub, peerId: peerIdFromPublicKey(publicKeyFromRaw(pub)).toString() };
}
export type Identity = ReturnType<typeof identity>;

/**
 * The Blame an accuser sends naming `culprit` (runtime index in `session`). With `signer`: check
 * `echo.equivocation`, two statements of round 1 (hashes of 'one' and 'two') signed by `signer`'s
 * key, bound to the run's session id of (`ceremonyId`, `label`, `session` in order); without: a legacy blame (no evidence).
 */
export function blameBy(
  o: {
    culprit: Identity;
    session: readonly Identity[];
    ceremonyId: Uint8Array;
    protocol: string;
    label: string;
  },
  signer?: Identity,
) {
  const sessionId = runSessionId(
    blameSessionId(o.ceremonyId, o.label),
    o.session.map((i) => i.peerId),
  );
  const sender = o.session.indexOf(o.culprit);
  const st = (s: Identity, text: string) => {
    const hash = sha256(utf8ToBytes(text));
    const signed = concatBytes(ST_PREFIX, broadcastStatementBytes(o.protocol, sessionId, 1, sender, hash));
    return { protocol: o.protocol, sessionId, round: 1, sender, hash, signature: ed25519Sign(signed, s.seed) };
  };
  return {
    party: sender,
    peerId: o.culprit.peerId,
    reason: 'sent two different broadcasts',
    ...(signer
      ? {
          check: 'echo.equivocation',
          round: 1,
          protocol: o.protocol,
          sessionParties: o.session.map((i) => i.peerId),
          sessionLabel: o.label,
          sessionId,
          statements: [st(signer, 'one'), st(signer, 'two')],
        }
      : {}),
  };
}
