/**
 * Issue #20 item 2 (EVM chain id, TRON network, Bitcoin-family network), as a compromised
 * coordinator: an approval given for one network must not yield a valid transaction on another.
 * Each signer maps every blockchain key it signs for to its chain id / network in its own
 * configuration: a mismatch is CHAIN_MISMATCH, a blockchain absent from it CHAIN_NOT_CONFIGURED;
 * nothing is written to the ledger.
 */
import { tronAddress } from '@custodian/chains';
import { describe, expect, it } from 'vitest';
import {
  CHAINS,
  child,
  ethContext,
  intent,
  ltcContext,
  ltcIntent,
  mk,
  request,
  TRON_DEST,
  tempStore,
  tronContext,
  trustOf,
  utxoInput,
  verdict,
} from './attack-fixtures.js';

const store = tempStore('attack-chain');

const ETH = [44, 60, 0, 0, 0];
const TRX = [44, 1, 0, 0, 0]; // Nile: a test network, coin type 1

function tronIntent() {
  return intent({
    blockchain: 'tron-nile',
    asset_symbol: 'TRX',
    asset_decimals: 6,
    source_address: tronAddress(child(mk.ecdsa, TRX)),
    destination_address: TRON_DEST,
    derivation_path: TRX,
    max_fee: '50000000',
  });
}

describe('attack: chain id / network of the coordinator', () => {
  it('accepts the configured chain id and networks', async () => {
    expect(await verdict(store(), request(intent(), ethContext(ETH)))).toBe('ACCEPTED');
    const t = tronIntent();
    expect(await verdict(store(), request(t, tronContext(TRX)))).toBe('ACCEPTED');
    const l = ltcIntent();
    const src = [...l.derivation_path];
    expect(
      await verdict(store(), request(l, ltcContext(l, [utxoInput(child(mk.ecdsa, src), src, 1_000_000n)], null))),
    ).toBe('ACCEPTED');
  });

  it('refuses an ethereum-local approval signed as a mainnet (chain id 1) transaction (CHAIN_MISMATCH)', async () => {
    expect(await verdict(store(), request(intent(), ethContext(ETH, { chainId: 1 })))).toBe('CHAIN_MISMATCH');
  });

  it('refuses a blockchain absent from the signer configuration (CHAIN_NOT_CONFIGURED)', async () => {
    const i = intent({ blockchain: 'ethereum-mainnet' });
    expect(await verdict(store(), request(i, ethContext(ETH, { chainId: 1 })))).toBe('CHAIN_NOT_CONFIGURED');
    // a signer configured for ethereum only refuses litecoin
    const l = ltcIntent();
    const src = [...l.derivation_path];
    const ethOnly = trustOf(mk, { 'ethereum-local': CHAINS['ethereum-local'] });
    expect(
      await verdict(
        store(),
        request(l, ltcContext(l, [utxoInput(child(mk.ecdsa, src), src, 1_000_000n)], null)),
        ethOnly,
      ),
    ).toBe('CHAIN_NOT_CONFIGURED');
  });

  it('refuses a TRON transaction of another network, or naming none (CHAIN_MISMATCH)', async () => {
    expect(await verdict(store(), request(tronIntent(), tronContext(TRX, { network: 'mainnet' })))).toBe(
      'CHAIN_MISMATCH',
    );
    const { network: _, ...none } = tronContext(TRX);
    expect(await verdict(store(), request(tronIntent(), none as ReturnType<typeof tronContext>))).toBe(
      'CHAIN_MISMATCH',
    );
  });

  it('refuses a Bitcoin-family context of another network than the configured one (CHAIN_MISMATCH)', async () => {
    // the signer maps litecoin-regtest to litecoin-testnet (another HRP): the regtest context is refused
    const l = ltcIntent();
    const src = [...l.derivation_path];
    const testnet = trustOf(mk, {
      ...CHAINS,
      'litecoin-regtest': { family: 'bitcoin', network: 'litecoin-testnet', maxFee: '1000000' },
    });
    expect(
      await verdict(
        store(),
        request(l, ltcContext(l, [utxoInput(child(mk.ecdsa, src), src, 1_000_000n)], null)),
        testnet,
      ),
    ).toBe('CHAIN_MISMATCH');
  });
});
