/**
 * The signing ceremony's request checks common to both algorithms (known key and algorithm, enough
 * signers), then FROST signing (RFC 9591 §5.2; BIP340/Taproot with the BIP86 tweak) of 1..64
 * digests, each a session of its own. CGGMP21 ECDSA: sign-ecdsa.ts. The transfer evidence was
 * checked before (run.ts `enforce`); the {@link ReleaseGate}'s batch is written before any share
 * leaves, and the nonce commitments are durable first (nonce-ledger.ts).
 */
import { bytesToHex } from '@custodian/crypto';
import { type SignOutput, type SuiteName, signProtocol } from '@custodian/frost';
import { type CeremonyResult, Outcome, type SignatureInfo, type StartCeremony } from '@custodian/wire';
import type { SessionParty } from '../runner.js';
import type { StoreOp } from '../storage.js';
import {
  type CeremonyContext,
  type CeremonyHooks,
  combinedTranscript,
  failure,
  Refused,
  sessionId,
} from './context.js';
import { keyRecord, loadShare } from './keys.js';
import type { ReleaseGate } from './release-gate.js';
import { ecdsaSign } from './sign-ecdsa.js';

/**
 * Run a signing ceremony (see the module comment); ECDSA keys go to {@link ecdsaSign}.
 * @returns the result (signatures over the digests, in order) and no further writes
 * @throws Refused for an unknown key or algorithm, too few or foreign signers, bad digests or path
 */
export async function sign(
  ctx: CeremonyContext,
  start: StartCeremony,
  ceremonyId: Uint8Array,
  parties: SessionParty[],
  self: number,
  deadline: number,
  gate: ReleaseGate,
  hooks: CeremonyHooks,
): Promise<{ result: CeremonyResult; ops: StoreOp[] }> {
  const req = start.sign;
  if (!req) throw new Refused('sign: missing sign request');
  const rec = await keyRecord(ctx, req.keyId);
  if (!rec) throw new Refused(`unknown key ${req.keyId}`, 'KEY_UNKNOWN');
  const entry = rec.keys.find((k) => k.algorithm === req.algorithm);
  if (!entry) throw new Refused(`key ${req.keyId} has no key for algorithm ${req.algorithm}`, 'KEY_UNKNOWN');
  if (parties.length < rec.threshold) throw new Refused(`need at least ${rec.threshold} signers`);
  if (entry.suite === 'cggmp') return ecdsaSign(ctx, start, ceremonyId, parties, deadline, rec, gate, hooks);
  const signers = parties.map((p, i) => {
    const pos = rec.parties.indexOf(p.peerId);
    if (pos < 0) throw new Refused(`parties[${i}]: not a party of key ${req.keyId}`);
    return BigInt(pos + 1);
  });
  const digests = req.digests ?? [];
  if (digests.length < 1 || digests.length > 64) throw new Refused('digests: 1..64 expected');
  if (entry.suite === 'secp256k1-tr' && digests.some((d) => d.length !== 32))
    throw new Refused('digests: 32 bytes for Taproot');
  const path = req.derivationPath ?? [];
  if (path.some((i) => !Number.isSafeInteger(i) || i < 0 || i >= 0x8000_0000))
    throw new Refused('derivationPath: non-hardened indices only');
  const share = await loadShare(ctx, req.keyId, entry.suite as SuiteName);
  const merkleRoot = req.taprootMerkleRoot ?? new Uint8Array(0);
  if (merkleRoot.length !== 0 && merkleRoot.length !== 32) throw new Refused('taprootMerkleRoot: empty or 32 bytes');
  // wallet P2TR outputs are BIP86 (key path, no script tree): an enforcing signer tweaks with nothing else
  if (ctx.enforcement && merkleRoot.length !== 0)
    throw new Refused(
      'DIGEST_MISMATCH: taprootMerkleRoot: wallet P2TR outputs have no script tree (BIP86)',
      'DIGEST_MISMATCH',
    );
  await gate.commit();
  const outs = await Promise.all(
    digests.map((digest, i) =>
      ctx.runner.run<SignOutput>({
        sessionId: sessionId(ceremonyId, `frost.sign.${i}`),
        spec: signProtocol({
          keyShare: share,
          signers,
          message: Uint8Array.from(digest),
          nonceLedger: ctx.nonceLedger,
          ...(path.length > 0 ? { derivationPath: path } : {}),
          ...(entry.suite === 'secp256k1-tr' ? { taproot: { merkleRoot: Uint8Array.from(merkleRoot) } } : {}),
        }),
        parties,
        self,
        secretKey: ctx.secretKey,
        deadline,
        label: `frost.sign.${entry.suite}.${i}`,
        sessionLabel: `frost.sign.${i}`,
        group: bytesToHex(ceremonyId),
        // the round computing the share records the session's nonce commitments: durable first
        beforeRelease: () => ctx.nonceLedger.persist(),
      }),
    ),
  );
  if (!outs.every((o) => o.status === 'ok')) return { result: failure(ceremonyId, outs, parties), ops: [] };
  const signatures: SignatureInfo[] = outs.map((o, i) => {
    const out = (o as { output: SignOutput }).output;
    return {
      algorithm: req.algorithm,
      digest: digests[i] as Uint8Array,
      signature: out.signature,
      publicKey: out.verifyingKey,
    };
  });
  return {
    result: {
      ceremonyId,
      outcome: Outcome.OK,
      keyId: req.keyId,
      signatures,
      transcriptHash: combinedTranscript(ceremonyId, outs),
    },
    ops: [],
  };
}
