/**
 * UTXO consolidation planning (self-spend.ts `planConsolidation`, pure): which UTXOs are spent,
 * the fee, and the 422 refusals (fewer than 2 qualify, result below dust).
 */
import { estimateVsize, LITECOIN_REGTEST, type Utxo, utxoAddress } from '@custodian/chains';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../src/errors.js';
import { planConsolidation } from '../src/transfers/self-spend.js';

const address = utxoAddress(
  LITECOIN_REGTEST,
  secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true),
  'p2wpkh',
);
const utxo = (n: number, value: bigint): Utxo => ({ txid: n.toString(16).padStart(64, '0'), vout: 0, value, address });
const base = {
  maxInputs: 50,
  reserved: new Set<string>(),
  rate: 20,
  vsizeOf: (k: readonly ('p2wpkh' | 'p2tr')[]) => estimateVsize(LITECOIN_REGTEST, k, address),
  dust: 294n,
};

describe('planConsolidation', () => {
  it('smallest first, below the bound, at most max_inputs, reserved outpoints left out; fee = ceil(rate × vsize)', () => {
    const utxos = [utxo(1, 500_000n), utxo(2, 10_000n), utxo(3, 30_000n), utxo(4, 20_000n), utxo(5, 90_000_000n)];
    const p = planConsolidation(utxos, {
      ...base,
      below: 1_000_000n,
      maxInputs: 3,
      reserved: new Set([`${utxo(2, 0n).txid}:0`]),
    });
    expect(p.chosen.map((u) => u.value)).toEqual([20_000n, 30_000n, 500_000n]);
    const vsize = estimateVsize(LITECOIN_REGTEST, ['p2wpkh', 'p2wpkh', 'p2wpkh'], address);
    expect(p.fee).toBe(BigInt(Math.ceil(20 * vsize)));
    expect(p.amount).toBe(550_000n - p.fee);
  });

  it('refuses (422) when fewer than 2 UTXOs qualify', () => {
    const utxos = [utxo(1, 500_000n), utxo(2, 90_000_000n)];
    const run = () => planConsolidation(utxos, { ...base, below: 1_000_000n });
    expect(run).toThrow(ApiError);
    expect(run).toThrow(/1 UTXO\(s\) qualify/);
    expect(() => planConsolidation([], base)).toThrow(/at least 2/);
  });

  it('refuses (422) when the consolidated output would be dust', () => {
    // two 1 800-litoshi outputs at 20 lit/vB: the fee (3 550 for 177.5 vB) leaves 50, below dust
    const run = () => planConsolidation([utxo(1, 1_800n), utxo(2, 1_800n)], base);
    expect(run).toThrow(/below dust/);
    try {
      run();
    } catch (e) {
      expect((e as ApiError).code).toBe('VALIDATION_FAILED');
    }
  });
});
