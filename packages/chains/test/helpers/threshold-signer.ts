/**
 * Threshold signer for the end-to-end chain tests: every digest is signed by a 2-of-3 threshold
 * ceremony run in memory with the round runtime's simulator (`simulate`), the same protocol code
 * the signer daemons run over libp2p. No party ever holds the whole key.
 *
 * - ECDSA (Ethereum, TRON, Bitcoin P2WPKH): CGGMP21 (`@custodian/cggmp`) with the TEST-ONLY
 *   2-of-3 key shares of `packages/cggmp/test/fixtures/test-only-key-shares.json` (loaded with
 *   `fixtureShares('2of3')`; committed because aux-info needs safe primes, too slow to generate
 *   per test). Signers 0 and 2 run presigning, then signing with the additive HD tweak δ of the
 *   digest's path (`deriveSecp256k1` of the master public key and chain code). One presignature
 *   per signature: ~1–3 s each on the CI machine, so tests sign only what they need.
 * - BIP340/Taproot (Bitcoin P2TR): FROST (`@custodian/frost`, suite `secp256k1-tr`) with a 2-of-3
 *   key from a DKG run once per holder. Signers 1 and 3 (identifiers) sign with the digest's path
 *   as `derivationPath` and `taproot: { merkleRoot: empty }` (BIP86: key path only, no script
 *   tree), so the P2TR internal key is the HD-derived FROST group key and the output key is
 *   `P + H_TapTweak(x(P))·G` — the adapter's `taprootTweak` is checked against FROST's before signing.
 *
 * The ECDSA master key (CGGMP fixture) and the Taproot master key (FROST DKG) are two different
 * keys here: {@link ThresholdKeyHolder.source} picks the one of the scheme an address needs.
 */

import type { EcdsaSignature } from '@custodian/cggmp';
import {
  bytesToHex,
  deriveSecp256k1,
  equalBytes,
  Party,
  type RandomSource,
  secp256k1Group,
  simulate,
  systemRandom,
} from '@custodian/crypto';
import { seededRandom } from '@custodian/crypto/testing';
import {
  dkgProtocol,
  type KeyShare as FrostKeyShare,
  type SignOutput,
  signProtocol,
  taprootTweak,
} from '@custodian/frost';
import { schnorr } from '@noble/curves/secp256k1.js';
import { bytesToNumberBE } from '@noble/curves/utils.js';
import { fixtureShares, type Presignature, runPresign, runSign } from '../../../cggmp/test/helpers.js';
import type { ChainSignature, DigestSigner, DigestToSign, SignatureScheme, SourceAddress } from '../../src/index.js';

/** What the end-to-end suites need from a key holder: a signer and derived source addresses. */
export interface KeyHolder {
  /** Signs one digest (see `DigestToSign`): ECDSA (r, s, recovery) or a 64-byte BIP340 signature. */
  readonly sign: DigestSigner;
  /**
   * The key at non-hardened `path` under the master key of `scheme` (default `ecdsa`), and its
   * address by `toAddress`.
   */
  source(path: number[], toAddress: (publicKey: Uint8Array) => string, scheme?: SignatureScheme): SourceAddress;
}

export interface ThresholdKeyHolder extends KeyHolder {
  /** CGGMP21 master public key (33 bytes) and chain code (32 bytes). */
  readonly ecdsaMaster: { readonly publicKey: Uint8Array; readonly chainCode: Uint8Array };
  /** FROST `secp256k1-tr` group public key (33 bytes, full point: the BIP32 parent) and chain code. */
  readonly schnorrMaster: { readonly publicKey: Uint8Array; readonly chainCode: Uint8Array };
  /** Every CGGMP21 signature produced, by digest hex (for checks of the adapters' encodings, e.g. DER). */
  readonly ecdsaOutputs: Map<string, EcdsaSignature>;
  /** Every FROST output produced, by digest hex. */
  readonly schnorrOutputs: Map<string, SignOutput>;
  /** Ceremonies run so far. */
  readonly counts: { ecdsa: number; schnorr: number };
}

/** ECDSA signing parties (indices into the 2-of-3 fixture shares). */
const ECDSA_SIGNERS = [0, 2];
/** FROST signing parties (DKG runtime indices; identifiers are index + 1). */
const FROST_SIGNERS = [0, 2];
const EMPTY_MERKLE_ROOT = new Uint8Array(0);

function sessionId(label: string): Uint8Array {
  return seededRandom(`chains-threshold-sid:${label}`)(32);
}

/** Runs a 2-of-3 `secp256k1-tr` FROST DKG in memory. @throws Error when a party aborts */
export function frostDkg(label: string, rng: (i: number) => RandomSource = () => systemRandom): FrostKeyShare[] {
  const parties = [0, 1, 2].map(
    (i) =>
      new Party(dkgProtocol({ suite: 'secp256k1-tr', threshold: 2 }), {
        self: i,
        n: 3,
        sessionId: sessionId(`dkg:${label}`),
        rng: rng(i),
      }),
  );
  const r = simulate(parties);
  if (r.aborted.some((a) => a !== undefined)) throw new Error(`FROST DKG aborted: ${JSON.stringify(r.aborted)}`);
  return r.outputs as FrostKeyShare[];
}

/**
 * A threshold key holder. `label` must differ between holders used in one run: it seeds the
 * CGGMP21 presigning session ids and (TEST-ONLY) deterministic party randomness, together with a
 * per-holder counter, so no two ceremonies share randomness.
 */
export function thresholdKeyHolder(label: string): ThresholdKeyHolder {
  const shares = fixtureShares('2of3');
  const core = shares[0]?.core;
  if (core === undefined) throw new Error('no CGGMP fixture shares');
  const ecdsaMaster = { publicKey: secp256k1Group.encodePoint(core.publicKey), chainCode: core.chainCode };
  const frost = frostDkg(label);
  const f0 = frost[0] as FrostKeyShare;
  const schnorrMaster = { publicKey: f0.groupPublicKey, chainCode: f0.chainCode };
  const ecdsaOutputs = new Map<string, EcdsaSignature>();
  const schnorrOutputs = new Map<string, SignOutput>();
  const counts = { ecdsa: 0, schnorr: 0 };

  const derive = (scheme: SignatureScheme, d: DigestToSign) => {
    const master = scheme === 'ecdsa' ? ecdsaMaster : schnorrMaster;
    const child = deriveSecp256k1(master.publicKey, master.chainCode, [...d.key.path]);
    if (!equalBytes(child.publicKey, d.key.publicKey))
      throw new Error(`threshold signer: the ${scheme} key at path ${d.key.path.join('/')} is not the digest's key`);
    return child;
  };

  const signEcdsa = (d: DigestToSign): ChainSignature => {
    const child = derive('ecdsa', d);
    const n = counts.ecdsa++;
    const pre = runPresign(shares, ECDSA_SIGNERS, `chains-${label}-presign-${n}`);
    if (pre.aborted.some((a) => a !== undefined)) throw new Error('CGGMP21 presigning aborted');
    const res = runSign(pre.outputs as Presignature[], d.digest, `chains-${label}-sign-${n}`, {
      tweak: child.tweak,
    });
    if (res.aborted.some((a) => a !== undefined)) throw new Error('CGGMP21 signing aborted');
    const sig = res.outputs[0];
    if (sig === undefined || res.outputs.some((o) => o === undefined || !equalBytes(o.compact, sig.compact)))
      throw new Error('CGGMP21 signers disagree on the signature');
    if (!equalBytes(sig.publicKey, d.key.publicKey)) throw new Error('CGGMP21 signed under another key');
    // Recovery ids 2 and 3 (x(R) ≥ q) have probability ~2⁻¹²⁸; the chains' (r, s, v) forms have no room for them.
    if (sig.recovery > 1) throw new Error('CGGMP21 recovery id > 1 (x(R) ≥ q): sign again');
    ecdsaOutputs.set(bytesToHex(d.digest), sig);
    return {
      scheme: 'ecdsa',
      r: bytesToNumberBE(sig.compact.subarray(0, 32)),
      s: bytesToNumberBE(sig.compact.subarray(32, 64)),
      recovery: sig.recovery,
    };
  };

  const signSchnorr = (d: DigestToSign): ChainSignature => {
    derive('schnorr', d);
    if (d.taprootTweak === undefined) throw new Error('threshold signer: schnorr digest without taprootTweak');
    // The adapter's tweak must be FROST's BIP341 key-path tweak of the (derived) internal key.
    const expected = taprootTweak(d.key.publicKey.subarray(1), EMPTY_MERKLE_ROOT);
    if (expected.tweak !== bytesToNumberBE(d.taprootTweak))
      throw new Error('threshold signer: the adapter Taproot tweak is not BIP86 key-path H_TapTweak(x(P))');
    const n = counts.schnorr++;
    const signers = FROST_SIGNERS.map((i) => (frost[i] as FrostKeyShare).identifier);
    const parties = FROST_SIGNERS.map(
      (i, k) =>
        new Party(
          signProtocol({
            keyShare: frost[i] as FrostKeyShare,
            signers,
            message: d.digest,
            derivationPath: d.key.path,
            taproot: { merkleRoot: EMPTY_MERKLE_ROOT },
          }),
          { self: k, n: FROST_SIGNERS.length, sessionId: sessionId(`frost:${label}:${n}`), rng: systemRandom },
        ),
    );
    const res = simulate(parties);
    if (res.aborted.some((a) => a !== undefined)) throw new Error('FROST signing aborted');
    const out = res.outputs[0] as SignOutput;
    if (!equalBytes(out.verifyingKey, expected.outputKey))
      throw new Error('FROST output key differs from the BIP341 output key');
    if (!schnorr.verify(out.signature, d.digest, out.verifyingKey)) throw new Error('FROST signature does not verify');
    schnorrOutputs.set(bytesToHex(d.digest), out);
    return { scheme: 'schnorr', signature: out.signature };
  };

  return {
    ecdsaMaster,
    schnorrMaster,
    ecdsaOutputs,
    schnorrOutputs,
    counts,
    sign: async (d) => (d.scheme === 'ecdsa' ? signEcdsa(d) : signSchnorr(d)),
    source(path, toAddress, scheme = 'ecdsa') {
      const master = scheme === 'ecdsa' ? ecdsaMaster : schnorrMaster;
      const child = deriveSecp256k1(master.publicKey, master.chainCode, path);
      return { publicKey: child.publicKey, path: child.path, address: toAddress(child.publicKey) };
    },
  };
}

/** Signs every digest of a transfer with `signer`, in order. */
export async function signAll(signer: DigestSigner, digests: readonly DigestToSign[]): Promise<ChainSignature[]> {
  const out: ChainSignature[] = [];
  for (const d of digests) out.push(await signer(d));
  return out;
}
