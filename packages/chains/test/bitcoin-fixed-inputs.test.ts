/**
 * Self-spend builds over FIXED inputs (`BitcoinAdapter.buildFixedInputs`: consolidation and CPFP
 * child) and the CPFP child's fee arithmetic (`cpfpChildFee`). Pure: no node is called (the RPC
 * points nowhere), signatures are real secp256k1 signatures of the BIP143 digests.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import {
  BitcoinAdapter,
  BitcoinRpc,
  cpfpChildFee,
  estimateVsize,
  type FixedInput,
  LITECOIN_REGTEST,
  utxoAddress,
} from '../src/index.js';

const rpc = new BitcoinRpc({ url: 'http://127.0.0.1:1', username: 'x', password: 'x' });
const adapter = new BitcoinAdapter({ network: LITECOIN_REGTEST, rpc });
const sk = secp256k1.utils.randomSecretKey();
const pub = secp256k1.getPublicKey(sk, true);
const own = utxoAddress(LITECOIN_REGTEST, pub, 'p2wpkh');
const txid = (n: number) => n.toString(16).padStart(64, '0');
const input = (n: number, value: bigint): FixedInput => ({
  txid: txid(n),
  vout: n % 3,
  value,
  address: own,
  publicKey: pub,
  path: [0, 0],
});
const fields = (amount: bigint) => ({
  destination: own,
  amount,
  asset: { kind: 'native' as const },
});

describe('BitcoinAdapter.buildFixedInputs (self-spend)', () => {
  it('spends exactly the given inputs in order, one output, no change; fee = Σ inputs − amount', () => {
    const inputs = [input(1, 100_000n), input(2, 250_000n), input(3, 40_000n)];
    const u = adapter.buildFixedInputs(fields(385_000n), inputs);
    expect(u.context.inputs.map((i) => `${i.txid}:${i.vout}`)).toEqual(inputs.map((i) => `${i.txid}:${i.vout}`));
    expect(u.context.change).toBeNull();
    expect(u.context.fee).toBe('5000');
    expect(u.maxFee).toBe(5000n);
    expect(u.digests.length).toBe(3);
    // signed with the key of the inputs, the transaction has 3 inputs and 1 output
    const sigs = u.digests.map((d) => {
      const s = secp256k1.sign(d.digest, sk, { prehash: false, format: 'recovered' });
      const sig = secp256k1.Signature.fromBytes(s, 'recovered');
      return { scheme: 'ecdsa' as const, r: sig.r, s: sig.s, recovery: sig.recovery ?? 0 };
    });
    const signed = adapter.attachSignatures(u, sigs);
    expect(signed.txid).toMatch(/^[0-9a-f]{64}$/);
    // fee rate recorded = fee / estimated vsize
    const vsize = estimateVsize(LITECOIN_REGTEST, ['p2wpkh', 'p2wpkh', 'p2wpkh'], own);
    expect(Number(u.context.feeRate)).toBeCloseTo(5000 / vsize, 6);
  });

  it('refuses inputs that do not pay the amount and a fee, and a key not owning the input address', () => {
    expect(() => adapter.buildFixedInputs(fields(100_000n), [input(1, 100_000n)])).toThrow(/do not pay/);
    expect(() => adapter.buildFixedInputs(fields(200n), [input(1, 1_000n)])).toThrow(/dust/);
    const other = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true);
    expect(() => adapter.buildFixedInputs(fields(50_000n), [{ ...input(1, 100_000n), publicKey: other }])).toThrow(
      /does not own/,
    );
    expect(() => adapter.buildFixedInputs(fields(50_000n), [])).toThrow(/at least one input/);
  });
});

describe('cpfpChildFee', () => {
  it('lifts the package (parent + child) to the target rate', () => {
    // parent 141 vB paid 2820 (20/vB); child 110 vB; target 40/vB → 40 × 251 − 2820 = 7220
    const fee = cpfpChildFee({ parentVsize: 141, parentFee: 2820n, childVsize: 110, targetRate: 40, minRate: 10 });
    expect(fee).toBe(7220n);
    expect(Number(2820n + fee) / (141 + 110)).toBeGreaterThanOrEqual(40);
    // estimated (fractional) sizes count as whole vbytes, as the node's vsize = ⌈weight / 4⌉
    expect(cpfpChildFee({ parentVsize: 140.5, parentFee: 0n, childVsize: 109.5, targetRate: 3, minRate: 1 })).toBe(
      753n,
    );
  });

  it('never below what the child alone needs at the relay rate (a parent already above target)', () => {
    const fee = cpfpChildFee({ parentVsize: 141, parentFee: 100_000n, childVsize: 110, targetRate: 40, minRate: 10 });
    expect(fee).toBe(1100n);
  });

  it('refuses a negative or non-finite size or rate', () => {
    expect(() =>
      cpfpChildFee({ parentVsize: -1, parentFee: 0n, childVsize: 110, targetRate: 40, minRate: 10 }),
    ).toThrow(RangeError);
    expect(() =>
      cpfpChildFee({ parentVsize: 1, parentFee: 0n, childVsize: 110, targetRate: Number.NaN, minRate: 10 }),
    ).toThrow(RangeError);
  });
});
