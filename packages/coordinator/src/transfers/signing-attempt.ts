/**
 * One signing attempt of the pipeline (PENDING_SIGNATURE, and a fee bump's replacement): the
 * signing set (avoiding parties known to be unavailable), the evidence, the gateway call, and the
 * outcome classified as signed / failed (definitive: a refusal or an abort naming culprits) /
 * retry (parties missing, named) / abandoned. Also the retry backoff and the chain signatures.
 */
import type { ChainSignature, UnsignedTransfer } from '@custodian/chains';
import { Backoff } from '@custodian/signer-client';
import type { TransferIntent } from '@custodian/wire';
import type { SignDispute } from '../signing/blame.js';
import type { GatewaySignResult, SignParty } from '../signing/gateway.js';
import { hex, type StepContext, unhex } from './pipeline-context.js';
import type { TransferRow } from './view.js';

const partyKey = (p: SignParty) => `${p.kind}:${p.id.toLowerCase()}`;

/**
 * Parties of a signing set: `threshold` parties of the key, in key order — server signers before
 * devices, and parties not in `unavailable` (keys `kind:id`, id lower case) before those in it, so
 * a set that avoids unavailable parties is chosen whenever the key has enough others. Without
 * `unavailable`: the first `threshold` server signers, then devices.
 */
export function signingParties(parties: unknown, threshold: number, unavailable?: ReadonlySet<string>): SignParty[] {
  const all = (Array.isArray(parties) ? parties : []) as { kind: 'server' | 'device'; id: string }[];
  const down = (p: { kind: string; id: string }) => unavailable?.has(`${p.kind}:${p.id.toLowerCase()}`) === true;
  const rank = (p: { kind: string; id: string }) => (down(p) ? 2 : 0) + (p.kind === 'server' ? 0 : 1);
  const preferred = all.map((p, i) => ({ p, i })).sort((a, b) => rank(a.p) - rank(b.p) || a.i - b.i);
  const chosen = new Set(preferred.slice(0, threshold).map(({ p }) => `${p.kind}:${p.id}`));
  return all.filter((p) => chosen.has(`${p.kind}:${p.id}`)).map((p) => ({ kind: p.kind, id: p.id }));
}

/**
 * The key of each digest (`GatewaySignRequest.digestKeys`) when they are not all the intent's key
 * (a UTXO transaction spending several addresses): scheme `ecdsa` → SECP256K1_ECDSA, `schnorr` →
 * SECP256K1_TAPROOT, with the digest's key path (indices). Undefined when every digest is signed
 * with the intent's algorithm and path (the request's own `algorithm` / `derivationPath` apply).
 */
export function perDigestKeys(
  unsigned: Pick<UnsignedTransfer, 'digests'>,
  algorithm: TransferIntent['key_algorithm'],
  path: readonly number[],
): { algorithm: 'SECP256K1_ECDSA' | 'SECP256K1_TAPROOT'; derivationPath: number[] }[] | undefined {
  const keys = unsigned.digests.map((d) => ({
    algorithm: d.scheme === 'schnorr' ? ('SECP256K1_TAPROOT' as const) : ('SECP256K1_ECDSA' as const),
    derivationPath: [...d.key.path],
  }));
  const own = path.join('/');
  if (keys.every((k) => k.algorithm === algorithm && k.derivationPath.join('/') === own)) return undefined;
  return keys;
}

/** A signing attempt, classified. */
export type SignOutcome =
  | { kind: 'signed'; res: Extract<GatewaySignResult, { ok: true }> }
  /** Definitive: a refusal or an identifiable abort. */
  | { kind: 'failed'; res: Extract<GatewaySignResult, { reason: 'REFUSED' | 'ABORTED' }> }
  /** Worth another attempt; `missing` names what was missing. */
  | { kind: 'retry'; missing: string }
  /** The step's signal fired (lease lost, stopping): record nothing. */
  | { kind: 'abandoned' };

/**
 * Ask the signers for the signatures of `unsigned`, with the evidence of approval round `round`:
 * `intent` is the intent that round's approvals are over (the transfer's, or a fee bump round's
 * raised-cap intent). The signing set avoids parties known to be unavailable when the key has
 * enough others; a device known offline is not invited (the attempt is a retry naming it).
 */
export async function attemptSignature(
  x: StepContext,
  t: TransferRow,
  unsigned: UnsignedTransfer,
  round: number,
  intent: TransferIntent,
  signal: AbortSignal,
): Promise<SignOutcome> {
  // a replica without signing services: retried later without a state change (a replica with them takes it)
  if (!x.gateway) throw new Error('SIGNERS_UNAVAILABLE: no signer gateway configured');
  const gateway = x.gateway;
  const mk = (
    await x.db.query<{
      parties: unknown;
      threshold: number;
      secp256k1_public_key: string;
      secp256k1_chain_code: string;
    }>(
      'SELECT parties, threshold, secp256k1_public_key, secp256k1_chain_code FROM master_keys WHERE master_key_id = $1',
      [t.master_key_id],
    )
  )[0];
  if (mk === undefined) throw new Error('master key not found');
  const all = (Array.isArray(mk.parties) ? mk.parties : []) as SignParty[];
  const now = Date.now();
  const known = new Map<string, 'up' | 'down' | undefined>();
  for (const p of all) known.set(partyKey(p), await gateway.availability?.(p).catch(() => undefined));
  // a party a recent ceremony found unavailable is avoided even while its connection is up: a
  // hung or hostile signer keeps its connection open and answers nothing
  const unavailable = new Set(
    all.map(partyKey).filter((k) => known.get(k) === 'down' || (x.unavailable.get(k) ?? 0) > now),
  );
  const parties = signingParties(mk.parties, mk.threshold, unavailable);
  const offline = parties.filter((p) => p.kind === 'device' && known.get(partyKey(p)) === 'down');
  if (offline.length > 0)
    return {
      kind: 'retry',
      missing: await describeMissing(
        x,
        offline.map((party) => ({ party, error: 'offline' })),
      ),
    };
  const [policy, approvals] = await Promise.all([
    x.service.policyOf(x.db, t),
    x.service.approvalsOf(x.db, t.transfer_id, round),
  ]);
  const digestKeys = perDigestKeys(unsigned, t.intent.key_algorithm, t.intent.derivation_path);
  const res = await gateway.sign({
    keyId: t.intent.key_id,
    algorithm: t.intent.key_algorithm,
    parties,
    derivationPath: [...t.intent.derivation_path],
    digests: unsigned.digests.map((d) => d.digest),
    ...(digestKeys ? { digestKeys } : {}),
    evidence: { intent, policy, approvals, chainContext: JSON.stringify(unsigned.context) },
    deadline: new Date(Date.now() + x.opts.signDeadlineMs),
    signal,
    // ECDSA: the gateway combines the signers' shares itself and checks them under this key
    ...(t.intent.key_algorithm === 'SECP256K1_ECDSA' &&
    /^[0-9a-f]{66}$/i.test(mk.secp256k1_public_key) &&
    /^[0-9a-f]{64}$/i.test(mk.secp256k1_chain_code)
      ? { ecdsaKey: { publicKey: unhex(mk.secp256k1_public_key), chainCode: unhex(mk.secp256k1_chain_code) } }
      : {}),
  });
  if (res.ok) {
    for (const p of parties) x.unavailable.delete(partyKey(p));
    x.opts.log('info', 'transfer signed', {
      transfer_id: t.transfer_id,
      // the ECDSA fast path (the gateway combined the signers' shares) or the signers' own results
      combined_by: res.combinedByCoordinator ? 'coordinator' : 'signers',
      pooled_presignature: res.presignatureId !== undefined,
    });
    return { kind: 'signed', res };
  }
  if (res.reason === 'REFUSED' || (res.reason === 'ABORTED' && res.culprits.length > 0)) return { kind: 'failed', res };
  if (signal.aborted) return { kind: 'abandoned' };
  // worth another attempt: remember who was missing, so the next set avoids them if it can —
  // counted from now (the ceremony may have taken its whole deadline), past the next retry
  const until = Date.now() + 2 * Math.max(x.opts.retryMaxMs, x.opts.pollMs);
  if (res.reason === 'UNAVAILABLE') for (const u of res.unavailable) x.unavailable.set(partyKey(u.party), until);
  // a party whose abort (no blame) ended the ceremony: left out of the next set when possible
  if (res.reason === 'ABORTED' && res.abortedBy) x.unavailable.set(partyKey(res.abortedBy), until);
  // an unverified blame (a dispute: nobody is proven to have misbehaved, the accuser or the party
  // it names may be the cheater): the next set leaves out BOTH when the key still has a signing set
  // without all of them, else NEITHER (leaving out one would let a false accuser remove an honest
  // party, or a cheater keep its seat by making its victim look like the accuser)
  if (res.reason === 'ABORTED' && res.disputes)
    for (const k of leftOutForDisputes(res.disputes, all.length, mk.threshold)) x.unavailable.set(k, until);
  const missing =
    res.reason === 'UNAVAILABLE'
      ? res.unavailable.length > 0
        ? await describeMissing(x, res.unavailable)
        : res.message
      : res.reason === 'DEADLINE_EXCEEDED'
        ? `no signature within the ceremony deadline (signing set: ${(await describeParties(x, parties)).join(', ')})`
        : `ceremony aborted without a culprit: ${res.message}`;
  x.opts.log('warn', 'transfer signing will be retried', { transfer_id: t.transfer_id, err: missing });
  return { kind: 'retry', missing };
}

/**
 * The parties (keys `kind:id`, id lower case) the next signing set leaves out after `disputes`
 * (unverified blames of the last attempt): every accuser and every claimed culprit when the key's
 * `partyCount` parties still leave `threshold` without them; else none (empty set). Never only one
 * side: a false accuser would remove an honest party, a cheater would keep its seat by making its
 * victim look like the accuser.
 */
export function leftOutForDisputes(
  disputes: readonly SignDispute[],
  partyCount: number,
  threshold: number,
): Set<string> {
  const out = new Set<string>();
  for (const d of disputes) {
    out.add(partyKey(d.accuser));
    if (d.claimed) out.add(partyKey(d.claimed));
  }
  return partyCount - out.size >= threshold ? out : new Set();
}

/** `server <name>` (its id when the name is not known) / `device <id>` for each party. */
export async function describeParties(x: StepContext, parties: readonly SignParty[]): Promise<string[]> {
  const ids = parties.filter((p) => p.kind === 'server').map((p) => p.id);
  const names = new Map<string, string>();
  if (ids.length > 0) {
    const rows = await x.db
      .query<{ signer_id: string; name: string }>(
        'SELECT signer_id::text AS signer_id, name FROM server_signers WHERE signer_id::text = ANY($1::text[])',
        [ids.map((i) => i.toLowerCase())],
      )
      .catch(() => []);
    for (const r of rows) names.set(r.signer_id.toLowerCase(), r.name);
  }
  return parties.map((p) => `${p.kind} ${p.kind === 'server' ? (names.get(p.id.toLowerCase()) ?? p.id) : p.id}`);
}

/** `server signer-2 unreachable (<error>); device d-… offline` */
export async function describeMissing(
  x: StepContext,
  list: readonly { party: SignParty; error: string }[],
): Promise<string> {
  const names = await describeParties(
    x,
    list.map((u) => u.party),
  );
  return list
    .map((u, i) => {
      const what = u.party.kind === 'server' ? 'unreachable' : 'offline';
      const why = u.error && u.error !== what ? ` (${u.error.slice(0, 200)})` : '';
      return `${names[i]} ${what}${why}`;
    })
    .join('; ');
}

/** Retry delay of a transfer waiting for signers (capped, jittered), within what is left of its window. */
export function retryDelay(x: StepContext, key: string, windowEnd: number): number {
  let b = x.backoffs.get(key);
  if (b === undefined) {
    b = new Backoff({
      initialMs: x.opts.retryInitialMs,
      maxMs: Math.max(x.opts.retryInitialMs, x.opts.retryMaxMs),
    });
    x.backoffs.set(key, b);
  }
  const { delayMs } = b.next();
  return Math.max(x.opts.pollMs, Math.min(delayMs, windowEnd - x.clock().getTime()));
}

export function chainSignatures(
  unsigned: UnsignedTransfer,
  res: Extract<GatewaySignResult, { ok: true }>,
): ChainSignature[] {
  return res.signatures.map((s, i): ChainSignature => {
    if (unsigned.digests[i]?.scheme === 'schnorr') return { scheme: 'schnorr', signature: s.signature };
    return {
      scheme: 'ecdsa',
      r: BigInt(`0x${hex(s.signature.subarray(0, 32))}`),
      s: BigInt(`0x${hex(s.signature.subarray(32, 64))}`),
      recovery: s.recovery ?? 0,
    };
  });
}
