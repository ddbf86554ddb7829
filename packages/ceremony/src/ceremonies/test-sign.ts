/**
 * Test signatures (issue #22): the signatures a RESHARE (by the new set, with its new shares) and a
 * recovery DRILL (by the key's signers) make over the fixed 32-byte digest
 * `testSignatureDigest(purpose, keyId, ceremonyId)` (packages/wire key-change.ts) under every key of
 * a master key — master keys themselves, no HD derivation — each verified here with noble before
 * it is reported. No transaction of any chain hashes to that digest, so they need no transfer
 * evidence; nothing of them is stored (the FROST nonce commitments go to the nonce ledger first, as
 * for every FROST signature; ECDSA presigns inline, never from the pool).
 *
 * What each signature verifies under (the `publicKey` reported):
 * - Ed25519 (RFC 8032 §5.1.7): the 32-byte master public key;
 * - Taproot: BIP340 under the BIP86 output key — the internal key tweaked with an EMPTY merkle
 *   root (BIP341 `taggedHash("TapTweak", P)`), x-only 32 bytes — as the sign path tweaks a wallet
 *   key; not under the internal key the record holds;
 * - ECDSA (SEC 1 §4.1.4): the 33-byte compressed master public key, 64-byte r‖s low-s, over the
 *   digest itself (no further hashing).
 */
import {
  type KeyShare as EcdsaKeyShare,
  type EcdsaSignature,
  signProtocol as ecdsaSignProtocol,
  type Presignature,
  presignProtocol,
} from '@custodian/cggmp';
import { bytesToHex } from '@custodian/crypto';
import { type KeyShare, type SignOutput, type SuiteName, signProtocol } from '@custodian/frost';
import { KeyAlgorithm, type SignatureInfo } from '@custodian/wire';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import type { SessionOutcome, SessionParty } from '../runner.js';
import { type CeremonyContext, Refused, sessionId } from './context.js';

/** One key to test-sign with: its algorithm and this signer's share of it. */
export type TestSignKey =
  | { readonly algorithm: number; readonly suite: SuiteName; readonly share: KeyShare }
  | { readonly algorithm: number; readonly suite: 'cggmp'; readonly share: EcdsaKeyShare };

/** What {@link testSignatures} returns: every session's outcome and, when all succeeded, the verified signatures. */
export interface TestSignOutcome {
  readonly outs: SessionOutcome<unknown>[];
  /** In the order of the keys; undefined when a session did not succeed. */
  readonly signatures?: SignatureInfo[];
  /** The session parties of the ECDSA sessions (ascending key index), for blame. */
  readonly ecdsaParties: readonly SessionParty[];
}

/**
 * Sign `digest` (32 bytes) under each of `keys` among `parties`, every session at once, and verify
 * each signature locally.
 * @param members the key's parties in identifier order (member k has FROST identifier k + 1 and
 *   CGGMP21 index k); every session party must be one
 * @param label session label prefix (`drill`, `reshare.test`): session ids are per ceremony and label
 * @throws Refused when a party is not a member or there are fewer than `threshold`
 * @throws Error when a signature that every session produced does not verify (a bug, never a peer's
 *   fault: each share was checked by the protocols)
 */
export async function testSignatures(
  ctx: CeremonyContext,
  ceremonyId: Uint8Array,
  deadline: number,
  members: readonly string[],
  threshold: number,
  parties: readonly SessionParty[],
  keys: readonly TestSignKey[],
  digest: Uint8Array,
  label: string,
): Promise<TestSignOutcome> {
  if (digest.length !== 32) throw new RangeError('digest: 32 bytes');
  const index = parties.map((p, i) => {
    const k = members.indexOf(p.peerId);
    if (k < 0) throw new Refused(`parties[${i}]: not a party of the key`);
    return k;
  });
  if (parties.length < threshold) throw new Refused(`need at least ${threshold} signers`);
  const self = parties.findIndex((p) => p.peerId === ctx.selfPeerId);
  if (self < 0) throw new Refused('this signer is not in the signing set');
  const byIndex = parties.map((p, i) => ({ p, k: index[i] as number })).sort((a, b) => a.k - b.k);
  const ecdsaParties = byIndex.map((x) => x.p);
  const ecdsaSigners = byIndex.map((x) => x.k);
  const ecdsaSelf = ecdsaParties.findIndex((p) => p.peerId === ctx.selfPeerId);
  const group = bytesToHex(ceremonyId);
  const runs = keys.map(async (key): Promise<SessionOutcome<SignOutput | EcdsaSignature>> => {
    if (key.suite === 'cggmp') {
      const common = { parties: [...ecdsaParties], self: ecdsaSelf, secretKey: ctx.secretKey, deadline, group };
      const pre = await ctx.runner.run<Presignature>({
        ...common,
        sessionId: sessionId(ceremonyId, `${label}.cggmp.presign`),
        spec: presignProtocol({ share: key.share, signers: ecdsaSigners }),
        label: `${label}.cggmp.presign`,
      });
      if (pre.status !== 'ok') return pre;
      return ctx.runner.run<EcdsaSignature>({
        ...common,
        sessionId: sessionId(ceremonyId, `${label}.cggmp.sign`),
        spec: ecdsaSignProtocol({ presignature: pre.output, digest, tweak: 0n }),
        label: `${label}.cggmp.sign`,
      });
    }
    return ctx.runner.run<SignOutput>({
      parties: [...parties],
      self,
      secretKey: ctx.secretKey,
      deadline,
      group,
      sessionId: sessionId(ceremonyId, `${label}.frost.${key.suite}`),
      spec: signProtocol({
        keyShare: key.share,
        signers: index.map((k) => BigInt(k + 1)),
        message: digest,
        nonceLedger: ctx.nonceLedger,
        ...(key.suite === 'secp256k1-tr' ? { taproot: { merkleRoot: new Uint8Array(0) } } : {}),
      }),
      label: `${label}.frost.${key.suite}`,
      beforeRelease: () => ctx.nonceLedger.persist(),
    });
  });
  const outs = await Promise.all(runs);
  if (!outs.every((o) => o.status === 'ok')) return { outs, ecdsaParties };
  const signatures = outs.map((o, i): SignatureInfo => {
    const key = keys[i] as TestSignKey;
    if (key.suite === 'cggmp') {
      const sig = (o as { output: EcdsaSignature }).output;
      return {
        algorithm: key.algorithm,
        digest,
        signature: sig.compact,
        publicKey: sig.publicKey,
        recoveryId: sig.recovery,
      };
    }
    const out = (o as { output: SignOutput }).output;
    return { algorithm: key.algorithm, digest, signature: out.signature, publicKey: out.verifyingKey };
  });
  for (const s of signatures) {
    if (!verifyTestSignature(s)) throw new Error(`test signature of algorithm ${s.algorithm} does not verify`);
  }
  return { outs, signatures, ecdsaParties };
}

/** Verify a test signature with noble (see the module comment for the key it verifies under). Never throws. */
export function verifyTestSignature(s: SignatureInfo): boolean {
  try {
    if (s.algorithm === KeyAlgorithm.ED25519) return ed25519.verify(s.signature, s.digest, s.publicKey);
    if (s.algorithm === KeyAlgorithm.SECP256K1_TAPROOT) return schnorr.verify(s.signature, s.digest, s.publicKey);
    if (s.algorithm === KeyAlgorithm.SECP256K1_ECDSA)
      return secp256k1.verify(s.signature, s.digest, s.publicKey, { prehash: false, lowS: true });
  } catch {
    return false;
  }
  return false;
}
