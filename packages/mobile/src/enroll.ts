/**
 * Enrollment (seed §1 item 3): create the device vault and submit the enrollment request
 * `POST /devices/v1/enrollments` with the P-256 device public key and the MPC peer id, proven by
 * the MPC identity key's signature over `deviceEnrollmentDigest` (@custodian/wire): the coordinator
 * pins that peer id to the device. The administrator compares the fingerprint printed here with the
 * one the admin API shows before approving, and binds the device to its user.
 */
import { deviceFingerprint, signEnrollmentProof } from '@custodian/wire';
import { hexToBytes } from '@noble/curves/utils.js';
import { CoordinatorRequestError } from './errors.js';
import {
  createVault,
  normalizeCoordinatorUrls,
  type PinKdfParams,
  readVaultInfo,
  type VaultInfo,
  writeVaultInfo,
} from './vault.js';

/** Options of {@link enrollDevice}. */
export interface EnrollOptions {
  /**
   * Coordinator base URL, e.g. `http://127.0.0.1:8080`, or the base URLs of its replicas (kept in
   * the vault; the request goes to the first that answers).
   */
  url: string | readonly string[];
  dataDir: string;
  /** SECRET. At least 4 characters. */
  pin: string;
  name: string;
  platform?: 'ios' | 'android';
  osVersion?: string;
  kdf?: PinKdfParams;
  fetch?: typeof fetch;
}

/** Result of an enrollment request. */
export interface EnrollResult {
  device_id: string;
  status: string;
  /**
   * `@custodian/wire` `deviceFingerprint` of the device key (SHA-256 of the 33-byte compressed
   * P-256 key, 64 upper-case hex digits in 16 groups of 4): exactly what the admin API shows and the
   * administrator compares before approving.
   */
  fingerprint: string;
  mpc_peer_id: string;
}

/** Error from the coordinator's enrollment endpoint (problem+json `code`). */
export class EnrollmentError extends CoordinatorRequestError {}

/**
 * `fetch(base + path)` on the first of `urls` that answers (any HTTP status); a URL that cannot
 * be reached (connection refused, DNS, TLS) is skipped.
 * @throws the last network error when none answers
 */
async function fetchFirst(
  urls: readonly string[],
  path: string,
  init: RequestInit | undefined,
  doFetch: typeof fetch,
): Promise<Response> {
  let last: unknown;
  for (const base of urls) {
    try {
      return await doFetch(`${base}${path}`, init);
    } catch (e) {
      last = e;
    }
  }
  throw last instanceof Error ? last : new Error('no coordinator URL answered');
}

/**
 * Create the vault in `dataDir` and submit the enrollment request.
 * @throws Error when the folder already holds a device; EnrollmentError for a refused request
 */
export async function enrollDevice(o: EnrollOptions): Promise<EnrollResult> {
  const urls = normalizeCoordinatorUrls(typeof o.url === 'string' ? [o.url] : o.url);
  const vault = await createVault(o.dataDir, o.pin, { url: urls, name: o.name, ...(o.kdf ? { kdf: o.kdf } : {}) });
  let proof: string;
  try {
    proof = signEnrollmentProof(hexToBytes(vault.info.devicePublicKey), vault.info.mpcPeerId, vault.mpcSecretKey);
  } finally {
    vault.wipe();
  }
  const info = vault.info;
  const doFetch = o.fetch ?? fetch;
  const res = await fetchFirst(
    urls,
    '/devices/v1/enrollments',
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: o.name,
        platform: o.platform ?? 'android',
        os_version: o.osVersion ?? '14',
        // The simulator stands in for a phone whose key lives in its secure element.
        hardware_backed_keystore: true,
        public_key: info.devicePublicKey,
        mpc_peer_id: info.mpcPeerId,
        mpc_peer_proof: proof,
      }),
    },
    doFetch,
  );
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) {
    throw new EnrollmentError(
      `enrollment refused (${res.status}): ${String(body.detail ?? body.title ?? 'error')}`,
      res.status,
      typeof body.code === 'string' ? body.code : undefined,
    );
  }
  const deviceId = String(body.device_id);
  const fingerprint = deviceFingerprint(hexToBytes(info.devicePublicKey));
  const norm = (f: string) => f.replace(/[\s:]/g, '').toUpperCase();
  if (norm(String(body.fingerprint)) !== norm(fingerprint))
    throw new Error('the coordinator reports another fingerprint than this device key: do not approve it');
  const next: VaultInfo = { ...info, deviceId };
  await writeVaultInfo(o.dataDir, next);
  return {
    device_id: deviceId,
    status: String(body.status),
    fingerprint,
    mpc_peer_id: info.mpcPeerId,
  };
}

/** Poll the enrollment status (`GET /devices/v1/enrollments/{id}`). */
export async function enrollmentStatus(dataDir: string, f: typeof fetch = fetch): Promise<EnrollResult> {
  const info = await readVaultInfo(dataDir);
  if (!info.deviceId) throw new Error('this device has no enrollment');
  const res = await fetchFirst(info.urls, `/devices/v1/enrollments/${info.deviceId}`, undefined, f);
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) throw new EnrollmentError(`status request failed (${res.status})`, res.status, String(body.code ?? ''));
  return {
    device_id: info.deviceId,
    status: String(body.status),
    fingerprint: deviceFingerprint(hexToBytes(info.devicePublicKey)),
    mpc_peer_id: info.mpcPeerId,
  };
}
