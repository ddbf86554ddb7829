/**
 * What the phone simulator presents for an approval request (issue #20 item 3): the fee cap the
 * approval binds (`TransferIntent.max_fee`, native base units) in the native asset's units with its
 * symbol, next to the amount — read from the intent the device signs, nothing else.
 */
import { parseChainsConfig } from '@custodian/ceremony';
import { assetId, type TransferIntent } from '@custodian/wire';
import { describe, expect, it } from 'vitest';
import { approvalEventFields, approvalRefusal, describeApproval, formatMaxFee } from '../src/approval-display.js';

function intent(over: Partial<TransferIntent> = {}): TransferIntent {
  return {
    transfer_id: '6f1c2a4e-8d0b-4a55-9e7c-1d2f3a4b5c6d',
    profile_id: '00000000-0000-4000-8000-000000000001',
    wallet_id: '00000000-0000-4000-8000-000000000002',
    blockchain: 'ethereum-mainnet',
    asset_id: assetId('ethereum-mainnet', 'USDT'),
    asset_symbol: 'USDT',
    asset_decimals: 6,
    asset_contract: '0xdAC17F958D2ee523a2206206994597C13D831ec7',
    source_address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
    destination_address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    amount: '1500000',
    derivation_path: [44, 60, 0, 0, 0],
    key_algorithm: 'SECP256K1_ECDSA',
    key_id: 'key-1',
    created_at: '2026-03-04T10:00:00.000Z',
    max_fee: '10000000000000000',
    ...over,
  };
}

describe('approval request display (mobile simulator)', () => {
  it('shows the fee cap in the native asset next to the amount in the asset', () => {
    const text = describeApproval(intent());
    expect(text).toContain('1.5 USDT on ethereum-mainnet, max fee 0.01 ETH');
    expect(approvalEventFields(intent())).toMatchObject({ amount: '1.5 USDT', max_fee: '0.01 ETH' });
  });

  it('each family in its native units: BTC, LTC, TRX', () => {
    expect(formatMaxFee({ blockchain: 'bitcoin-mainnet', max_fee: '100000' })).toBe('0.001 BTC');
    expect(formatMaxFee({ blockchain: 'litecoin-regtest', max_fee: '1000000' })).toBe('0.01 LTC');
    expect(formatMaxFee({ blockchain: 'tron-nile', max_fee: '50000000' })).toBe('50 TRX');
    expect(formatMaxFee({ blockchain: 'ethereum-local', max_fee: '7560000000000001' })).toBe(
      '0.007560000000000001 ETH',
    );
  });

  it('a raised cap (fee bump round) shows the raised value; a missing or malformed cap says so', () => {
    expect(describeApproval(intent({ max_fee: '25000000000000000' }))).toContain('max fee 0.025 ETH');
    expect(formatMaxFee({ blockchain: 'solana-mainnet', max_fee: '5000' })).toBe('5000 base units of the native asset');
    expect(formatMaxFee({ blockchain: 'ethereum-mainnet', max_fee: undefined as unknown as string })).toBe(
      'none stated',
    );
    expect(formatMaxFee({ blockchain: 'ethereum-mainnet', max_fee: '-1' })).toBe('none stated');
  });
});

describe("approval request check against the phone's own chains (before anything is shown)", () => {
  const USDT = '0xdAC17F958D2ee523a2206206994597C13D831ec7';
  const chains = parseChainsConfig({
    'ethereum-mainnet': {
      family: 'ethereum',
      chainId: 1,
      maxFee: '1',
      assets: { USDT: { contract: USDT, decimals: 6 } },
    },
  });

  it('shows a token transfer with its contract; the configured token passes the check', () => {
    expect(approvalRefusal(intent(), chains)).toBeUndefined();
    expect(describeApproval(intent())).toContain(`  token USDT, contract ${USDT}\n`);
    expect(approvalEventFields(intent())).toMatchObject({ asset_contract: USDT });
    const eth = intent({
      asset_id: assetId('ethereum-mainnet', 'ETH'),
      asset_symbol: 'ETH',
      asset_decimals: 18,
      asset_contract: null,
    });
    expect(approvalRefusal(eth, chains)).toBeUndefined();
    expect(describeApproval(eth)).not.toContain('token');
    expect(approvalEventFields(eth)).not.toHaveProperty('asset_contract');
  });

  it("refuses what the signers would refuse: another token's contract, other decimals, another asset id, an unknown chain", () => {
    const refused = (over: Partial<TransferIntent>) => approvalRefusal(intent(over), chains)?.code;
    expect(refused({ asset_contract: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48' })).toBe('ASSET_MISMATCH');
    expect(refused({ asset_decimals: 18 })).toBe('ASSET_MISMATCH');
    expect(refused({ asset_id: assetId('ethereum-mainnet', 'USDC') })).toBe('ASSET_MISMATCH');
    expect(
      refused({
        asset_contract: null,
        asset_symbol: 'ETH',
        asset_decimals: 30,
        asset_id: assetId('ethereum-mainnet', 'ETH'),
      }),
    ).toBe('ASSET_MISMATCH');
    expect(refused({ blockchain: 'ethereum-sepolia' })).toBe('CHAIN_NOT_CONFIGURED');
    // without a configuration the phone cannot check (and signs nothing enforced)
    expect(approvalRefusal(intent({ asset_decimals: 18 }), undefined)).toBeUndefined();
  });
});
