/**
 * Review finding 3 of issue #20 (asset identity), as a compromised coordinator: the token and what
 * the phone shows of it (asset_id, asset_symbol, asset_decimals) must be tied to something the
 * signer knows. An intent saying "USDC" (6 decimals, USDC's asset id) with another token's
 * contract passed a USDC-scoped policy — limits applied in the wrong token's units while the phone
 * showed "USDC"; a native intent could carry any `asset_decimals` (30 shows 10⁻¹² of the amount).
 * The signer now takes every token it signs for from its own `chains.<key>.assets`, the native
 * asset from the chain's family / network, and the asset id from the directory's UUIDv5: anything
 * else is ASSET_MISMATCH, and nothing is written to the ledger (`verdict` asserts it).
 */
import { tronAddress } from '@custodian/chains';
import { type PolicyDocument, type SignRequest, signPolicy, type TransferIntent } from '@custodian/wire';
import { describe, expect, it } from 'vitest';
import {
  adminSk,
  CHAINS,
  child,
  ethContext,
  intent,
  mk,
  request,
  TRON_DEST,
  TRON_USDT,
  tempStore,
  tronContext,
  trustOf,
  verdict,
} from './attack-fixtures.js';

const store = tempStore('attack-asset');

/** Directory ids (UUIDv5 of `asset:<blockchain>:<symbol>`), pinned: they are the same on every instance. */
const ID = {
  ETH: '3bac3b26-2571-5379-b170-2209643ccf33', // ethereum-local ETH
  USDC: '8aa6d6c8-1fc0-5a2c-a48b-a10534e21e7e', // ethereum-local USDC
  TRX: '486092ed-4453-5e64-a4bb-901652b8dd9b', // tron-nile TRX
  USDT: 'fca0b6b8-6aac-5321-9e4d-c1d67cbd85e3', // tron-nile USDT
};
const USDC = '0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238';
const WBTC = '0x2260FAC5E5542a773Aa44fBCfeDf7C193bc2C599';
const OTHER_TRC20 = tronAddress(child(mk.tr, [9, 9]));

/** The signer's configuration: USDC on the local EVM chain, USDT on Nile. */
const trust = () =>
  trustOf(mk, {
    ...CHAINS,
    'ethereum-local': { ...CHAINS['ethereum-local'], assets: { USDC: { contract: USDC, decimals: 6 } } },
    'tron-nile': { ...CHAINS['tron-nile'], assets: { USDT: { contract: TRON_USDT, decimals: 6 } } },
  });

const ETH = [44, 60, 0, 0, 0];
const TRX = [44, 1, 0, 0, 0];

function ethIntent(over: Partial<TransferIntent> = {}): TransferIntent {
  return intent({ asset_id: ID.ETH, ...over });
}
function usdcIntent(over: Partial<TransferIntent> = {}): TransferIntent {
  return ethIntent({ asset_id: ID.USDC, asset_symbol: 'USDC', asset_decimals: 6, asset_contract: USDC, ...over });
}
function tronIntent(over: Partial<TransferIntent> = {}): TransferIntent {
  return intent({
    blockchain: 'tron-nile',
    asset_id: ID.TRX,
    asset_symbol: 'TRX',
    asset_decimals: 6,
    source_address: tronAddress(child(mk.ecdsa, TRX)),
    destination_address: TRON_DEST,
    derivation_path: TRX,
    max_fee: '50000000',
    ...over,
  });
}
const usdtOver = { asset_id: ID.USDT, asset_symbol: 'USDT', asset_contract: TRON_USDT };

const tokenCtx = () => ethContext(ETH, { gas: '60000', maxFeePerGas: '2000000000' });
const trc20Ctx = () => tronContext(TRX, { feeLimit: '30000000' });

/** The request under a policy scoped to one asset id (the review's USDC-scoped policy). */
function scopedTo(req: SignRequest, assetId: string): SignRequest {
  const base = JSON.parse(req.evidence?.policyJson ?? '{}').document as PolicyDocument;
  const p = signPolicy({ ...base, scope: { wallet_ids: null, blockchain: null, asset_id: assetId } }, 'admin', adminSk);
  return { ...req, evidence: { ...req.evidence, policyJson: JSON.stringify(p) } } as SignRequest;
}

describe('attack: asset identity and display data of the coordinator', () => {
  it('accepts the native coins and the configured tokens with their directory ids', async () => {
    expect(await verdict(store(), request(ethIntent(), ethContext(ETH)), trust())).toBe('ACCEPTED');
    expect(await verdict(store(), scopedTo(request(usdcIntent(), tokenCtx()), ID.USDC), trust())).toBe('ACCEPTED');
    // EVM contracts compare case-insensitively (the address is the same 20 bytes)
    const lower = usdcIntent({ asset_contract: USDC.toLowerCase() });
    expect(await verdict(store(), request(lower, tokenCtx()), trust())).toBe('ACCEPTED');
    expect(await verdict(store(), request(tronIntent(), tronContext(TRX)), trust())).toBe('ACCEPTED');
    expect(await verdict(store(), request(tronIntent(usdtOver), trc20Ctx()), trust())).toBe('ACCEPTED');
  });

  it("refuses an intent naming USDC (id, symbol, decimals) with another token's contract under a USDC policy (ASSET_MISMATCH)", async () => {
    const i = usdcIntent({ asset_contract: WBTC, amount: '1000' });
    expect(await verdict(store(), scopedTo(request(i, tokenCtx()), ID.USDC), trust())).toBe('ASSET_MISMATCH');
  });

  it('refuses a native coin with other decimals or another symbol (ASSET_MISMATCH)', async () => {
    // decimals 30: the phone would show 10⁻¹² of the real amount
    expect(await verdict(store(), request(ethIntent({ asset_decimals: 30 }), ethContext(ETH)), trust())).toBe(
      'ASSET_MISMATCH',
    );
    const asUsdc = ethIntent({ asset_id: ID.USDC, asset_symbol: 'USDC', asset_decimals: 6 });
    expect(await verdict(store(), request(asUsdc, ethContext(ETH)), trust())).toBe('ASSET_MISMATCH');
    expect(await verdict(store(), request(tronIntent({ asset_decimals: 18 }), tronContext(TRX)), trust())).toBe(
      'ASSET_MISMATCH',
    );
  });

  it('refuses an asset_id that is not the directory id of (blockchain, symbol) (ASSET_MISMATCH)', async () => {
    const i = usdcIntent({ asset_id: 'usdc-asset-id' });
    expect(await verdict(store(), scopedTo(request(i, tokenCtx()), 'usdc-asset-id'), trust())).toBe('ASSET_MISMATCH');
    expect(await verdict(store(), request(ethIntent({ asset_id: ID.USDC }), ethContext(ETH)), trust())).toBe(
      'ASSET_MISMATCH',
    );
    // the id of the same symbol on another blockchain
    const nileUsdt = tronIntent({ ...usdtOver, asset_id: 'b91f8d56-5785-5ec2-b638-0e422af073b5' });
    expect(await verdict(store(), request(nileUsdt, trc20Ctx()), trust())).toBe('ASSET_MISMATCH');
  });

  it('refuses a token absent from the configuration, or with other decimals (ASSET_MISMATCH)', async () => {
    const dai = ethIntent({ asset_id: ID.USDC, asset_symbol: 'DAI', asset_decimals: 18, asset_contract: WBTC });
    expect(await verdict(store(), request(dai, tokenCtx()), trust())).toBe('ASSET_MISMATCH');
    expect(await verdict(store(), request(usdcIntent({ asset_decimals: 18 }), tokenCtx()), trust())).toBe(
      'ASSET_MISMATCH',
    );
    // a signer without `assets` signs no token at all
    expect(await verdict(store(), request(usdcIntent(), tokenCtx()), trustOf(mk, CHAINS))).toBe('ASSET_MISMATCH');
  });

  it('refuses a TRC-20 intent naming USDT with another contract (ASSET_MISMATCH)', async () => {
    const i = tronIntent({ ...usdtOver, asset_contract: OTHER_TRC20 });
    expect(await verdict(store(), request(i, trc20Ctx()), trust())).toBe('ASSET_MISMATCH');
  });
});
