/**
 * The recovery drill (issue #22, `custodian admin keys drill`): the parties sign the fixed digest
 * `testSignatureDigest('drill', keyId, ceremonyId)` under every key of the master key (test-sign.ts:
 * which key each signature verifies under), proving the shares still sign without moving funds and
 * without any process learning a key. The parties are a signing set of the key (all of them parties
 * of the key's record, at least its threshold). No transfer evidence is asked for (no transaction
 * hashes to the digest), no pooled presignature is consumed, and nothing is written but the
 * ceremony's audit record (and, as for every FROST signature, the nonce ledger).
 */
import type { KeyShare as EcdsaKeyShare } from '@custodian/cggmp';
import type { KeyShare, SuiteName } from '@custodian/frost';
import { type CeremonyResult, Outcome, type StartCeremony, testSignatureDigest } from '@custodian/wire';
import type { SessionOutcome, SessionParty } from '../runner.js';
import type { StoreOp } from '../storage.js';
import { type CeremonyContext, combinedTranscript, failure, Refused } from './context.js';
import { keyRecord, loadEcdsaShare, loadShare, publicKeys } from './keys.js';
import { type TestSignKey, type TestSignOutcome, testSignatures } from './test-sign.js';

/**
 * Run a DRILL (see the module comment).
 * @returns OK with the verified signatures (one per key of the master key, record order), or the
 *   failure with blame; no writes
 * @throws Refused for an unknown key (KEY_UNKNOWN), a party not of the key, or fewer than its threshold
 */
export async function drill(
  ctx: CeremonyContext,
  start: StartCeremony,
  ceremonyId: Uint8Array,
  parties: SessionParty[],
  deadline: number,
): Promise<{ result: CeremonyResult; ops: StoreOp[] }> {
  const keyId = start.keyId ?? '';
  const rec = await keyRecord(ctx, keyId);
  if (!rec) throw new Refused(`unknown key ${keyId}`, 'KEY_UNKNOWN');
  const keys: TestSignKey[] = await Promise.all(
    rec.keys.map(
      async (k): Promise<TestSignKey> =>
        k.suite === 'cggmp'
          ? { algorithm: k.algorithm, suite: 'cggmp', share: (await loadEcdsaShare(ctx, keyId)) as EcdsaKeyShare }
          : {
              algorithm: k.algorithm,
              suite: k.suite as SuiteName,
              share: (await loadShare(ctx, keyId, k.suite as SuiteName)) as KeyShare,
            },
    ),
  );
  const digest = testSignatureDigest('drill', keyId, ceremonyId);
  const signed = await testSignatures(
    ctx,
    ceremonyId,
    deadline,
    rec.parties,
    rec.threshold,
    parties,
    keys,
    digest,
    'drill',
  );
  if (!signed.signatures) return { result: testSignFailure(ceremonyId, signed, keys, parties), ops: [] };
  return {
    result: {
      ceremonyId,
      outcome: Outcome.OK,
      keyId,
      publicKeys: publicKeys(rec),
      signatures: signed.signatures,
      transcriptHash: combinedTranscript(ceremonyId, signed.outs),
    },
    ops: [],
  };
}

/** The failure of test signatures, blame naming peers by each session's own party order. */
export function testSignFailure(
  ceremonyId: Uint8Array,
  signed: TestSignOutcome,
  keys: readonly TestSignKey[],
  parties: readonly SessionParty[],
): CeremonyResult {
  const i = signed.outs.findIndex((o) => o.status === 'aborted');
  if (i >= 0) {
    const order = keys[i]?.suite === 'cggmp' ? signed.ecdsaParties : parties;
    return failure(ceremonyId, [signed.outs[i] as SessionOutcome<unknown>], order);
  }
  return failure(ceremonyId, signed.outs, parties);
}
