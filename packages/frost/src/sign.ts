/**
 * FROST signing (RFC 9591 §5) on the sans-IO runtime, wrapping `@noble/curves`' `commit`,
 * `signShare`, `verifyShare` and `aggregate`. Every signer is also an aggregator (no trusted
 * coordinator), so every honest signer outputs the signature.
 *
 * Runtime parties are the signers: runtime index k is the signer with identifier `signers[k]`.
 * - round 0, broadcast `{ context, hiding, binding }`: RFC 9591 §5.1 commit() — the two nonce
 *   commitments (D_i, E_i) — and a digest of the signing context (suite, session id, signer
 *   identifiers, verifying key after tweaks, message), so a signer asked to sign something else
 *   is named before any share exists.
 * - round 1, broadcast `{ share }`: RFC 9591 §5.2 sign(). The nonce pair is deleted from the party
 *   state (and zeroed by noble) BEFORE the share is returned to the runtime, so a nonce is used at
 *   most once. A nonce commitment that another signer also sent, or that the {@link NonceLedger}
 *   has seen before (replayed across sessions), is rejected naming its sender.
 * - on receipt of all shares: RFC 9591 §5.3 aggregate(); when the group signature does not verify,
 *   every share is checked with §5.4 verify_signature_share and the failing signers are named.
 *   No echo round follows (`echoFinalRound: false`, as for CGGMP21 signing): the output is a
 *   verified signature or an abort naming signers whose shares fail §5.4, so a share sent
 *   differently to different signers can only make some of them abort with that blame, never
 *   release something invalid (commitments, round 0, are still echoed inside round 1).
 *
 * Randomness: noble's commit() takes two 32-byte strings from the runtime's `RandomSource`
 * (hiding, then binding nonce randomness; RFC 9591 §4.1 nonce_generate), nothing else — so RFC
 * 9591 vectors are reproduced by injecting their `*_nonce_randomness` as the RandomSource.
 */
import { type Canonical, canonicalEncode, equalBytes, ProtocolAbort, type ProtocolSpec } from '@custodian/crypto';
import type { NonceCommitments, Nonces } from '@noble/curves/abstract/frost.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { KeyShare } from './keyshare.js';
import { getSuite, nobleRng, type Suite } from './suites.js';
import { type TweakedKey, type TweakOptions, tweakedKey } from './tweak.js';
import { asRecord, bytesField } from './util.js';

/**
 * Record of nonce commitments already seen (by hex of the encoded point), shared across signing
 * sessions of one signer so that a replayed commitment is detected. The signer persists it.
 * Round 1 `add`s every commitment of the session (this party's own included) in the same step that
 * returns the signature share: a persisting ledger must make those entries durable before that
 * step's message leaves the process (the signer's runner holds it: `beforeRelease`), or a crash
 * could forget a nonce whose share was already sent.
 */
export interface NonceLedger {
  has(commitmentHex: string): boolean;
  add(commitmentHex: string): void;
}

/** In-memory {@link NonceLedger} (a Set). */
export class MemoryNonceLedger implements NonceLedger {
  private readonly seen = new Set<string>();
  has(h: string): boolean {
    return this.seen.has(h);
  }
  add(h: string): void {
    this.seen.add(h);
  }
}

/** Signing parameters. */
export interface SignOptions extends TweakOptions {
  /** This party's key share (validated by the caller when loaded, see `decodeKeyShare`). */
  readonly keyShare: KeyShare;
  /** Identifiers of the signers, one per runtime index; t ≤ length ≤ n; must include our own at `self`. */
  readonly signers: readonly bigint[];
  /** Message to sign (any length; for BIP340/Taproot usually the 32-byte sighash). */
  readonly message: Uint8Array;
  /** Cross-session nonce-commitment ledger (default: only this session is checked). */
  readonly nonceLedger?: NonceLedger;
}

/** Signing output. */
export interface SignOutput {
  /** Ed25519: 64 bytes (RFC 8032); secp256k1: 65 bytes R(33) ‖ z(32) (RFC 9591); secp256k1-tr: 64 bytes (BIP340). */
  readonly signature: Uint8Array;
  /** Key to verify under (see {@link TweakedKey.verifyingKey}). */
  readonly verifyingKey: Uint8Array;
  readonly message: Uint8Array;
}

interface SignState {
  readonly suite: Suite;
  readonly key: TweakedKey;
  readonly context: Uint8Array;
  readonly opts: SignOptions;
  readonly ledger: NonceLedger;
  nonces?: Nonces;
  own: NonceCommitments;
  commitmentList?: NonceCommitments[];
  ownShare?: Uint8Array;
}

const TAG = 'custodian.frost.sign';

function contextDigest(suite: Suite, sessionId: Uint8Array, key: TweakedKey, opts: SignOptions): Uint8Array {
  return sha256(
    canonicalEncode([
      `${TAG}.context/v1`,
      suite.name,
      sessionId,
      opts.signers as bigint[],
      key.verifyingKey,
      opts.message,
    ]),
  );
}

/**
 * The FROST signing protocol for the runtime. Output: the aggregated signature.
 * @throws RangeError (from `start`) when the options do not fit the session (signer count, own
 *   identifier not at `self`, unknown signers, a Taproot option on a non-TR suite)
 */
export function signProtocol(opts: SignOptions): ProtocolSpec<SignState, SignOutput> {
  const suite = getSuite(opts.keyShare.suite);
  if (!(opts.message instanceof Uint8Array)) throw new TypeError('message: expected Uint8Array');
  return {
    name: TAG,
    echoFinalRound: false,
    start(ctx) {
      const share = opts.keyShare;
      const m = opts.signers.length;
      if (m !== ctx.n) throw new RangeError(`signers: expected ${ctx.n} identifiers (one per party), got ${m}`);
      if (m < share.threshold || m > share.identifiers.length) throw new RangeError(`signers: ${m} not in [t, n]`);
      if (new Set(opts.signers).size !== m) throw new RangeError('signers: duplicate identifier');
      if (opts.signers[ctx.self] !== share.identifier) throw new RangeError('signers[self]: is not this key share');
      const key = tweakedKey(share, opts.signers, opts);
      const ledger = opts.nonceLedger ?? new MemoryNonceLedger();
      const { nonces, commitments } = suite.frost.commit(key.secret, nobleRng(ctx.rng));
      for (const c of [commitments.hiding, commitments.binding]) {
        // our nonces come from a fresh RandomSource; a repeat means the RNG failed: never sign
        if (ledger.has(bytesToHex(c))) throw new Error('sign: own nonce commitment repeated (RandomSource failure)');
      }
      const context = contextDigest(suite, ctx.sessionId, key, opts);
      const state: SignState = { suite, key, context, opts, ledger, nonces, own: commitments };
      return { state, send: { broadcast: { context, hiding: commitments.hiding, binding: commitments.binding } } };
    },
    rounds: [
      {
        name: `${TAG}.round1`,
        broadcast(body, from, state) {
          const r = asRecord(body, 'commitment body');
          const G = state.suite.group;
          const hiding = bytesField(r.hiding, 'hiding', G.pointLength);
          const binding = bytesField(r.binding, 'binding', G.pointLength);
          // cheap checks here (encoding, on curve, not the identity); noble's signShare validates
          // fully (subgroup) and a failure there is attributed with the full check below
          for (const [p, f] of [
            [hiding, 'hiding'],
            [binding, 'binding'],
          ] as const) {
            if (state.suite.pointFromBytesTrusted(p).is0()) throw new RangeError(`${f}: identity point not allowed`);
          }
          return {
            context: bytesField(r.context, 'context', 32),
            commitments: { identifier: state.suite.idHex(state.opts.signers[from] as bigint), hiding, binding },
          };
        },
        process(state, received, ctx) {
          const culprits: { party: number; reason: string; check: string }[] = [];
          const seen = new Map<string, number>();
          for (const c of [state.own.hiding, state.own.binding]) seen.set(bytesToHex(c), ctx.self);
          for (const [j, m] of received) {
            if (!equalBytes(m.broadcast.context, state.context)) {
              culprits.push({
                party: j,
                reason: 'signing context differs (message, key, tweak or signer set)',
                check: 'frost.sign-context',
              });
              continue;
            }
            const c = m.broadcast.commitments as NonceCommitments;
            for (const p of [c.hiding, c.binding]) {
              const h = bytesToHex(p);
              const other = seen.get(h);
              if (state.ledger.has(h)) {
                culprits.push({
                  party: j,
                  reason: 'reused a nonce commitment from an earlier session',
                  check: 'frost.nonce-reuse',
                });
                break;
              }
              if (other !== undefined) {
                culprits.push({
                  party: j,
                  reason: other === ctx.self ? "copied this party's nonce commitment" : 'reused a nonce commitment',
                  check: 'frost.nonce-reuse',
                });
                break;
              }
              seen.set(h, j);
            }
          }
          if (culprits.length > 0) throw new ProtocolAbort(culprits);
          for (const h of seen.keys()) state.ledger.add(h);
          const commitmentList = [
            state.own,
            ...[...received.values()].map((m) => m.broadcast.commitments as NonceCommitments),
          ];
          const nonces = state.nonces;
          if (!nonces) throw new Error('sign: nonces already consumed');
          // consume the nonce before the share leaves this function
          delete state.nonces;
          let share: Uint8Array;
          try {
            share = state.suite.frost.signShare(
              state.key.secret,
              state.key.pub,
              nonces,
              commitmentList,
              state.opts.message,
            );
          } catch (e) {
            const G = state.suite.group;
            const bad = [...received].filter(([, m]) => {
              try {
                G.decodePoint(m.broadcast.commitments.hiding, 'hiding');
                G.decodePoint(m.broadcast.commitments.binding, 'binding');
                return false;
              } catch {
                return true;
              }
            });
            if (bad.length > 0) {
              throw new ProtocolAbort(
                bad.map(([j]) => ({
                  party: j,
                  reason: 'malformed message: invalid nonce commitment point',
                  check: 'frost.nonce-commitment',
                })),
              );
            }
            throw e;
          } finally {
            nonces.hiding.fill(0);
            nonces.binding.fill(0);
          }
          const next: SignState = { ...state, commitmentList, ownShare: share };
          return { state: next, send: { broadcast: { share } as Canonical } };
        },
      },
      {
        name: `${TAG}.round2`,
        broadcast(body, _from, state) {
          const share = bytesField(asRecord(body, 'share body').share, 'share', 32);
          state.suite.group.decodeScalar(share, 'share', { allowZero: true });
          return share;
        },
        process(state, received, ctx) {
          const ids = state.opts.signers;
          const shares: Record<string, Uint8Array> = {
            [state.suite.idHex(ids[ctx.self] as bigint)]: state.ownShare as Uint8Array,
          };
          for (const [j, m] of received) shares[state.suite.idHex(ids[j] as bigint)] = m.broadcast as Uint8Array;
          let signature: Uint8Array;
          try {
            signature = state.suite.frost.aggregate(
              state.key.pub,
              state.commitmentList as NonceCommitments[],
              state.opts.message,
              shares,
            );
          } catch (e) {
            const cheaters = (e as { cheaters?: string[] }).cheaters;
            if (!Array.isArray(cheaters) || cheaters.length === 0) throw e;
            throw new ProtocolAbort(
              cheaters.map((hex) => {
                const party = ids.findIndex((id) => state.suite.idHex(id) === hex);
                return {
                  party,
                  reason: 'signature share fails verification (RFC 9591 §5.4)',
                  check: 'frost.signature-share',
                };
              }),
            );
          }
          return { output: { signature, verifyingKey: state.key.verifyingKey, message: state.opts.message } };
        },
      },
    ],
  };
}
