/**
 * The refresh ceremony (DESIGN §3 "Refresh"): every party of the key, in DKG order, re-shares the
 * same keys — FROST refresh per suite, CGGMP21 refresh with two fresh safe primes (new Paillier
 * keys) — and the new shares replace the old in ONE batch, with the key's presignatures deleted
 * (they were made with the old shares), only when every session succeeded.
 */
import {
  type KeyShare as EcdsaKeyShare,
  refreshProtocol as ecdsaRefreshProtocol,
  keyShareToJson,
} from '@custodian/cggmp';
import { bytesToHex } from '@custodian/crypto';
import { encodeKeyShare, type KeyShare, refreshProtocol, type SuiteName } from '@custodian/frost';
import { type CeremonyResult, Outcome, type StartCeremony } from '@custodian/wire';
import type { SessionOutcome, SessionParty } from '../runner.js';
import type { StoreOp } from '../storage.js';
import { type CeremonyContext, combinedTranscript, failure, Refused, sessionId } from './context.js';
import { type KeyRecord, loadEcdsaShare, loadKeyRecord, loadShare, publicKeys } from './keys.js';

const enc = new TextEncoder();

/**
 * Run the refresh ceremony's sessions (see the module comment).
 * @returns the result and the batch to write (new shares, record with epoch + 1, the key's
 *   presignatures deleted, consumed primes; on failure only the primes' deletion)
 * @throws Refused for an unknown key, a party set that is not the key's in DKG order, or no primes
 */
export async function refresh(
  ctx: CeremonyContext,
  start: StartCeremony,
  ceremonyId: Uint8Array,
  parties: SessionParty[],
  self: number,
  deadline: number,
): Promise<{ result: CeremonyResult; ops: StoreOp[] }> {
  const keyId = start.keyId ?? '';
  const rec = await loadKeyRecord(ctx.store, keyId);
  if (!rec) throw new Refused(`unknown key ${keyId}`, 'KEY_UNKNOWN');
  if (rec.parties.length !== parties.length || rec.parties.some((p, i) => parties[i]?.peerId !== p)) {
    throw new Refused('refresh: every party of the key must take part, in DKG order');
  }
  const frostKeys = rec.keys.filter((k) => k.suite !== 'cggmp');
  const shares = await Promise.all(frostKeys.map((k) => loadShare(ctx, keyId, k.suite as SuiteName)));
  const hasEcdsa = rec.keys.some((k) => k.suite === 'cggmp');
  let primes: { p: bigint; q: bigint; keys: string[] } | undefined;
  if (hasEcdsa) {
    if (!ctx.primePool) throw new Refused('ECDSA key refresh needs a prime pool', 'PRIME_POOL_NOT_CONFIGURED');
    primes = await ctx.primePool.take();
    if (!primes) throw new Refused('prime pool empty: retry when it has refilled', 'PRIME_POOL_EMPTY');
  }
  const common = { parties, self, secretKey: ctx.secretKey, deadline, group: bytesToHex(ceremonyId) };
  const ecdsaShare = hasEcdsa ? await loadEcdsaShare(ctx, keyId) : undefined;
  const ecdsaRun =
    ecdsaShare && primes
      ? ctx.runner.run<EcdsaKeyShare>({
          ...common,
          sessionId: sessionId(ceremonyId, 'cggmp.refresh'),
          spec: ecdsaRefreshProtocol({
            share: ecdsaShare,
            primes: { p: primes.p, q: primes.q },
            checkPrimality: false,
          }),
          label: 'cggmp.refresh',
        })
      : Promise.resolve(undefined);
  const frostRuns = Promise.all(
    shares.map((share) =>
      ctx.runner.run<KeyShare>({
        ...common,
        sessionId: sessionId(ceremonyId, `frost.refresh.${share.suite}`),
        spec: refreshProtocol({ keyShare: share }),
        label: `frost.refresh.${share.suite}`,
      }),
    ),
  );
  const [frostOuts, ecdsaOut] = await Promise.all([frostRuns, ecdsaRun]);
  const consumed = ctx.primePool && primes ? ctx.primePool.consumeOps(primes.keys) : [];
  const outs: SessionOutcome<unknown>[] = [...frostOuts, ...(ecdsaOut ? [ecdsaOut] : [])];
  if (!outs.every((o) => o.status === 'ok')) return { result: failure(ceremonyId, outs, parties), ops: consumed };
  const fresh = frostOuts.map((o) => (o as { output: KeyShare }).output);
  const next: KeyRecord = { ...rec, epoch: rec.epoch + 1 };
  const ops: StoreOp[] = [
    ...consumed,
    ...fresh.map(
      (s): StoreOp => ({ type: 'put', sublevel: 'shares', key: `${keyId}/${s.suite}`, value: encodeKeyShare(s) }),
    ),
    { type: 'put', sublevel: 'shares', key: `${keyId}/meta`, value: enc.encode(JSON.stringify(next)) },
  ];
  // presignatures were made with the old shares and Paillier keys: they go with them
  for (const k of await ctx.store.keys('presignatures', `${keyId}/`))
    ops.push({ type: 'del', sublevel: 'presignatures', key: k });
  if (ecdsaOut && ecdsaOut.status === 'ok') {
    ops.push({
      type: 'put',
      sublevel: 'shares',
      key: `${keyId}/cggmp`,
      value: enc.encode(JSON.stringify(keyShareToJson(ecdsaOut.output))),
    });
  }
  return {
    result: {
      ceremonyId,
      outcome: Outcome.OK,
      keyId,
      publicKeys: publicKeys(next),
      transcriptHash: combinedTranscript(ceremonyId, outs),
    },
    ops,
  };
}
