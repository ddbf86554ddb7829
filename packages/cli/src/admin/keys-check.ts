/**
 * The checks of `custodian admin keys` that need no coordinator (admin/keys.ts): a party argument
 * resolved against the registered server signers and devices, a key change checked before an
 * Admin device signs it (its digest, and that it is the change asked for), the human description
 * of a key change, and whether a drill passed. Refusals are {@link AdminCliError}s with stable
 * codes: `UNKNOWN_PARTY`, `AMBIGUOUS_PARTY`, `KEY_CHANGE_DIGEST_MISMATCH`, `KEY_CHANGE_MISMATCH`.
 */

import type {
  Device,
  DrillResult,
  KeyChange,
  KeyChangeInput,
  MasterKey,
  PartyRef,
  ServerSigner,
} from '@custodian/coordinator/admin-api-types';
import { bytesToHex } from '@custodian/crypto';
import { type KeyChangeDocument, keyChangeDigest } from '@custodian/wire';
import { AdminCliError } from './http.js';

/**
 * A refusal of the CLI itself, with a stable code (printed as a problem with `--json`).
 * @throws AdminCliError always: message `<code>: <detail>`, problem `{ title, code, detail }`
 */
export function refuse(code: string, detail: string): never {
  throw new AdminCliError(`${code}: ${detail}`, { title: 'refused by the CLI', code, detail });
}

/**
 * Resolve a party argument against the registered server signers and devices.
 * @param ref `server:<signer_id|name>`, `device:<device_id|name>`, or a bare id or name (ids
 *   first, then names; case-insensitive)
 * @returns the party as the admin API takes it (`{ kind, id }`, id as registered)
 * @throws AdminCliError `UNKNOWN_PARTY` when nothing matches (or the prefixed id is not registered),
 *   `AMBIGUOUS_PARTY` (listing the candidates as `kind:id`) when a bare value matches several
 */
export function resolveParty(ref: string, signers: readonly ServerSigner[], devices: readonly Device[]): PartyRef {
  const m = /^(server|device):(.+)$/.exec(ref.trim());
  const want = (m?.[2] ?? ref).trim().toLowerCase();
  const kinds = m === null ? ['server', 'device'] : [m[1]];
  const all: (PartyRef & { name: string })[] = [
    ...(kinds.includes('server')
      ? signers.map((s) => ({ kind: 'server' as const, id: s.signer_id, name: s.name }))
      : []),
    ...(kinds.includes('device')
      ? devices.map((d) => ({ kind: 'device' as const, id: d.device_id, name: d.name }))
      : []),
  ];
  let hits = all.filter((p) => p.id.toLowerCase() === want);
  if (hits.length === 0) hits = all.filter((p) => p.name.toLowerCase() === want);
  if (hits.length === 0) refuse('UNKNOWN_PARTY', `${ref}: no such ${m?.[1] ?? 'server signer or device'}`);
  if (hits.length > 1)
    refuse(
      'AMBIGUOUS_PARTY',
      `${ref} names ${hits.map((p) => `${p.kind}:${p.id}`).join(', ')}: write server:<id> or device:<id>`,
    );
  return { kind: hits[0]!.kind, id: hits[0]!.id };
}

/** What the operator asked for, to check the coordinator's document against. */
export interface ExpectedChange {
  /** The master key as listed (threshold, parties, public keys and chain codes). */
  readonly masterKey: Pick<
    MasterKey,
    | 'threshold'
    | 'parties'
    | 'secp256k1_public_key'
    | 'secp256k1_chain_code'
    | 'ed25519_public_key'
    | 'ed25519_chain_code'
  >;
  readonly input: KeyChangeInput;
  /**
   * The registered server signers and devices: when given, the new parties must be exactly the
   * peers of the set asked for (servers' `peer_id`, devices' `mpc_peer_id`) and the approver
   * devices exactly that set's devices with their enrolled keys.
   */
  readonly signers?: readonly ServerSigner[];
  readonly devices?: readonly Device[];
  /** The time to check `expires_at` against (default: now). */
  readonly now?: Date;
}

/** The longest a key change may stay signable: 24 h (the signers refuse one expiring later). */
export const KEY_CHANGE_MAX_LIFETIME_MS = 24 * 60 * 60 * 1000;
/** Clock difference between the CLI's and the coordinator's clocks tolerated on `expires_at`: 5 minutes. */
const CLOCK_SKEW_MS = 5 * 60 * 1000;

/**
 * The MPC peer id of each party of the master key as listed: a server's `peer_id` (registered
 * signers, else its listed `peer`), a device's `mpc_peer_id` from the registered devices (its
 * listed `peer` is the fingerprint the master key ceremony recorded); undefined for a party it
 * cannot map.
 */
function currentPeers(
  mk: Pick<MasterKey, 'parties'>,
  signers: readonly ServerSigner[] | undefined,
  devices: readonly Device[] | undefined,
): (string | undefined)[] {
  if (!Array.isArray(mk.parties)) return [];
  return (mk.parties as { kind?: string; id?: string; peer?: string }[]).map((p) => {
    const id = String(p.id).toLowerCase();
    if (p.kind !== 'device') return signers?.find((x) => x.signer_id.toLowerCase() === id)?.peer_id ?? p.peer;
    return devices?.find((x) => x.device_id.toLowerCase() === id)?.mpc_peer_id ?? undefined;
  });
}

/** The party set a change asks for: the reshare's `signers`, or the key's parties with OLD replaced by NEW. */
function askedSet(expected: ExpectedChange): PartyRef[] | undefined {
  const input = expected.input;
  if (input.reason === 'reshare') return input.signers;
  if (!Array.isArray(expected.masterKey.parties)) return undefined;
  const same = (a: PartyRef, b: PartyRef) => a.kind === b.kind && a.id.toLowerCase() === b.id.toLowerCase();
  const parties = (expected.masterKey.parties as PartyRef[]).map((p) => ({ kind: p.kind, id: p.id }));
  return [...parties.filter((p) => !same(p, input.old)), input.new];
}

/**
 * Check a key change before signing it: the coordinator's `digest` must be
 * `keyChangeDigest(document)` (else the coordinator could show one document and have another
 * signed), the document must be this change (`change_id`), keep the master key's public keys and
 * chain codes (ECDSA — or Taproot on an instance without ECDSA —: `secp256k1_*`, Ed25519:
 * `ed25519_*`; the other secp256k1 key is not in the master key view and is checked by the
 * signers), and have the threshold and party count asked for — and, given the registered signers
 * and devices, exactly the parties (as a set) and approver devices (with their enrolled keys)
 * asked for; its `base` must be the key as listed (threshold; parties as a set of MPC peer ids:
 * servers' `peer`, devices' `mpc_peer_id`) and `expires_at` in the future and at most 24 h away
 * (5 minutes of clock skew tolerated).
 * @returns the 32-byte digest to sign
 * @throws AdminCliError `KEY_CHANGE_DIGEST_MISMATCH` or `KEY_CHANGE_MISMATCH`, naming the field
 */
export function checkKeyChange(view: KeyChange, expected: ExpectedChange): Uint8Array {
  const doc = view.document;
  let digest: Uint8Array;
  try {
    digest = keyChangeDigest(doc);
  } catch (e) {
    return refuse('KEY_CHANGE_MISMATCH', `the document cannot be encoded: ${(e as Error).message}`);
  }
  if (typeof view.digest !== 'string' || bytesToHex(digest) !== view.digest.toLowerCase())
    refuse(
      'KEY_CHANGE_DIGEST_MISMATCH',
      `the coordinator's digest ${String(view.digest)} is not the digest of the document shown (${bytesToHex(digest)}): not signed`,
    );
  const bad = (field: string, detail: string) => refuse('KEY_CHANGE_MISMATCH', `document.${field}: ${detail}`);
  if (doc.kind !== 'custodian.key-change') bad('kind', `${doc.kind}`);
  if (doc.change_id !== view.change_id) bad('change_id', `${doc.change_id} is not the change ${view.change_id}`);
  if (doc.reason !== expected.input.reason) bad('reason', `${doc.reason}, asked ${expected.input.reason}`);
  const mk = expected.masterKey;
  const algs = doc.public_keys.map((k) => k.algorithm);
  if (new Set(algs).size !== algs.length) bad('public_keys', 'an algorithm appears twice');
  // The view's secp256k1 key is the ECDSA key, or the Taproot key (02‖x) on an instance without ECDSA.
  const secp =
    doc.public_keys.find((k) => k.algorithm === 'SECP256K1_ECDSA') ??
    doc.public_keys.find((k) => k.algorithm === 'SECP256K1_TAPROOT');
  const ed = doc.public_keys.find((k) => k.algorithm === 'ED25519');
  const pairs: [typeof secp, string, string, string][] = [
    [secp, 'SECP256K1_ECDSA', mk.secp256k1_public_key, mk.secp256k1_chain_code],
    [ed, 'ED25519', mk.ed25519_public_key, mk.ed25519_chain_code],
  ];
  for (const [k, name, publicKey, chainCode] of pairs) {
    if (k === undefined) return bad('public_keys', `no ${name} key`);
    const pk = k.public_key.toLowerCase();
    const got = k.algorithm === 'SECP256K1_TAPROOT' && pk.length === 64 ? `02${pk}` : pk;
    if (got !== publicKey.toLowerCase())
      bad('public_keys', `${k.algorithm} public key ${k.public_key} is not the master key's ${publicKey}`);
    if (k.chain_code.toLowerCase() !== chainCode.toLowerCase())
      bad('public_keys', `${k.algorithm} chain code is not the master key's`);
  }
  const oldCount = Array.isArray(mk.parties) ? mk.parties.length : undefined;
  const [t, n] =
    expected.input.reason === 'reshare'
      ? [expected.input.threshold, expected.input.signers.length]
      : [mk.threshold, oldCount ?? doc.new_parties.length];
  if (doc.new_threshold !== t) bad('new_threshold', `${doc.new_threshold}, asked ${t}`);
  if (doc.new_parties.length !== n) bad('new_parties', `${doc.new_parties.length} parties, asked ${n}`);
  if (new Set(doc.new_parties).size !== doc.new_parties.length) bad('new_parties', 'a party appears twice');
  // the base: the key as it is now (the signers take part only while they hold exactly it)
  const base = doc.base as Partial<KeyChangeDocument['base']> | undefined;
  if (base === undefined || base === null || typeof base !== 'object') return bad('base', 'missing');
  if (!Number.isInteger(base.epoch) || (base.epoch as number) < 0) bad('base.epoch', `${String(base.epoch)}`);
  if (base.threshold !== mk.threshold) bad('base.threshold', `${String(base.threshold)}, the key's is ${mk.threshold}`);
  if (!Array.isArray(base.parties)) return bad('base.parties', 'missing');
  if (Array.isArray(mk.parties)) {
    const current = currentPeers(mk, expected.signers, expected.devices);
    const got = new Set(base.parties);
    const known = current.filter((p): p is string => p !== undefined);
    // a device the CLI cannot map (devices not given) is checked by count only
    if (base.parties.length !== current.length || got.size !== base.parties.length || known.some((p) => !got.has(p)))
      bad('base.parties', "not the master key's current parties");
  }
  const expires = typeof doc.expires_at === 'string' ? Date.parse(doc.expires_at) : Number.NaN;
  const now = (expected.now ?? new Date()).getTime();
  if (Number.isNaN(expires)) bad('expires_at', `${String(doc.expires_at)} is not a time`);
  if (expires <= now) bad('expires_at', `${doc.expires_at} has passed`);
  if (expires > now + KEY_CHANGE_MAX_LIFETIME_MS + CLOCK_SKEW_MS)
    bad('expires_at', `${doc.expires_at} is more than 24 h away`);
  const asked = askedSet(expected);
  if (asked !== undefined && expected.signers !== undefined && expected.devices !== undefined) {
    const byId = <T>(xs: readonly T[], id: (x: T) => string, want: string) =>
      xs.find((x) => id(x).toLowerCase() === want.toLowerCase());
    const peers = asked.map((p) =>
      p.kind === 'server'
        ? byId(expected.signers!, (x) => x.signer_id, p.id)?.peer_id
        : byId(expected.devices!, (x) => x.device_id, p.id)?.mpc_peer_id,
    );
    const got = new Set(doc.new_parties);
    const missing = asked.filter((_, i) => peers[i] == null || !got.has(peers[i] as string));
    if (missing.length > 0 || got.size !== asked.length)
      bad(
        'new_parties',
        `not the set asked for (${missing.map((p) => `${p.kind}:${p.id}`).join(', ') || 'extra parties'})`,
      );
    const wantDevices = asked
      .filter((p) => p.kind === 'device')
      .map((p) => byId(expected.devices!, (x) => x.device_id, p.id));
    const approvers = new Map(doc.approver_devices.map((d) => [d.device_id.toLowerCase(), d.public_key.toLowerCase()]));
    const wrong = wantDevices.filter(
      (d) => d === undefined || approvers.get(d.device_id.toLowerCase()) !== d.public_key.toLowerCase(),
    );
    if (wrong.length > 0 || approvers.size !== wantDevices.length)
      bad('approver_devices', "not the new set's devices with their enrolled keys");
  }
  return digest;
}

/** A peer id as the operator knows it: `server:<name>` / `device:<name>` when registered, else the id itself. */
function labeller(signers: readonly ServerSigner[], devices: readonly Device[]): (peer: string) => string {
  return (peer) => {
    const s = signers.find((x) => x.peer_id === peer);
    if (s !== undefined) return `server:${s.signer_id} (${s.name})`;
    const d = devices.find((x) => x.mpc_peer_id === peer || x.fingerprint === peer);
    if (d !== undefined) return `device:${d.device_id} (${d.name})`;
    return peer;
  };
}

/** The human description of a key change to sign: old → new set, threshold, approvers, keys, digest. */
export function describeKeyChange(
  view: KeyChange,
  masterKey: Pick<MasterKey, 'threshold' | 'parties'>,
  signers: readonly ServerSigner[],
  devices: readonly Device[],
): string {
  const doc = view.document;
  const label = labeller(signers, devices);
  const oldParties = Array.isArray(masterKey.parties)
    ? (masterKey.parties as { kind?: string; id?: string; peer?: string }[]).map((p) =>
        p.peer !== undefined ? label(p.peer) : `${p.kind}:${p.id}`,
      )
    : [];
  const lines = [
    `key change ${view.change_id} (${doc.reason}) of master key ${view.master_key_id}, key id ${doc.key_id}`,
    `  old set: ${masterKey.threshold}-of-${oldParties.length}`,
    ...oldParties.map((p) => `    ${p}`),
    `  new set: ${doc.new_threshold}-of-${doc.new_parties.length}`,
    ...doc.new_parties.map((p, k) => `    ${k + 1}. ${label(p)}${oldParties.includes(label(p)) ? '' : '  (new)'}`),
    '  approver devices:',
    ...doc.approver_devices.map((d) => `    ${d.device_id}  ${d.public_key}`),
    '  public keys (unchanged):',
    ...doc.public_keys.map((k) => `    ${k.algorithm.padEnd(17)} ${k.public_key}  chain code ${k.chain_code}`),
    `  base: epoch ${doc.base?.epoch}, ${doc.base?.threshold}-of-${doc.base?.parties?.length}`,
    ...(doc.base?.parties ?? []).map((p) => `    ${label(p)}`),
    `  expires at: ${doc.expires_at}`,
    `  digest: ${view.digest}`,
  ];
  return lines.join('\n');
}

/** Whether a drill found everything in order: every signature verified, every backup current. */
export function drillPassed(result: DrillResult | undefined): boolean {
  return (
    result !== undefined &&
    result.signatures.length > 0 &&
    result.signatures.every((s) => s.verified === true) &&
    result.signers.every((s) => s.backup_current === true)
  );
}
