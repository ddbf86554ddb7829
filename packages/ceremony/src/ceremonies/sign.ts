/**
 * The signing ceremony's request checks common to both algorithms (known key and algorithm, enough
 * signers), then FROST signing (RFC 9591 §5.2; BIP340/Taproot with the BIP86 tweak) of 1..64
 * digests, each a session of its own. CGGMP21 ECDSA: sign-ecdsa.ts. With `SignRequest.digestKeys`
 * (issue #28) one ceremony signs each digest with its own key: ECDSA and Taproot parts, each at
 * its own path, sessions labelled by the digest's index. The transfer evidence was
 * checked before (run.ts `enforce`); the {@link ReleaseGate}'s batch is written before any share
 * leaves, and the nonce commitments are durable first (nonce-ledger.ts).
 */
import { bytesToHex } from '@custodian/crypto';
import { type SignOutput, type SuiteName, signProtocol } from '@custodian/frost';
import { type CeremonyResult, Outcome, type SignatureInfo, type StartCeremony } from '@custodian/wire';
import type { SessionOutcome, SessionParty } from '../runner.js';
import type { StoreOp } from '../storage.js';
import {
  type CeremonyContext,
  type CeremonyHooks,
  combinedTranscript,
  failure,
  Refused,
  sessionId,
} from './context.js';
import { type KeyRecord, keyRecord, loadShare } from './keys.js';
import type { ReleaseGate } from './release-gate.js';
import { type DigestItem, ecdsaSign, ecdsaSignPart, type SignPart } from './sign-ecdsa.js';

const nonHardened = (path: readonly number[]) =>
  path.every((i) => Number.isSafeInteger(i) && i >= 0 && i < 0x8000_0000);

/**
 * Run a signing ceremony (see the module comment); ECDSA keys go to {@link ecdsaSign}. With
 * `digestKeys` (issue #28) each digest is signed with its own key: see {@link signDigestKeys}.
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
  if ((req.digestKeys ?? []).length > 0)
    return signDigestKeys(ctx, start, ceremonyId, parties, self, deadline, rec, gate, hooks);
  if (entry.suite === 'cggmp') return ecdsaSign(ctx, start, ceremonyId, parties, deadline, rec, gate, hooks);
  const digests = req.digests ?? [];
  if (digests.length < 1 || digests.length > 64) throw new Refused('digests: 1..64 expected');
  if (entry.suite === 'secp256k1-tr' && digests.some((d) => d.length !== 32))
    throw new Refused('digests: 32 bytes for Taproot');
  const path = req.derivationPath ?? [];
  if (!nonHardened(path)) throw new Refused('derivationPath: non-hardened indices only');
  const part = await frostSignPart(
    ctx,
    start,
    ceremonyId,
    parties,
    self,
    deadline,
    rec,
    entry,
    gate,
    digests.map((digest, index) => ({ digest, index, path })),
  );
  return finish(ceremonyId, req.keyId, [part], digests.length);
}

/**
 * Issue #28: one ceremony, several keys. `digestKeys` has exactly one entry per digest (1..64
 * digests); each names an algorithm of the key record and a non-hardened path; secp256k1 digests
 * are 32 bytes. The ECDSA digests are signed by CGGMP21 (cold, each with its own path's tweak; a
 * pooled `presignatureId` only for a request of one digest), the others by FROST at their own path
 * (Taproot: BIP86 tweak); every session is labelled with the digest's global index, so no two
 * share an id. Signatures come back in digest order, each with its own algorithm and public key.
 * @throws Refused (KEY_UNKNOWN for an algorithm the key record lacks) when a check fails; nothing signed
 */
async function signDigestKeys(
  ctx: CeremonyContext,
  start: StartCeremony,
  ceremonyId: Uint8Array,
  parties: SessionParty[],
  self: number,
  deadline: number,
  rec: KeyRecord,
  gate: ReleaseGate,
  hooks: CeremonyHooks,
): Promise<{ result: CeremonyResult; ops: StoreOp[] }> {
  const req = start.sign as NonNullable<StartCeremony['sign']>;
  const digests = req.digests ?? [];
  const keys = req.digestKeys ?? [];
  if (digests.length < 1 || digests.length > 64) throw new Refused('digests: 1..64 expected');
  if (keys.length !== digests.length)
    throw new Refused(`digestKeys: ${keys.length} keys for ${digests.length} digests (one per digest)`);
  // every check before any part starts: a refusal never leaves another part's sessions running
  if ((req.presignatureId ?? '') !== '' && digests.length !== 1)
    throw new Refused('presignatureId: signs exactly one digest');
  for (const [i, p] of parties.entries())
    if (!rec.parties.includes(p.peerId)) throw new Refused(`parties[${i}]: not a party of key ${req.keyId}`);
  const groups = new Map<number, { entry: KeyRecord['keys'][number]; items: DigestItem[] }>();
  for (const [index, k] of keys.entries()) {
    const e = rec.keys.find((x) => x.algorithm === k.algorithm);
    if (!e) throw new Refused(`digestKeys[${index}]: key ${req.keyId} has no algorithm ${k.algorithm}`, 'KEY_UNKNOWN');
    const path = k.derivationPath ?? [];
    if (!nonHardened(path)) throw new Refused(`digestKeys[${index}]: non-hardened indices only`);
    const digest = digests[index] as Uint8Array;
    if (e.suite !== 'ed25519' && digest.length !== 32) throw new Refused(`digests[${index}]: 32 bytes for secp256k1`);
    const g = groups.get(k.algorithm) ?? { entry: e, items: [] };
    g.items.push({ digest, index, path: [...path] });
    groups.set(k.algorithm, g);
  }
  const parts = await Promise.all(
    [...groups.values()].map(({ entry, items }) =>
      entry.suite === 'cggmp'
        ? ecdsaSignPart(ctx, start, ceremonyId, parties, deadline, rec, gate, hooks, items)
        : frostSignPart(ctx, start, ceremonyId, parties, self, deadline, rec, entry, gate, items),
    ),
  );
  return finish(ceremonyId, req.keyId, parts, digests.length);
}

/** The FROST part of a signing ceremony: one session `frost.sign.<index>` per item, at its path. */
async function frostSignPart(
  ctx: CeremonyContext,
  start: StartCeremony,
  ceremonyId: Uint8Array,
  parties: SessionParty[],
  self: number,
  deadline: number,
  rec: KeyRecord,
  entry: KeyRecord['keys'][number],
  gate: ReleaseGate,
  items: readonly DigestItem[],
): Promise<SignPart> {
  const req = start.sign as NonNullable<StartCeremony['sign']>;
  const signers = parties.map((p, i) => {
    const pos = rec.parties.indexOf(p.peerId);
    if (pos < 0) throw new Refused(`parties[${i}]: not a party of key ${req.keyId}`);
    return BigInt(pos + 1);
  });
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
    items.map(({ digest, index: i, path }) =>
      ctx.runner.run<SignOutput>({
        sessionId: sessionId(ceremonyId, `frost.sign.${i}`),
        spec: signProtocol({
          keyShare: share,
          signers,
          message: Uint8Array.from(digest),
          nonceLedger: ctx.nonceLedger,
          ...(path.length > 0 ? { derivationPath: [...path] } : {}),
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
  return {
    outs,
    parties,
    indices: items.map((x) => x.index),
    signatures: () =>
      outs.map((o, k) => {
        const out = (o as { output: SignOutput }).output;
        return {
          algorithm: entry.algorithm,
          digest: (items[k] as DigestItem).digest,
          signature: out.signature,
          publicKey: out.verifyingKey,
        };
      }),
  };
}

/** The ceremony's result from its parts: the first failing part's failure, else every signature in digest order. */
function finish(
  ceremonyId: Uint8Array,
  keyId: string,
  parts: readonly SignPart[],
  count: number,
): { result: CeremonyResult; ops: StoreOp[] } {
  const failed = parts.find((p) => !p.outs.every((o) => o.status === 'ok'));
  if (failed) return { result: failure(ceremonyId, failed.outs, failed.parties), ops: [] };
  const signatures: SignatureInfo[] = new Array(count);
  const outs: SessionOutcome<unknown>[] = new Array(count);
  for (const p of parts) {
    const sigs = p.signatures();
    for (const [k, s] of sigs.entries()) {
      const at = p.indices[k] as number;
      signatures[at] = s;
      outs[at] = p.outs[k] as SessionOutcome<unknown>;
    }
  }
  return {
    result: {
      ceremonyId,
      outcome: Outcome.OK,
      keyId,
      signatures,
      transcriptHash: combinedTranscript(ceremonyId, outs),
    },
    ops: [],
  };
}
