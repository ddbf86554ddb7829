/**
 * Learned policy versions (issue #26 item 3). The coordinator pushes every policy version as it
 * becomes ACTIVE, every tombstone as the deletion takes effect, and all of them when a signer
 * (re)connects (control.proto `PolicySync`, {@link learnSignedPolicies}). The signer checks each
 * against its OWN pinned Admin device keys (a push that does not verify is refused, logged and
 * never stored), keeps the highest version per policy (never lowering it; a tombstone is final)
 * and checks it at each sign request. So a version that was activated but never used to sign, or
 * a deletion, still ends the older versions at this signer — as far as the push reached it: a
 * coordinator compromised BEFORE an activation can withhold that push (the signer then knows only
 * what it signed under).
 */
import { bytesToHex } from '@custodian/crypto';
import {
  isPolicyTombstone,
  type PolicyDocument,
  type PolicySyncItemWire,
  type PolicySyncOutcome,
  policyDigest,
  policySignedByTrustedAdmin,
  type SignedPolicy,
} from '@custodian/wire';
import type { CeremonyStore } from '../storage.js';
import { serialised } from './ledger.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * The highest Admin-signed version of a policy a signer learned from the coordinator's pushes
 * (JSON in sublevel `ledger`, key `policy-known/<policy_id>`).
 */
export interface LearnedPolicy {
  /** The version number (a positive safe integer). */
  readonly version: number;
  /** True when that version is the policy's signed tombstone (the policy is deleted). */
  readonly deleted: boolean;
  /** Hex `policyDigest` of that version's document (which exact version was learned). */
  readonly digest: string;
  /** When this signer stored it (ISO 8601, signer clock). */
  readonly learned_at: string;
}

const learnedKey = (policyId: string) => `policy-known/${policyId}`;

/** What this signer learned of a policy (see {@link LearnedPolicy}), if anything. */
export async function learnedPolicy(store: CeremonyStore, policyId: string): Promise<LearnedPolicy | undefined> {
  const v = await store.get('ledger', learnedKey(policyId));
  return v ? (JSON.parse(dec.decode(v)) as LearnedPolicy) : undefined;
}

const POLICY_ID = /^[0-9a-zA-Z-]{1,64}$/;

/**
 * Learn pushed policy versions (control.proto `PolicySync`, issue #26 item 3): each JSON
 * `SignedPolicy` must be signed by one of `trustedAdminKeys` over its `policyDigest`
 * (`policySignedByTrustedAdmin`, else `POLICY_SIGNATURE_VERIFICATION_FAILED`, nothing stored);
 * then, when its version is above the one held for its policy (or it is the tombstone of the held
 * version), it becomes the held one (`STORED`), else nothing changes (`KNOWN`). A held tombstone is
 * final: no later push replaces it. Every stored item is written in ONE batch, serialised with the
 * sign checks of {@link enforceTransferEvidence} on the same store (a check sees all of a push or
 * none of it).
 * @param store the signer's store (sublevel `ledger`, keys `policy-known/<policy_id>`)
 * @param signedJson JSON texts of `SignedPolicy` (evidence.ts), at most a few hundred per call
 * @param trustedAdminKeys the signer's pinned Admin device keys (compressed P-256 hex); empty: every
 *   item is `ENFORCEMENT_NOT_CONFIGURED`
 * @param now the signer's clock (`learned_at`)
 * @returns one item per input, in order (policy id and version as read; `heldVersion` 0 when none)
 */
export async function learnSignedPolicies(
  store: CeremonyStore,
  signedJson: readonly string[],
  trustedAdminKeys: readonly string[],
  now: Date = new Date(),
): Promise<PolicySyncItemWire[]> {
  return serialised(store, () => learnLocked(store, signedJson, trustedAdminKeys, now));
}

async function learnLocked(
  store: CeremonyStore,
  signedJson: readonly string[],
  trustedAdminKeys: readonly string[],
  now: Date,
): Promise<PolicySyncItemWire[]> {
  const held = new Map<string, LearnedPolicy | undefined>();
  const heldOf = async (id: string) => {
    if (!held.has(id)) held.set(id, await learnedPolicy(store, id));
    return held.get(id);
  };
  const items: PolicySyncItemWire[] = [];
  const changed = new Set<string>();
  for (const text of signedJson) {
    let signed: SignedPolicy | undefined;
    try {
      signed = JSON.parse(text) as SignedPolicy;
    } catch {
      signed = undefined;
    }
    const doc = signed?.document as Partial<PolicyDocument> | undefined;
    const policyId = typeof doc?.policy_id === 'string' && POLICY_ID.test(doc.policy_id) ? doc.policy_id : '';
    const version =
      typeof doc?.version === 'number' && Number.isSafeInteger(doc.version) && doc.version >= 1 && doc.version < 2 ** 32
        ? doc.version
        : 0;
    const item = (outcome: PolicySyncOutcome, h: LearnedPolicy | undefined): PolicySyncItemWire => ({
      policyId,
      version,
      outcome,
      heldVersion: h?.version ?? 0,
      heldDeleted: h?.deleted ?? false,
    });
    if (policyId === '' || version === 0 || typeof doc !== 'object') {
      items.push(item('MALFORMED', undefined));
      continue;
    }
    if (trustedAdminKeys.length === 0) {
      items.push(item('ENFORCEMENT_NOT_CONFIGURED', await heldOf(policyId)));
      continue;
    }
    if (!policySignedByTrustedAdmin(signed as SignedPolicy, trustedAdminKeys)) {
      items.push(item('POLICY_SIGNATURE_VERIFICATION_FAILED', await heldOf(policyId)));
      continue;
    }
    const sp = signed as SignedPolicy;
    const tombstone = isPolicyTombstone(sp.document);
    const h = await heldOf(policyId);
    // higher versions replace the held one; at the same version only a tombstone adds anything
    const newer = h === undefined || (!h.deleted && (version > h.version || (version === h.version && tombstone)));
    if (!newer) {
      items.push(item('KNOWN', h));
      continue;
    }
    const next: LearnedPolicy = {
      version,
      deleted: tombstone,
      digest: bytesToHex(policyDigest(sp.document)),
      learned_at: now.toISOString(),
    };
    held.set(policyId, next);
    changed.add(policyId);
    items.push(item('STORED', next));
  }
  if (changed.size > 0) {
    await store.batch(
      [...changed].map((id) => ({
        type: 'put' as const,
        sublevel: 'ledger' as const,
        key: learnedKey(id),
        value: enc.encode(JSON.stringify(held.get(id))),
      })),
    );
  }
  return items;
}
