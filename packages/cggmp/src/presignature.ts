/**
 * A CGGMP21 presignature as an opaque one-shot handle, and the process-lifetime registry that makes
 * "one presigning output signs at most once" hold for every use of this package's public API.
 *
 * Why: a presignature's secret (k_i, χ_i) gives the share σ_i = k_i·m + r·(χ_i + δ·k_i) of one
 * signature. Two shares from one k_i (two messages, or one message under two tweaks) are two linear
 * equations in (k_i, χ_i); two full signatures with one nonce k = Σ k_j reveal the key
 * (s₁ − s₂ = k⁻¹·(m₁ − m₂)). The spec's presigning output (LFDT-Lockness cggmp21 §4.3, CGGMP21
 * ePrint 2021/060 Fig. 7 "Output") is used by exactly one signing (§4.4, Fig. 8).
 *
 * What this module guarantees, within one process:
 * - the secret fields live in JS `#private` fields: no property, getter, spread, `JSON.stringify`
 *   or `structuredClone` reaches them; a handle is made only by presigning ({@link presignProtocol}
 *   in presign.ts) or by {@link Presignature.import}; there is no constructor from raw values;
 * - a handle signs at most once (`signShare` consumes it); {@link Presignature.export} seals it
 *   (it can no longer sign) before its bytes are returned; {@link Presignature.discard} seals it;
 * - the registry, keyed by the nonce share k_i itself (a 128-bit hash of it, memory only, never
 *   exposed), refuses a second live handle of one presignature (import while one is held:
 *   `PRESIGNATURE_HELD`) and, forever after the first signing, any handle of it (tombstone:
 *   `PRESIGNATURE_SPENT`) — whatever id, position or public values an export claims.
 *
 * What the caller's store must guarantee (across processes, which no in-memory registry sees): an
 * exported presignature is kept encrypted (its bytes ARE the secret) and deleted durably BEFORE a
 * signature share made from it leaves the process (the signer's rule, DESIGN §3), and a restored or
 * rolled-back store must not bring a used one back (the signer's store generation, issue #20 item 8).
 *
 * Cost: one SHA-256 per handle made; ≈ 60 bytes of tombstone per presignature used, for the life of
 * the process (a million signatures ≈ 60 MB).
 */
import {
  bigintToMinimalBytes,
  bytesToBigint,
  bytesToHex,
  CryptoError,
  canonicalEncode,
  secp256k1Group as G,
  hexToBytes,
  type Secp256k1Point,
} from '@custodian/crypto';
import { sha256 } from '@noble/hashes/sha2.js';

/** Storage format of {@link Presignature.export} (JSON, version 1; the signer's stored format since its first release). */
export const PRESIGNATURE_FORMAT = 'custodian.cggmp.presignature';
/** The signer's name of the same version-1 format (records written before the format moved here). */
const LEGACY_FORMAT = 'custodian.signer.presignature';
const ID_TAG = 'custodian.cggmp.presign.v1.id';
const FINGERPRINT_TAG = 'custodian.cggmp.presign.v1.nonce-share';

/** Public part of a presignature (what every signer and a combiner know). */
export interface PresignaturePublic {
  /** Key indices of the signing set (ascending). */
  readonly signers: readonly number[];
  /** Master public key Y of the key the presignature was made for. */
  readonly publicKey: Secp256k1Point;
  /** R = δ⁻¹·Γ = k⁻¹·G. */
  readonly R: Secp256k1Point;
  /** Γ = Σ Γ_j. */
  readonly Gamma: Secp256k1Point;
  /** Δ_j = k_j·Γ for each signer position j. */
  readonly Delta: readonly Secp256k1Point[];
  /** S_j = χ_j·Γ for each signer position j. */
  readonly S: readonly Secp256k1Point[];
}

/** Codes of {@link PresignatureUseError} (stable). */
export type PresignatureUseCode = 'PRESIGNATURE_SPENT' | 'PRESIGNATURE_SEALED' | 'PRESIGNATURE_HELD';

/**
 * A refused use of a presignature. `code`: `PRESIGNATURE_SPENT` (it signed already in this process),
 * `PRESIGNATURE_SEALED` (this handle was exported or discarded), `PRESIGNATURE_HELD` (import while
 * another live handle of the same presignature exists). The message never carries a secret.
 */
export class PresignatureUseError extends CryptoError {
  declare readonly code: PresignatureUseCode;
  constructor(code: PresignatureUseCode, message: string) {
    super(code, message);
  }
}

/** Thrown on any use of a presignature that already signed (code `PRESIGNATURE_SPENT`). */
export class PresignatureSpentError extends PresignatureUseError {
  constructor() {
    super('PRESIGNATURE_SPENT', 'presignature already used: a presignature signs at most once');
  }
}

/** Registry of this process: nonce-share fingerprints with a live handle, and of every one that signed. */
const held = new Set<bigint>();
const spent = new Set<bigint>();
/** A live handle collected unused can no longer sign: its presignature may be imported again. */
const collected = new FinalizationRegistry<bigint>((fp) => held.delete(fp));
/** Only this module makes handles. */
const MINT = Symbol('custodian.cggmp.presignature');
/** Set by {@link Presignature}'s static block (it reads private fields); see {@link consumePresignature}. */
let consume: (p: Presignature) => { k: bigint; chi: bigint };

/** The registry's key of a nonce share: 128 bits of a tagged SHA-256 of k_i, as a bigint (≈ 60 bytes in a Set; a hex string from noble's `bytesToHex` is a rope of ≈ 380). */
function fingerprint(k: bigint): bigint {
  return bytesToBigint(sha256(canonicalEncode([FINGERPRINT_TAG, G.encodeScalar(k)])).subarray(0, 16));
}

/**
 * A presignature held by party `i` of its signing set: public values plus the SECRET (k_i, χ_i) in
 * private fields. Made by presigning or {@link Presignature.import}; signs once (`signShare`,
 * `signProtocol`); see the module comment for the guarantees.
 */
export class Presignature {
  /** Public values (safe to log, copy and hand a combiner). */
  readonly public: PresignaturePublic;
  /** This party's position in `signers`. */
  readonly i: number;
  #secret: { k: bigint; chi: bigint } | undefined;
  readonly #fingerprint: bigint;
  #id: string | undefined;

  /** @internal Not callable from outside this module: presigning and {@link Presignature.import} make handles. */
  constructor(token: symbol, pub: PresignaturePublic, i: number, k: bigint, chi: bigint) {
    if (token !== MINT) throw new TypeError('Presignature: made by presigning or Presignature.import only');
    const fp = fingerprint(k);
    if (spent.has(fp)) throw new PresignatureSpentError();
    if (held.has(fp)) {
      throw new PresignatureUseError('PRESIGNATURE_HELD', 'presignature already held by a live handle in this process');
    }
    held.add(fp);
    collected.register(this, fp, this);
    this.public = pub;
    this.i = i;
    this.#secret = { k, chi };
    this.#fingerprint = fp;
  }

  /**
   * The presignature's id, the same at every party of its signing set: 64 hex characters,
   * SHA-256 of (tag, signers, Y, R) with injective encoding. Fixed at presigning (R is), so a store
   * may name the presignature by it. A name, not the registry's key (that is k_i itself).
   */
  get id(): string {
    this.#id ??= bytesToHex(
      sha256(
        canonicalEncode([
          ID_TAG,
          this.public.signers.map((s) => BigInt(s)),
          G.encodePoint(this.public.publicKey),
          G.encodePoint(this.public.R),
        ]),
      ),
    );
    return this.#id;
  }

  /** True once it can no longer sign (signed, exported or discarded). */
  get spent(): boolean {
    return this.#secret === undefined;
  }

  /**
   * Serialise for an encrypted store and SEAL this handle (it can no longer sign; the bytes can be
   * imported, once at a time, until one handle of it signs). Format {@link PRESIGNATURE_FORMAT}
   * version 1: JSON, points SEC1-compressed hex, scalars minimal big-endian hex.
   * @returns SECRET bytes (they hold k_i and χ_i): encrypt at rest, never log
   * @throws PresignatureUseError `PRESIGNATURE_SPENT` / `PRESIGNATURE_SEALED` when it cannot sign any more
   */
  export(): Uint8Array {
    const s = this.#close();
    const ph = (p: Secp256k1Point) => bytesToHex(G.encodePoint(p));
    const bh = (v: bigint) => bytesToHex(bigintToMinimalBytes(v));
    const p = this.public;
    return new TextEncoder().encode(
      JSON.stringify({
        format: PRESIGNATURE_FORMAT,
        version: 1,
        signers: p.signers,
        i: this.i,
        publicKey: ph(p.publicKey),
        R: ph(p.R),
        Gamma: ph(p.Gamma),
        Delta: p.Delta.map(ph),
        S: p.S.map(ph),
        k: bh(s.k),
        chi: bh(s.chi),
      }),
    );
  }

  /**
   * Seal this handle without signing (e.g. a pool drops it from memory while its store keeps the
   * encrypted copy, which may then be imported again). No-op on a handle that cannot sign.
   */
  discard(): void {
    if (this.#secret) this.#close();
  }

  /**
   * Parse and validate an {@link export}ed presignature (also the signer's stored records of the
   * same format, `custodian.signer.presignature` version 1) into a live handle.
   * @throws TypeError / RangeError naming the malformed field (never a value);
   *   PresignatureUseError `PRESIGNATURE_SPENT` when this presignature signed already in this
   *   process, `PRESIGNATURE_HELD` when a live handle of it exists
   */
  static import(bytes: Uint8Array): Presignature {
    if (!(bytes instanceof Uint8Array)) throw new TypeError('presignature: bytes must be a Uint8Array');
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as Record<string, unknown>;
    } catch {
      throw new RangeError('presignature: not JSON');
    }
    if (o === null || typeof o !== 'object') throw new RangeError('presignature: not an object');
    if ((o.format !== PRESIGNATURE_FORMAT && o.format !== LEGACY_FORMAT) || o.version !== 1) {
      throw new RangeError('presignature: unknown format');
    }
    const signers = o.signers;
    if (
      !Array.isArray(signers) ||
      signers.length === 0 ||
      !signers.every((x, j) => Number.isSafeInteger(x) && x >= 0 && (j === 0 || x > signers[j - 1]))
    ) {
      throw new RangeError('presignature: signers must be ascending indices');
    }
    const m = signers.length;
    const i = o.i;
    if (!Number.isSafeInteger(i) || (i as number) < 0 || (i as number) >= m) {
      throw new RangeError('presignature: i out of range');
    }
    // noble's hex errors quote a character: never let one of a secret field through
    const hex = (v: unknown, f: string, pad = false) => {
      if (typeof v !== 'string') throw new TypeError(`presignature: ${f} must be hex`);
      try {
        return hexToBytes(pad && v.length % 2 ? `0${v}` : v);
      } catch {
        throw new TypeError(`presignature: ${f} must be hex`);
      }
    };
    const pt = (v: unknown, f: string) => G.decodePoint(hex(v, f), f);
    const sc = (v: unknown, f: string) => {
      const x = bytesToBigint(hex(v, f, true));
      if (x <= 0n || x >= G.order) throw new RangeError(`presignature: ${f} out of range`);
      return x;
    };
    const list = (v: unknown, f: string) => {
      if (!Array.isArray(v) || v.length !== m) throw new RangeError(`presignature: ${f} must have ${m} points`);
      return v.map((x, j) => pt(x, `${f}[${j}]`));
    };
    const pub: PresignaturePublic = {
      signers: signers as number[],
      publicKey: pt(o.publicKey, 'publicKey'),
      R: pt(o.R, 'R'),
      Gamma: pt(o.Gamma, 'Gamma'),
      Delta: list(o.Delta, 'Delta'),
      S: list(o.S, 'S'),
    };
    return new Presignature(MINT, pub, i as number, sc(o.k, 'k'), sc(o.chi, 'chi'));
  }

  /** End this handle's ability to sign and hand its secret to the one caller that does. */
  #close(): { k: bigint; chi: bigint } {
    const s = this.#secret;
    if (!s) {
      if (spent.has(this.#fingerprint)) throw new PresignatureSpentError();
      throw new PresignatureUseError('PRESIGNATURE_SEALED', 'presignature handle sealed (exported or discarded)');
    }
    this.#secret = undefined;
    held.delete(this.#fingerprint);
    collected.unregister(this);
    return s;
  }

  /** @internal see {@link consumePresignature} */
  static {
    consume = (p: Presignature) => {
      if (typeof p !== 'object' || p === null || !(#secret in p)) {
        throw new TypeError('presignature: not a Presignature handle (copies of one cannot sign)');
      }
      const fp = p.#fingerprint;
      // the tombstone is written before the secret is handed out
      if (spent.has(fp)) throw new PresignatureSpentError();
      const s = p.#close();
      spent.add(fp);
      return s;
    };
  }
}

/**
 * PACKAGE-INTERNAL (not exported by the package index): consume a handle for signing — the only
 * way to its secret. Marks the presignature spent in the process registry first.
 * @throws TypeError for anything but a handle made by this module; PresignatureUseError when it cannot sign
 */
export function consumePresignature(p: Presignature): { k: bigint; chi: bigint } {
  return consume(p);
}

/** PACKAGE-INTERNAL (presigning's output): a live handle of a fresh presignature. */
export function mintPresignature(pub: PresignaturePublic, i: number, k: bigint, chi: bigint): Presignature {
  return new Presignature(MINT, pub, i, k, chi);
}
