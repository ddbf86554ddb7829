/**
 * Fiat–Shamir transcripts (a duplex over SHAKE256, FIPS 202).
 *
 * A transcript is created for one protocol tag (e.g. `custodian.cggmp.keygen.round2.sch`) and bound
 * to the session id, the ordered party identifiers and the round — STYLE.md item 5; CGGMP21 §2.1
 * (the random oracle is keyed by the session identifier sid). Items are appended with labels using
 * the injective {@link canonicalEncode}; challenges are squeezed from a clone of the state, and the
 * challenge label is then absorbed so later challenges differ.
 */
import { shake256 } from '@noble/hashes/sha3.js';
import { abytes, aint, bitLength, bytesToBigint } from './bytes.js';
import { type Canonical, canonicalEncode } from './encoding.js';

/** What every transcript is bound to. */
export interface TranscriptBinding {
  /** Session (execution) identifier, any length ≥ 16 bytes; unique per ceremony. */
  readonly sessionId: Uint8Array;
  /** Ordered party identifiers of the session (indices, VSS points or peer ids). */
  readonly parties: readonly (string | bigint | number)[];
  /** Round name or number the proof or commitment belongs to. */
  readonly round?: string | number;
}

type Shake = ReturnType<typeof shake256.create>;

const DOMAIN = 'custodian/transcript/v1';

/** A domain-separated, session-bound Fiat–Shamir transcript. Mutable: `append` changes it. */
export class Transcript {
  private state: Shake;

  private constructor(state: Shake) {
    this.state = state;
  }

  /**
   * Start a transcript.
   * @param tag protocol tag, e.g. `custodian.crypto.sch` (non-empty)
   * @param binding session id (≥ 16 bytes), ordered parties, round
   * @throws RangeError when the tag is empty or the session id is shorter than 16 bytes
   */
  static create(tag: string, binding: TranscriptBinding): Transcript {
    if (typeof tag !== 'string' || tag.length === 0) throw new RangeError('transcript tag: must be non-empty');
    abytes(binding.sessionId, 'sessionId');
    if (binding.sessionId.length < 16) throw new RangeError('sessionId: at least 16 bytes');
    const parties = binding.parties.map((p) => (typeof p === 'number' ? BigInt(p) : p));
    const t = new Transcript(shake256.create({}));
    t.absorb(['domain', DOMAIN, tag]);
    t.absorb(['session', binding.sessionId]);
    t.absorb(['parties', parties]);
    t.absorb(['round', binding.round === undefined ? null : String(binding.round)]);
    return t;
  }

  private absorb(value: Canonical): void {
    this.state.update(canonicalEncode(value));
  }

  /** Append a labelled value (canonically encoded). Returns `this` for chaining. */
  append(label: string, value: Canonical): this {
    this.absorb(['item', label, value]);
    return this;
  }

  /** An independent copy that has also absorbed `label`; the original is unchanged. */
  fork(label: string): Transcript {
    const t = new Transcript(this.state.clone());
    t.absorb(['fork', label]);
    return t;
  }

  /** Squeeze an XOF stream for a labelled challenge, then absorb the label into the main state. */
  private squeezer(label: string, kind: string, param: Canonical): (n: number) => Uint8Array {
    const s = this.state.clone();
    s.update(canonicalEncode(['challenge', label, kind, param]));
    this.absorb(['challenged', label, kind, param]);
    // one XOF stream per challenge: successive reads continue it
    return (n: number) => s.xof(n);
  }

  /** `length` challenge bytes (1…65536). */
  challengeBytes(label: string, length: number): Uint8Array {
    aint(length, 'length', 1, 65536);
    return this.squeezer(label, 'bytes', length)(length);
  }

  /** A scalar modulo `order` by wide reduction of 64 bytes (statistical distance < 2^-250). */
  challengeScalar(label: string, order: bigint): bigint {
    if (order <= 1n) throw new RangeError('order: must exceed 1');
    const wide = this.squeezer(label, 'scalar', order)(64);
    return bytesToBigint(wide) % order;
  }

  /** A uniform integer in [0, bound) by rejection sampling. */
  challengeBelow(label: string, bound: bigint): bigint {
    if (bound <= 0n) throw new RangeError('bound: must be positive');
    const read = this.squeezer(label, 'below', bound);
    return sampleBelow(read, bound);
  }

  /** A uniform integer in the signed range [−q, q] (CGGMP21's challenge e ∈ ±q). */
  challengeSigned(label: string, q: bigint): bigint {
    if (q <= 0n) throw new RangeError('q: must be positive');
    const read = this.squeezer(label, 'signed', q);
    return sampleBelow(read, 2n * q + 1n) - q;
  }

  /** `count` uniform integers in [0, bound), e.g. the m challenges y_i ∈ Z_N of Πmod/Πprm. */
  challengeVectorBelow(label: string, bound: bigint, count: number): bigint[] {
    aint(count, 'count', 1, 1 << 16);
    if (bound <= 0n) throw new RangeError('bound: must be positive');
    const read = this.squeezer(label, 'vector', [bound, count]);
    return Array.from({ length: count }, () => sampleBelow(read, bound));
  }

  /** `count` challenge bits (Πprm's e_i ∈ {0,1}). */
  challengeBits(label: string, count: number): boolean[] {
    aint(count, 'count', 1, 1 << 16);
    const bytes = this.squeezer(label, 'bits', count)(Math.ceil(count / 8));
    return Array.from({ length: count }, (_, i) => (((bytes[i >> 3] as number) >> (i & 7)) & 1) === 1);
  }
}

function sampleBelow(read: (n: number) => Uint8Array, bound: bigint): bigint {
  const bits = bitLength(bound - 1n) || 1;
  const bytes = Math.ceil(bits / 8);
  const mask = (1n << BigInt(bits)) - 1n;
  for (;;) {
    const v = bytesToBigint(read(bytes)) & mask;
    if (v < bound) return v;
  }
}
