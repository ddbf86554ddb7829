/**
 * In-process signers for the key lifecycle tests (issue #22): real encrypted LevelDB stores, real
 * ceremony contexts and runners ({@link InMemoryNetwork}), each with a prime pool seeded from the
 * committed TEST-ONLY safe primes (packages/paillier test fixtures; signer i gets pair i mod 5, and
 * is re-seeded with it before each ECDSA ceremony), and optionally enforcement with a trusted Admin
 * key. Helpers run a ceremony at a set of signers and build Admin-signed key changes.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bytesToHex } from '@custodian/crypto';
import { SECURITY_112 } from '@custodian/paillier';
import {
  CeremonyKind,
  type CeremonyResult,
  KeyAlgorithm,
  type KeyChangeDocument,
  type SignedKeyChange,
  type StartCeremony,
  signKeyChange,
} from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { pino } from 'pino';
import { type CeremonyContext, type KeyRecord, listKeys, StoredPrimePool } from '../src/index.js';
import type { SecureStore } from '../src/level-store/index.js';
import { tempDir } from './helpers.js';
import { InMemoryNetwork, identities, openContext, type TestIdentity } from './in-process.js';

const fixture = JSON.parse(
  readFileSync(new URL('../../paillier/test/fixtures/test-only-safe-primes.json', import.meta.url), 'utf8'),
) as { safePrimes1024: string[] };

/** A TEST-ONLY Admin device key pair (P-256). */
export const ADMIN_SECRET = p256.utils.randomSecretKey();
export const ADMIN_PUBLIC = bytesToHex(p256.getPublicKey(ADMIN_SECRET, true));

/** One in-process signer. */
export interface Signer {
  readonly id: TestIdentity;
  readonly dir: string;
  ctx: CeremonyContext;
  /** Position in the cluster (its fixture prime pair is `index mod 5`). */
  readonly index: number;
}

/** A set of in-process signers on one network; `close` closes stores and removes folders. */
export class Cluster {
  readonly net = new InMemoryNetwork();
  readonly signers: Signer[] = [];
  private readonly root = tempDir('lifecycle');

  /**
   * @param enforcing true: trust {@link ADMIN_PUBLIC} (no chains); an object: that enforcement;
   *   false: allow unenforced signing
   */
  constructor(private readonly enforcing: boolean | NonNullable<CeremonyContext['enforcement']>) {}

  /** Add `n` signers. */
  async add(n: number): Promise<Signer[]> {
    const ids = await identities(n);
    const added: Signer[] = [];
    for (const id of ids) {
      const index = this.signers.length;
      const dir = join(this.root, `s${index}`);
      const ctx = await this.open(id, dir);
      const s: Signer = { id, dir, ctx, index };
      this.signers.push(s);
      added.push(s);
    }
    return added;
  }

  private async open(id: TestIdentity, dir: string): Promise<CeremonyContext> {
    const base = await openContext(this.net, id, join(dir, 'db'));
    const primePool = new StoredPrimePool(base.store, SECURITY_112, pino({ level: 'silent' }));
    return {
      ...base,
      primePool,
      ...(this.enforcing === false
        ? { allowUnenforcedSigning: true }
        : {
            enforcement: this.enforcing === true ? { trustedAdminKeys: [ADMIN_PUBLIC], chains: {} } : this.enforcing,
          }),
    };
  }

  /** Seed a signer's pool with its fixture pair (again: consumed primes may come back in tests). */
  async seedPrimes(s: Signer): Promise<void> {
    const k = s.index % 5;
    const file = join(s.dir, 'primes.json');
    writeFileSync(
      file,
      JSON.stringify({ safePrimes: [fixture.safePrimes1024[2 * k], fixture.safePrimes1024[2 * k + 1]] }),
    );
    await s.ctx.primePool?.seed(file);
  }

  /** Close and reopen a signer's store (a restart: caches and in-memory state gone). */
  async restart(s: Signer): Promise<void> {
    await (s.ctx.store as SecureStore).close();
    s.ctx = await this.open(s.id, s.dir);
  }

  async close(): Promise<void> {
    for (const s of this.signers) await (s.ctx.store as SecureStore).close().catch(() => undefined);
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** A fresh ceremony id (16 bytes). */
export const cid = (): Uint8Array => crypto.getRandomValues(new Uint8Array(16));

/** A StartCeremony with a deadline `ms` ahead. */
export function start(
  kind: number,
  parties: readonly Signer[],
  extra: Partial<StartCeremony> = {},
  ms = 120_000,
): StartCeremony {
  return {
    ceremonyId: cid(),
    kind,
    parties: parties.map((s) => ({ peerId: s.id.peerId })),
    threshold: 0,
    deadlineUnixMs: Date.now() + ms,
    ...extra,
  };
}

/** The new parties' `pendingAttestation`s of each RESHARE run through {@link runAt}, by its ceremony id (hex). */
const attested = new Map<string, Uint8Array[]>();

/**
 * The attestations a RESHARE_COMMIT of `reshareCeremonyId` carries, as the coordinator collects
 * them: each new party's RESHARE answer's `pendingAttestation`, in the request's new-party order
 * (an empty array for a party that gave none). Undefined for a RESHARE not run through {@link runAt}.
 */
export function attestationsOf(reshareCeremonyId: Uint8Array): Uint8Array[] | undefined {
  return attested.get(bytesToHex(reshareCeremonyId))?.map((a) => Uint8Array.from(a));
}

/**
 * Run the same request at each of `at` (default: its parties). Like the coordinator: a RESHARE's
 * answers' attestations are kept, and a RESHARE_COMMIT without `pendingAttestations` is sent with
 * those of its reshare (a test that wants to send none or others sets the field).
 */
export async function runAt(
  run: (ctx: CeremonyContext, s: StartCeremony) => Promise<CeremonyResult>,
  req: StartCeremony,
  at: readonly Signer[],
): Promise<CeremonyResult[]> {
  let sent = req;
  if (req.kind === CeremonyKind.RESHARE_COMMIT && req.pendingAttestations === undefined && req.reshareCeremonyId) {
    const list = attestationsOf(req.reshareCeremonyId);
    if (list) sent = { ...req, pendingAttestations: list };
  }
  const results = await Promise.all(at.map((s) => run(s.ctx, sent)));
  if (req.kind === CeremonyKind.RESHARE && req.reshare) {
    const prior = attested.get(bytesToHex(req.ceremonyId));
    const list = req.reshare.newParties.map((p, i) => {
      const k = at.findIndex((s) => s.id.peerId === p.peerId);
      return results[k]?.pendingAttestation ?? prior?.[i] ?? new Uint8Array(0);
    });
    attested.set(bytesToHex(req.ceremonyId), list);
  }
  return results;
}

/** The approver devices of a key as a test fixture (two phones' P-256 keys). */
export function testDevices(n: number): { deviceId: string; secretKey: Uint8Array; publicKey: Uint8Array }[] {
  return Array.from({ length: n }, (_, i) => {
    const secretKey = p256.utils.randomSecretKey();
    return { deviceId: `phone-${i}`, secretKey, publicKey: p256.getPublicKey(secretKey, true) };
  });
}

/**
 * The key change document for moving `rec`'s key to `newParties` with threshold `t`: its base is
 * `rec` (epoch, parties, threshold), it expires `expiresInMs` from now (default 1 h; negative: already).
 */
export function keyChange(
  rec: KeyRecord,
  newParties: readonly Signer[],
  t: number,
  devices: readonly { deviceId: string; publicKey: Uint8Array }[] = [],
  expiresInMs = 3_600_000,
): KeyChangeDocument {
  const names: Record<number, 'ED25519' | 'SECP256K1_TAPROOT' | 'SECP256K1_ECDSA'> = {
    [KeyAlgorithm.ED25519]: 'ED25519',
    [KeyAlgorithm.SECP256K1_TAPROOT]: 'SECP256K1_TAPROOT',
    [KeyAlgorithm.SECP256K1_ECDSA]: 'SECP256K1_ECDSA',
  };
  return {
    kind: 'custodian.key-change',
    change_id: crypto.randomUUID(),
    key_id: rec.keyId,
    public_keys: rec.keys.map((k) => ({
      algorithm: names[k.algorithm] as 'ED25519',
      public_key: k.publicKey,
      chain_code: k.chainCode,
    })),
    new_parties: newParties.map((s) => s.id.peerId),
    new_threshold: t,
    approver_devices: devices.map((d) => ({ device_id: d.deviceId, public_key: bytesToHex(d.publicKey) })),
    base: { epoch: rec.epoch, parties: [...rec.parties], threshold: rec.threshold },
    expires_at: new Date(Date.now() + expiresInMs).toISOString(),
    reason: 'reshare',
    created_at: new Date().toISOString(),
  };
}

/** A RESHARE request for `doc` (signed by the test Admin unless `signed` is given). */
export function reshareStart(
  doc: KeyChangeDocument,
  session: readonly Signer[],
  newParties: readonly Signer[],
  devices: readonly { deviceId: string; publicKey: Uint8Array }[] = [],
  signed: SignedKeyChange = signKeyChange(doc, 'admin-phone', ADMIN_SECRET),
  ms = 120_000,
): StartCeremony {
  return start(
    CeremonyKind.RESHARE,
    session,
    {
      keyId: doc.key_id,
      reshare: {
        newParties: newParties.map((s) => ({ peerId: s.id.peerId })),
        newThreshold: doc.new_threshold,
        approverDevices: devices.map((d) => ({ deviceId: d.deviceId, publicKey: d.publicKey })),
        keyChangeJson: JSON.stringify(signed),
      },
    },
    ms,
  );
}

/** The key record a signer holds (undefined when none). */
export async function held(s: Signer, keyId: string): Promise<KeyRecord | undefined> {
  return (await listKeys(s.ctx.store)).find((k) => k.keyId === keyId);
}
