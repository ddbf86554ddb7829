/**
 * The RESHARE ceremony (issue #22; DESIGN §3 "Refresh and resharing"): move every key of a master
 * key — FROST Ed25519, FROST secp256k1 (Taproot) and the CGGMP21 core share — from its old party set
 * to a new set and threshold t', public keys and chain codes unchanged, and keep the new shares
 * PENDING until the RESHARE_COMMIT (commit.ts). Nothing old is touched here: a failure at any point
 * leaves the old set signing.
 *
 * 1. Authorization: `start.reshare.keyChangeJson` is a `SignedKeyChange` (packages/wire
 *    key-change.ts). With `ctx.enforcement` it must be signed by one of its trusted Admin devices
 *    (else KEY_CHANGE_NOT_AUTHORIZED); without, the signer takes part only when it allows
 *    unenforced signing (else ENFORCEMENT_NOT_CONFIGURED). The request's key id, new parties,
 *    threshold and approver devices must be the document's (else REQUEST_INVALID). A party that
 *    holds the key checks the document's public keys and chain codes against its record; a party
 *    new to the key takes them from the document (the protocols then check the key against them).
 * 2. Roles: every old party of the key present in `start.parties` deals (an old party checks there
 *    are at least the key's threshold of them), every member of the new set must be present; the
 *    session agrees on who deals with which old identifier (reshare-roles.ts).
 * 3. Resharing, one session per key, context = `keyChangeDigest(document)`: packages/frost and
 *    packages/cggmp `reshareProtocol` (Feldman VSS redistribution; a dealer that misbehaves is
 *    named: its blame is the result's). At the same time, among the NEW set only (runtime order =
 *    new order), CGGMP21 aux info with two safe primes from the pool (as refresh.ts).
 * 4. Among the new set only: a test signature per key over `testSignatureDigest('reshare', keyId,
 *    ceremonyId)` with the NEW shares (test-sign.ts), each verified locally.
 * 5. ONE batch (written by run.ts): for a member of the new set its new shares and the new key
 *    record (parties = new set, t', epoch + 1, approver devices = the request's minus revoked ones)
 *    as a pending entry (pending.ts); for a dealer outside the new set a pending `leave` entry; either
 *    with the new set and the held record's epoch (the commit's base), replacing any older pending
 *    entry of the key; the consumed primes whatever the outcome. Result OK: public keys, transcript
 *    hash, and (new members) the test signatures and `pendingAttestation`: the party's Ed25519
 *    identity-key signature over `reshareAttestationMessage(keyId, ceremonyId)`, which every party's
 *    RESHARE_COMMIT requires from every new member (commit.ts).
 *
 * A party new to the key has no epoch of its own: its record takes the epoch the dealers carried
 * into the new FROST shares (old epoch + 1), else 1.
 */
import {
  type AuxInfo,
  auxInfoProtocol,
  type CoreKeyShare,
  type EcdsaReshareOutput,
  reshareProtocol as ecdsaReshareProtocol,
  keyShareToJson,
  validateKeyShare as validateEcdsaKeyShare,
} from '@custodian/cggmp';
import { bytesToHex, ed25519Sign, secp256k1Group } from '@custodian/crypto';
import {
  encodeKeyShare,
  type FrostReshareOutput,
  type KeyShare,
  reshareProtocol,
  type SuiteName,
} from '@custodian/frost';
import {
  type CeremonyResult,
  Outcome,
  reshareAttestationMessage,
  type StartCeremony,
  testSignatureDigest,
} from '@custodian/wire';
import type { SessionOutcome, SessionParty } from '../runner.js';
import type { StoreOp } from '../storage.js';
import { type CeremonyContext, combinedTranscript, failure, Refused, sessionId } from './context.js';
import { testSignFailure } from './drill.js';
import { type KeyRecord, loadEcdsaShare, loadShare } from './keys.js';
import { pendingMetaOp, pendingPrefix } from './pending.js';
import { checkReshareRequest } from './reshare-request.js';
import { reshareRolesProtocol } from './reshare-roles.js';
import { isRevoked, revokedApprovers } from './revoke.js';
import { type TestSignKey, testSignatures } from './test-sign.js';

const enc = new TextEncoder();

const hexToBytes = (h: string) => Uint8Array.from(Buffer.from(h, 'hex'));

/**
 * Run the RESHARE ceremony (see the module comment).
 * @returns the result and the batch to write (pending entry and consumed primes; on failure only
 *   the primes' deletion)
 * @throws Refused for a request that does not pass {@link checkReshareRequest}, or no primes
 */
export async function reshare(
  ctx: CeremonyContext,
  start: StartCeremony,
  ceremonyId: Uint8Array,
  parties: SessionParty[],
  self: number,
  deadline: number,
): Promise<{ result: CeremonyResult; ops: StoreOp[] }> {
  const r = await checkReshareRequest(ctx, start, parties);
  const { keyId, rec, newParties } = r;
  const newIndex = newParties.indexOf(ctx.selfPeerId);
  const member = newIndex >= 0;
  const hasEcdsa = r.keys.some((k) => k.suite === 'cggmp');
  // what this party deals with (read before any session: a missing share is a refusal)
  const frostKeys = r.keys.filter((k) => k.suite !== 'cggmp');
  const oldFrost = rec ? await Promise.all(frostKeys.map((k) => loadShare(ctx, keyId, k.suite as SuiteName))) : [];
  const oldEcdsa = rec && hasEcdsa ? (await loadEcdsaShare(ctx, keyId)).core : undefined;
  let primes: { p: bigint; q: bigint; keys: string[] } | undefined;
  if (member && hasEcdsa) {
    if (!ctx.primePool) throw new Refused('ECDSA key reshare needs a prime pool', 'PRIME_POOL_NOT_CONFIGURED');
    primes = await ctx.primePool.take();
    if (!primes) throw new Refused('prime pool empty: retry when it has refilled', 'PRIME_POOL_EMPTY');
  }
  const pool = ctx.primePool;
  const consumed = pool && primes ? pool.consumeOps(primes.keys) : [];
  const group = bytesToHex(ceremonyId);
  const common = { parties, self, secretKey: ctx.secretKey, deadline, group };
  const newSession = newParties.map((p) => parties.find((x) => x.peerId === p) as SessionParty);
  // a failed session ends the ceremony's others at once (they would wait for the deadline)
  const watch = <T>(run: Promise<SessionOutcome<T>>) =>
    run.then((o) => {
      if (o.status !== 'ok') ctx.runner.cancelGroup(group, 'another session of the ceremony failed');
      return o;
    });
  try {
    const roles = await ctx.runner.run<number[]>({
      ...common,
      sessionId: sessionId(ceremonyId, 'reshare.roles'),
      spec: reshareRolesProtocol(
        parties.map((p) => p.peerId),
        newParties,
        rec?.parties,
      ),
      label: 'reshare.roles',
    });
    if (roles.status !== 'ok') return { result: failure(ceremonyId, [roles], parties), ops: consumed };
    const oldIds = roles.output;
    const frostRoles = parties.map((p, j) => {
      const o = oldIds[j] as number;
      const n = newParties.indexOf(p.peerId);
      return { ...(o > 0 ? { oldIdentifier: BigInt(o) } : {}), ...(n >= 0 ? { newIdentifier: BigInt(n + 1) } : {}) };
    });
    const ecdsaRoles = parties.map((p, j) => {
      const o = oldIds[j] as number;
      const n = newParties.indexOf(p.peerId);
      return { ...(o > 0 ? { oldIndex: o - 1 } : {}), ...(n >= 0 ? { newIndex: n } : {}) };
    });
    const frostRuns = frostKeys.map((k, i) =>
      watch(
        ctx.runner.run<FrostReshareOutput>({
          ...common,
          sessionId: sessionId(ceremonyId, `frost.reshare.${k.suite}`),
          spec: reshareProtocol({
            suite: k.suite as SuiteName,
            ...(oldFrost[i] ? { keyShare: oldFrost[i] as KeyShare } : {}),
            parties: frostRoles,
            newThreshold: r.newThreshold,
            expectedPublicKey: hexToBytes(k.publicKey),
            expectedChainCode: hexToBytes(k.chainCode),
            context: r.context,
          }),
          label: `frost.reshare.${k.suite}`,
        }),
      ),
    );
    const ecdsaKey = r.keys.find((k) => k.suite === 'cggmp');
    const ecdsaRun = ecdsaKey
      ? watch(
          ctx.runner.run<EcdsaReshareOutput>({
            ...common,
            sessionId: sessionId(ceremonyId, 'cggmp.reshare'),
            spec: ecdsaReshareProtocol({
              ...(oldEcdsa ? { core: oldEcdsa } : {}),
              parties: ecdsaRoles,
              newN: newParties.length,
              newThreshold: r.newThreshold,
              expectedPublicKey: secp256k1Group.decodePoint(hexToBytes(ecdsaKey.publicKey), 'publicKey'),
              expectedChainCode: hexToBytes(ecdsaKey.chainCode),
              context: r.context,
            }),
            label: 'cggmp.reshare',
          }),
        )
      : undefined;
    const auxRun =
      member && primes && pool
        ? watch(
            ctx.runner.run<AuxInfo>({
              ...common,
              parties: newSession,
              self: newIndex,
              sessionId: sessionId(ceremonyId, 'reshare.cggmp.aux'),
              spec: auxInfoProtocol({ level: pool.level, primes: { p: primes.p, q: primes.q }, checkPrimality: false }),
              label: 'reshare.cggmp.aux',
            }),
          )
        : undefined;
    const [frostOuts, ecdsaOut, auxOut] = await Promise.all([Promise.all(frostRuns), ecdsaRun, auxRun]);
    const shared: SessionOutcome<unknown>[] = [...frostOuts, ...(ecdsaOut ? [ecdsaOut] : [])];
    // blame from the reshare sessions first (the whole session's order), then aux (the new set's)
    if (!shared.every((o) => o.status === 'ok')) return { result: failure(ceremonyId, shared, parties), ops: consumed };
    if (auxOut && auxOut.status !== 'ok') return { result: failure(ceremonyId, [auxOut], newSession), ops: consumed };
    const outs: SessionOutcome<unknown>[] = [...shared, ...(auxOut ? [auxOut] : [])];
    const publicKeys = r.keys.map((k) => ({
      algorithm: k.algorithm,
      publicKey: hexToBytes(k.publicKey),
      chainCode: hexToBytes(k.chainCode),
    }));
    // one pending reshare per key: this one replaces any older entry (which can then not be committed)
    const older = (await ctx.store.keys('pending', pendingPrefix(keyId))).map(
      (k): StoreOp => ({ type: 'del', sublevel: 'pending', key: k }),
    );
    const pendingOf = { keyId, reshareCeremonyId: group, newParties: [...newParties], baseEpoch: rec?.epoch ?? null };
    if (!member) {
      const ops = [...consumed, ...older, pendingMetaOp({ ...pendingOf, role: 'leave', at: new Date().toISOString() })];
      return {
        result: {
          ceremonyId,
          outcome: Outcome.OK,
          keyId,
          publicKeys,
          transcriptHash: combinedTranscript(ceremonyId, outs),
        },
        ops,
      };
    }
    // the new shares: test-signed among the new set before anything is kept
    const frostNew = frostOuts.map((o) => (o as { output: FrostReshareOutput }).output.keyShare as KeyShare);
    const ecdsaNew =
      ecdsaOut && auxOut
        ? validateEcdsaKeyShare({
            core: (ecdsaOut as { output: EcdsaReshareOutput }).output.core as CoreKeyShare,
            aux: (auxOut as { output: AuxInfo }).output,
          })
        : undefined;
    const testKeys: TestSignKey[] = r.keys.map((k): TestSignKey => {
      if (k.suite === 'cggmp')
        return { algorithm: k.algorithm, suite: 'cggmp', share: ecdsaNew as NonNullable<typeof ecdsaNew> };
      return { algorithm: k.algorithm, suite: k.suite, share: frostNew[frostKeys.indexOf(k)] as KeyShare };
    });
    const digest = testSignatureDigest('reshare', keyId, ceremonyId);
    const signed = await testSignatures(
      ctx,
      ceremonyId,
      deadline,
      newParties,
      r.newThreshold,
      newSession,
      testKeys,
      digest,
      'reshare.test',
    );
    if (!signed.signatures) return { result: testSignFailure(ceremonyId, signed, testKeys, newSession), ops: consumed };
    const revoked = await revokedApprovers(ctx.store);
    const next: KeyRecord = {
      keyId,
      threshold: r.newThreshold,
      parties: [...newParties],
      keys: r.keys,
      epoch: rec ? rec.epoch + 1 : (frostNew[0]?.epoch ?? 1),
      createdAt: rec?.createdAt ?? new Date().toISOString(),
      approverDevices: r.approverDevices.filter((d) => !isRevoked(d, revoked)),
    };
    const prefix = pendingPrefix(keyId, group);
    const ops: StoreOp[] = [
      ...consumed,
      ...older,
      ...frostNew.map(
        (s): StoreOp => ({ type: 'put', sublevel: 'pending', key: `${prefix}${s.suite}`, value: encodeKeyShare(s) }),
      ),
      ...(ecdsaNew
        ? [
            {
              type: 'put',
              sublevel: 'pending',
              key: `${prefix}cggmp`,
              value: enc.encode(JSON.stringify(keyShareToJson(ecdsaNew))),
            } as StoreOp,
          ]
        : []),
      pendingMetaOp({ ...pendingOf, role: 'member', record: next, at: new Date().toISOString() }),
    ];
    // "I hold this reshare's shares pending", under the identity key the peer id embeds
    const pendingAttestation = ed25519Sign(reshareAttestationMessage(keyId, ceremonyId), ctx.secretKey);
    return {
      result: {
        ceremonyId,
        outcome: Outcome.OK,
        keyId,
        publicKeys,
        signatures: signed.signatures,
        transcriptHash: combinedTranscript(ceremonyId, [...outs, ...signed.outs]),
        pendingAttestation,
      },
      ops,
    };
  } catch (e) {
    // the primes may have been seen by a session: never reused (deleted with the audit record)
    if (pool && primes) await ctx.store.batch(consumed).catch(() => undefined);
    throw e;
  }
}
