/**
 * Policy signature on the phone (DESIGN §1, docs/transfers.md): an Admin's enrolled device signs a
 * policy version, the way the phone app does it. The phone fetches the version from the admin API
 * (`GET /admin/v1/profiles/{profile_id}/policies/{policy_id}`, Admin session bearer token), shows
 * what it is about to sign (scope, whitelist, limits, approval quorum), opens its vault with the
 * PIN, signs `policyDigest(document)` with its P-256 device key (`signPolicy` of `@custodian/wire`:
 * 64-byte r‖s, low-S, no prehash) as its enrolled device id, and sends `{ device_id, signature }` to
 * `POST …/policies/{policy_id}/versions/{version}/signature`. The device key never leaves the vault
 * and is wiped from memory once the signature is made.
 *
 * The phone signs the document it displays, never a digest it is given: the coordinator's `digest`
 * field is only compared with the recomputed `policyDigest(document)` (a difference stops here).
 */
import { isPolicyTombstone, type PolicyDocument, policyDigest, type SignedPolicy, signPolicy } from '@custodian/wire';
import { bytesToHex } from '@noble/curves/utils.js';
import { CoordinatorRequestError, MobileError } from './errors.js';
import { readVaultInfo, unlockVault } from './vault.js';

/** One version of a policy as the admin API returns it (the fields the phone reads). */
export interface PolicyVersionInfo {
  version: number;
  status: 'PENDING_SIGNATURE' | 'ACTIVE' | 'SUPERSEDED' | 'DELETED';
  document: PolicyDocument;
  /** Hex `policyDigest(document)` as the coordinator computed it. */
  digest: string;
}

/** Options of {@link signPolicyWithDevice}. */
export interface SignPolicyOptions {
  /** Data folder of the (enrolled) device: `<dataDir>/device.json`. */
  dataDir: string;
  /** Coordinator base URL, e.g. `http://127.0.0.1:8080` (default: the URL the device enrolled with). */
  url?: string;
  profileId: string;
  policyId: string;
  /** Version to sign (default: the one awaiting a signature, `PENDING_SIGNATURE`). */
  version?: number;
  /** Admin session token (bearer of the admin API; the user must have role ADMIN). SECRET. */
  adminToken: string;
  /**
   * The PIN that opens the vault (SECRET), or a function asked for it after {@link onSummary}
   * returned (interactive use: the person reads the summary, then enters the PIN).
   */
  pin: string | (() => Promise<string>);
  /**
   * Shown before the vault is opened: the summary text ({@link describePolicyVersion}) and the
   * version. Return false to cancel (nothing is signed; {@link PolicySignCancelled} is thrown).
   */
  onSummary?(summary: string, version: PolicyVersionInfo): boolean | undefined | Promise<boolean | undefined>;
  fetch?: typeof fetch;
}

/** Result of {@link signPolicyWithDevice}. */
export interface SignPolicyResult {
  /** The signed version number. */
  version: number;
  /** The signed policy (document, device id, device public key, signature). */
  signed: SignedPolicy;
  /** The coordinator's answer: the policy with its versions (the signed one ACTIVE). */
  // biome-ignore lint/suspicious/noExplicitAny: admin API response JSON, printed as received
  policy: any;
}

/** An admin API request failed (`status`, problem+json `code`). */
export class AdminApiError extends CoordinatorRequestError {}

/** The person cancelled at the summary: nothing was signed. */
export class PolicySignCancelled extends MobileError {
  constructor() {
    super('POLICY_SIGN_CANCELLED', 'cancelled: the policy version was not signed');
  }
}

const E = encodeURIComponent;

function amount(v: string | null): string {
  return v === null ? 'no limit' : `${v} base units`;
}

/**
 * Human-readable summary of a policy version: what the Admin approves by signing it. Amounts are in
 * base units of the scoped asset (the document carries no decimals).
 */
export function describePolicyVersion(v: PolicyVersionInfo): string {
  const d = v.document;
  const s = d.scope;
  const wl =
    d.whitelist.length === 0
      ? '  (empty: no destination is permitted)\n'
      : d.whitelist.map((a) => `  - ${a}\n`).join('');
  if (isPolicyTombstone(d)) {
    // a deletion: what it ends, never mistaken for a change
    return (
      `DELETE policy ${d.policy_id}: version ${d.version} (${v.status}) of profile ${d.profile_id}, created ${d.created_at}\n` +
      'Signing this ends the policy: no version of it authorises any transfer any more, at the coordinator\n' +
      'and at every signer that learns it. Transfers it covered then fall to another covering policy, or none.\n' +
      `Scope it governed: wallets ${s.wallet_ids === null ? 'any' : s.wallet_ids.join(', ') || '(none)'}, ` +
      `blockchain ${s.blockchain ?? 'any'}, asset ${s.asset_id ?? 'any'}\n` +
      `Digest: ${bytesToHex(policyDigest(d))}\n`
    );
  }
  return (
    `Policy ${d.policy_id}, version ${d.version} (${v.status}) of profile ${d.profile_id}, created ${d.created_at}\n` +
    'Scope:\n' +
    `  wallets    ${s.wallet_ids === null ? 'any' : s.wallet_ids.join(', ') || '(none)'}\n` +
    `  blockchain ${s.blockchain ?? 'any'}\n` +
    `  asset      ${s.asset_id ?? 'any'}\n` +
    `Whitelist (${d.whitelist.length} address${d.whitelist.length === 1 ? '' : 'es'}):\n${wl}` +
    'Limits:\n' +
    `  per transaction ${amount(d.per_transaction_limit)}\n` +
    `  per wallet and asset per UTC day ${amount(d.daily_limit)}\n` +
    `Approvals: ${d.approvals.quorum} device approval${d.approvals.quorum === 1 ? '' : 's'} above ${d.approvals.above_amount} base units, else 1\n` +
    `Digest: ${bytesToHex(policyDigest(d))}\n`
  );
}

async function call(
  f: typeof fetch,
  method: 'GET' | 'POST',
  url: string,
  token: string,
  body?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: admin API response JSON
): Promise<any> {
  const res = await f(url, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) {
    const code = typeof json.code === 'string' ? json.code : undefined;
    throw new AdminApiError(
      `${method} ${new URL(url).pathname} failed (${res.status}${code ? ` ${code}` : ''}): ${String(json.detail ?? json.title ?? 'error')}`,
      res.status,
      code,
    );
  }
  return json;
}

/**
 * Sign a policy version as this device (see the module comment).
 * @throws Error when the device is not enrolled, no version awaits a signature, the chosen version
 *   is not PENDING_SIGNATURE, or the coordinator's document does not match what was asked
 *   (other policy/profile/version, digest differing from `policyDigest(document)`);
 *   AdminApiError for a refused request (401 SESSION_REQUIRED, 403 ROLE_FORBIDDEN, 404
 *   POLICY_NOT_FOUND, 409 CONFLICT, 400 VALIDATION_FAILED — e.g. device not APPROVED or not trusted);
 *   PolicySignCancelled when `onSummary` returned false; WrongPinError for a wrong PIN
 */
export async function signPolicyWithDevice(o: SignPolicyOptions): Promise<SignPolicyResult> {
  if (typeof o.adminToken !== 'string' || o.adminToken === '') throw new Error('an Admin session token is required');
  const info = await readVaultInfo(o.dataDir);
  const deviceId = info.deviceId;
  if (!deviceId) throw new Error('this device has no enrollment: run `custodian mobile enroll` first');
  const base = new URL(o.url ?? info.url).toString().replace(/\/$/, '');
  const f = o.fetch ?? fetch;
  const path = `${base}/admin/v1/profiles/${E(o.profileId)}/policies/${E(o.policyId)}`;
  const policy = await call(f, 'GET', path, o.adminToken);
  const versions = (Array.isArray(policy.versions) ? policy.versions : []) as PolicyVersionInfo[];
  const v =
    o.version !== undefined
      ? versions.find((x) => x.version === o.version)
      : versions.find((x) => x.status === 'PENDING_SIGNATURE');
  if (v === undefined) {
    throw new Error(
      o.version !== undefined ? `policy ${o.policyId} has no version ${o.version}` : 'no version awaits a signature',
    );
  }
  if (v.status !== 'PENDING_SIGNATURE')
    throw new Error(`version ${v.version} is ${v.status}, not awaiting a signature`);
  const d = v.document;
  if (
    typeof d !== 'object' ||
    d === null ||
    d.policy_id?.toLowerCase() !== o.policyId.toLowerCase() ||
    d.profile_id?.toLowerCase() !== o.profileId.toLowerCase() ||
    d.version !== v.version
  ) {
    throw new Error('the coordinator returned a document of another policy, profile or version: not signed');
  }
  let digest: string;
  try {
    digest = bytesToHex(policyDigest(d));
  } catch {
    throw new Error('the policy document has fields of the wrong type: not signed');
  }
  if (typeof v.digest !== 'string' || v.digest.toLowerCase() !== digest) {
    throw new Error("the coordinator's digest is not the digest of the document shown: not signed");
  }
  const go = await o.onSummary?.(describePolicyVersion(v), v);
  if (go === false) throw new PolicySignCancelled();
  const pin = typeof o.pin === 'string' ? o.pin : await o.pin();
  const vault = await unlockVault(o.dataDir, pin);
  let signed: SignedPolicy;
  try {
    signed = signPolicy(d, deviceId, vault.deviceSecretKey);
  } finally {
    vault.wipe();
  }
  const answer = await call(f, 'POST', `${path}/versions/${v.version}/signature`, o.adminToken, {
    device_id: deviceId,
    signature: signed.signature,
  });
  return { version: v.version, signed, policy: answer };
}
