/**
 * Ceremonies a signer executes on the coordinator's request (DESIGN §4): master key creation,
 * signing, presigning, refresh, and the key lifecycle of issue #22 (reshare, its commit, the
 * recovery drill) — run the same way by a server signer (requests over libp2p) and a
 * phone (requests through the coordinator's relay). The coordinator sequences; the signer validates
 * the request itself (party set contains it, known key, threshold, deadline), runs the protocol
 * sessions through the {@link CeremonyRunner}, and persists results in ONE store batch only when
 * every session of the ceremony succeeded — on abort or deadline nothing of the ceremony is kept
 * but its audit record.
 *
 * This file is the entry ({@link runCeremony}) and the sign request's enforcement; one file per
 * ceremony kind: master-key.ts (FROST DKG per suite, CGGMP21 keygen + aux-info), sign.ts (FROST),
 * sign-ecdsa.ts (CGGMP21), presign.ts (the presignature pool), refresh.ts, reshare.ts, commit.ts
 * (RESHARE_COMMIT), drill.ts (DRILL, with test-sign.ts); what they share:
 * context.ts (context, refusal, results, audit records), keys.ts (key records and shares),
 * release-gate.ts (what is durable before a signature share leaves).
 */
import { bytesToHex } from '@custodian/crypto';
import { CeremonyKind, type CeremonyResult, MAX_DEADLINE_MS, Outcome, type StartCeremony } from '@custodian/wire';
import { type EnforcementVerdict, enforceTransferEvidence } from '../enforce/enforce.js';
import { EvidenceRefused } from '../enforce/refusals.js';
import { rollbackRefusal } from '../rollback.js';
import type { CeremonyStore, StoreOp } from '../storage.js';
import { commitReshare, forgetKey } from './commit.js';
import {
  blameSummary,
  type CeremonyContext,
  type CeremonyHooks,
  Refused,
  record,
  refusedOrAborted,
  toSessionParties,
} from './context.js';
import { drill } from './drill.js';
import { keyRecord, loadKeyRecord } from './keys.js';
import { masterKey } from './master-key.js';
import { presign } from './presign.js';
import { refresh } from './refresh.js';
import { ReleaseGate } from './release-gate.js';
import { reshare } from './reshare.js';
import { lockedBatch } from './revoke.js';
import { sign } from './sign.js';

/** Ceremony ids being run, per store (a second request with the same id is refused at once). */
const running = new WeakMap<CeremonyStore, Set<string>>();

/**
 * Execute a StartCeremony request. Never throws for bad requests or failed protocols: the result
 * says REFUSED, ABORTED (with blame) or DEADLINE_EXCEEDED. A key ceremony writes one store batch:
 * its outputs (only on success) together with its audit record. A signing ceremony writes its
 * pending record and ledger entry before its first share leaves ({@link ReleaseGate}, synced) and
 * its final record after, while the answer goes out (not synced and not awaited: the pending one
 * is durable; the store's close waits for it); one that fails before any share left writes only
 * the final record, synced, before answering.
 */
export async function runCeremony(
  ctx: CeremonyContext,
  start: StartCeremony,
  hooks: CeremonyHooks = {},
): Promise<CeremonyResult> {
  const ceremonyId = start.ceremonyId instanceof Uint8Array ? start.ceremonyId : new Uint8Array(0);
  const idHex = bytesToHex(ceremonyId);
  const log = ctx.log.child({ ceremony: idHex.slice(0, 16), kind: start.kind });
  let ids = running.get(ctx.store);
  if (!ids) running.set(ctx.store, (ids = new Set()));
  let gate: ReleaseGate | undefined;
  let claimed = false;
  try {
    if (ceremonyId.length < 16 || ceremonyId.length > 64) throw new Refused('ceremonyId: 16..64 bytes');
    if (ids.has(idHex)) throw new Refused('ceremony id already used');
    ids.add(idHex);
    claimed = true;
    // read while the request is prepared; awaited before anything is written
    const unused = ctx.store.get('ceremonies', idHex).then((v) => {
      if (v) throw new Refused('ceremony id already used');
    });
    unused.catch(() => undefined);
    // a commit sent again under the same id (its answer was lost) is answered again: commit.ts is idempotent
    // (only under the id of a commit of the same reshare of the same key: any other record refuses)
    if (start.kind === CeremonyKind.RESHARE_COMMIT) await sameCommit(ctx, idHex, start);
    else if (start.kind !== CeremonyKind.SIGN) await unused;
    const now = Date.now();
    const deadline = Number(start.deadlineUnixMs);
    if (!Number.isSafeInteger(deadline) || deadline <= now || deadline > now + MAX_DEADLINE_MS) {
      throw new Refused('deadline: must be in the future and at most 10 minutes away');
    }
    const parties = toSessionParties(start.parties.map((p) => p.peerId));
    const self = parties.findIndex((p) => p.peerId === ctx.selfPeerId);
    if (self < 0) throw new Refused('this signer is not in the party set');
    log.info({ parties: parties.length, threshold: start.threshold }, 'ceremony started');
    let result: CeremonyResult;
    let ops: StoreOp[];
    let verdict: EnforcementVerdict | undefined;
    let stored: (() => void) | undefined;
    let presignEpoch: number | undefined;
    switch (start.kind) {
      case CeremonyKind.MASTER_KEY:
        ({ result, ops } = await masterKey(ctx, start, ceremonyId, parties, self, deadline));
        break;
      case CeremonyKind.SIGN: {
        verdict = await enforce(ctx, start);
        try {
          const pending = record(ceremonyId, start, { ceremonyId, outcome: Outcome.UNSPECIFIED }, true);
          gate = new ReleaseGate(ctx.store, unused, [...(verdict?.ledgerOps ?? []), pending]);
          ({ result, ops } = await sign(ctx, start, ceremonyId, parties, self, deadline, gate, hooks));
          await unused; // a duplicate id that failed before its gate must not overwrite the old record
          const final = [...ops, record(ceremonyId, start, result)];
          if (gate.written && ops.length === 0) {
            // the pending record is durable: the outcome is written while the answer goes out
            // (a crash in between leaves the pending record, which says what was released)
            void ctx.store.batchLater(final, { sync: false }).catch((err: unknown) => {
              log.error({ err: err instanceof Error ? err.message : String(err) }, 'final ceremony record not written');
            });
          } else {
            await ctx.store.batch(final);
          }
        } finally {
          verdict?.release();
        }
        break;
      }
      case CeremonyKind.PRESIGN:
        ({ result, ops, stored, epoch: presignEpoch } = await presign(ctx, start, ceremonyId, parties, deadline));
        break;
      case CeremonyKind.REFRESH:
        // the key's presignatures are deleted with the new shares: none is taken from memory meanwhile
        ctx.prepared?.forgetKey(start.keyId ?? '');
        ({ result, ops } = await refresh(ctx, start, ceremonyId, parties, self, deadline));
        break;
      case CeremonyKind.RESHARE:
        ({ result, ops } = await reshare(ctx, start, ceremonyId, parties, self, deadline));
        break;
      case CeremonyKind.RESHARE_COMMIT:
        ({ result, ops } = await commitReshare(ctx, start, ceremonyId));
        break;
      case CeremonyKind.DRILL:
        ({ result, ops } = await drill(ctx, start, ceremonyId, parties, deadline));
        break;
      default:
        throw new Refused(`kind: unsupported ceremony kind ${start.kind}`);
    }
    // key ceremonies' records lose devices revoked meanwhile (revoke.ts)
    if (start.kind !== CeremonyKind.SIGN) {
      const keyId = start.keyId ?? '';
      await lockedBatch(ctx.store, async () => {
        // presignatures made with shares a commit or refresh replaced meanwhile are never stored
        if (presignEpoch !== undefined && (await loadKeyRecord(ctx.store, keyId))?.epoch !== presignEpoch) {
          result = { ceremonyId, outcome: Outcome.ABORTED, keyId, error: 'the key changed during presigning' };
          ops = [];
          stored = undefined;
        }
        // a key whose shares change loses every presignature held at the moment of writing
        if (
          result.outcome === Outcome.OK &&
          (start.kind === CeremonyKind.RESHARE_COMMIT || start.kind === CeremonyKind.REFRESH)
        ) {
          const listed = new Set(ops.filter((o) => o.sublevel === 'presignatures').map((o) => o.key));
          for (const k of await ctx.store.keys('presignatures', `${keyId}/`))
            if (!listed.has(k)) ops.push({ type: 'del', sublevel: 'presignatures', key: k });
        }
        return [...ops, record(ceremonyId, start, result)];
      });
    }
    stored?.();
    if (start.kind === CeremonyKind.RESHARE_COMMIT) forgetKey(ctx, start.keyId ?? '');
    if (start.kind === CeremonyKind.REFRESH && ctx.shareCache) {
      for (const k of [...ctx.shareCache.keys()]) if (k.startsWith(`${start.keyId}/`)) ctx.shareCache.delete(k);
    }
    if (start.kind === CeremonyKind.REFRESH) {
      ctx.prepared?.forgetKey(start.keyId ?? '');
      ctx.recordCache?.delete(start.keyId ?? '');
    }
    await ctx.nonceLedger.flush();
    // only key creation, refresh and reshare consume safe primes (a refill scans the pool)
    if (
      ctx.primePool &&
      (start.kind === CeremonyKind.MASTER_KEY ||
        start.kind === CeremonyKind.REFRESH ||
        start.kind === CeremonyKind.RESHARE)
    )
      ctx.primePool.fill(ctx.primePoolTarget ?? 0);
    log.info({ outcome: result.outcome, blame: blameSummary(result.blame) }, 'ceremony finished');
    return result;
  } catch (e) {
    if (!(e instanceof Refused)) {
      log.error({ err: e instanceof Error ? e.message : String(e) }, 'ceremony failed');
    } else {
      log.warn({ reason: e.message }, 'ceremony refused');
    }
    const result = refusedOrAborted(ceremonyId, e);
    // a pending record (shares may have left) gets its outcome
    await gate?.settled();
    if (gate?.written) {
      await ctx.store.batch([record(ceremonyId, start, result)], { sync: false }).catch((err: unknown) => {
        log.error({ err: err instanceof Error ? err.message : String(err) }, 'final ceremony record not written');
      });
    }
    return result;
  } finally {
    if (claimed) ids.delete(idHex);
  }
}

/**
 * A RESHARE_COMMIT sent under an id already used (review L8): allowed only when the id's record is a
 * commit of the same reshare of the same key (its answer was lost; commit.ts is idempotent).
 * @throws Refused REQUEST_INVALID ("ceremony id already used") for any other record
 */
async function sameCommit(ctx: CeremonyContext, idHex: string, start: StartCeremony): Promise<void> {
  const v = await ctx.store.get('ceremonies', idHex);
  if (!v) return;
  let prior: { kind?: unknown; keyId?: unknown; reshareCeremonyId?: unknown } | undefined;
  try {
    prior = JSON.parse(new TextDecoder().decode(v)) as typeof prior;
  } catch {
    prior = undefined;
  }
  const rid = start.reshareCeremonyId instanceof Uint8Array ? bytesToHex(start.reshareCeremonyId) : '';
  if (
    prior?.kind !== CeremonyKind.RESHARE_COMMIT ||
    prior.keyId !== (start.keyId ?? '') ||
    rid === '' ||
    prior.reshareCeremonyId !== rid
  )
    throw new Refused('ceremony id already used');
}

/**
 * Enforcement of a sign request (enforce/enforce.ts), then the rollback rule (rollback.ts
 * `rollbackRefusal`, code `STORE_ROLLED_BACK`); a refusal becomes a REFUSED result whose `refusal`
 * is the code and whose `error` text starts with it (`DIGEST_MISMATCH: …`). Without `ctx.enforcement` the request is
 * refused (`ENFORCEMENT_NOT_CONFIGURED`) unless `ctx.allowUnenforcedSigning` opts out (then
 * undefined: nothing is checked nor written to the ledger).
 */
async function enforce(ctx: CeremonyContext, start: StartCeremony): Promise<EnforcementVerdict | undefined> {
  if (!ctx.enforcement) {
    if (ctx.allowUnenforcedSigning === true) return undefined;
    throw new Refused(
      'ENFORCEMENT_NOT_CONFIGURED: this signer trusts no Admin device (trustedAdminDevices) and does not allow unenforced signing',
      'ENFORCEMENT_NOT_CONFIGURED',
    );
  }
  const req = start.sign;
  if (!req) throw new Refused('sign: missing sign request');
  const rec = await keyRecord(ctx, req.keyId);
  if (!rec) throw new Refused(`unknown key ${req.keyId}`, 'KEY_UNKNOWN');
  const approverKeys = new Map((rec.approverDevices ?? []).map((d) => [d.deviceId, d.publicKey]));
  let verdict: EnforcementVerdict;
  const now = new Date(); // one clock reading for both rules
  try {
    verdict = await enforceTransferEvidence(
      ctx.store,
      req,
      {
        trustedAdminKeys: ctx.enforcement.trustedAdminKeys,
        approverKeys,
        chains: ctx.enforcement.chains ?? {},
        keys: rec.keys,
      },
      now,
    );
  } catch (e) {
    if (e instanceof EvidenceRefused) throw new Refused(e.message, e.code);
    throw e;
  }
  // after a detected restore of the store: nothing its rolled-back ledger cannot vouch for
  if (ctx.rollback) {
    let dailyLimit: string | null | undefined;
    try {
      dailyLimit = (JSON.parse(req.evidence?.policyJson ?? '') as { document?: { daily_limit?: string | null } })
        .document?.daily_limit;
    } catch {
      dailyLimit = undefined; // enforce accepted the request: a policy it parsed is there
    }
    const refusal = rollbackRefusal(ctx.rollback, verdict.intent, dailyLimit, now);
    if (refusal) {
      verdict.release();
      throw new Refused(refusal, 'STORE_ROLLED_BACK');
    }
  }
  return verdict;
}
