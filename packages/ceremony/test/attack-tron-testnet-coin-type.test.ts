/**
 * Review finding 6 of issue #20 (TRON test networks share the mainnet key), as a compromised
 * coordinator: every TRON network used coin type 195, so an approval given on `tron-nile` signed
 * with the MAINNET wallet key — and since a TRON transaction has no chain id (its reference block,
 * which an offline signer cannot check, is what ties it to a network), a coordinator that picks a
 * mainnet reference block obtains a valid mainnet transaction moving mainnet funds. TRON test
 * networks now use coin type 1, as the Bitcoin-family test networks do: a Nile signature can only
 * ever be made with a test-network key (SENDER_MISMATCH for a 195 path on Nile; 195 stays mainnet's).
 * Nothing is written to the ledger (`verdict` asserts it).
 */
import { tronAddress } from '@custodian/chains';
import type { TransferIntent } from '@custodian/wire';
import { describe, expect, it } from 'vitest';
import {
  CHAINS,
  child,
  intent,
  mk,
  request,
  TRON_DEST,
  tempStore,
  tronContext,
  trustOf,
  verdict,
} from './attack-fixtures.js';

const store = tempStore('attack-tron-coin');

const MAINNET_PATH = [44, 195, 0, 0, 0];
const TESTNET_PATH = [44, 1, 0, 0, 0];

/** A TRX intent on `blockchain` signed with the wallet key at `path` (the sender the signer derives). */
function trx(blockchain: string, path: number[], assetId: string): TransferIntent {
  return intent({
    blockchain,
    asset_id: assetId,
    asset_symbol: 'TRX',
    asset_decimals: 6,
    source_address: tronAddress(child(mk.ecdsa, path)),
    destination_address: TRON_DEST,
    derivation_path: path,
    max_fee: '50000000',
  });
}
const NILE_TRX = '486092ed-4453-5e64-a4bb-901652b8dd9b';
const MAINNET_TRX = 'b60822ad-8a55-590f-b537-53deda035f8d';

/** A signer configured for TRON mainnet and Nile. */
const both = () =>
  trustOf(mk, { ...CHAINS, 'tron-mainnet': { family: 'tron', network: 'mainnet', maxFee: '100000000' } });

describe('attack: a TRON test-network approval signed with the mainnet key', () => {
  it('refuses a Nile transfer from a coin type 195 (mainnet) path (SENDER_MISMATCH)', async () => {
    const i = trx('tron-nile', MAINNET_PATH, NILE_TRX);
    expect(await verdict(store(), request(i, tronContext(MAINNET_PATH)), both())).toBe('SENDER_MISMATCH');
  });

  it('signs Nile transfers from coin type 1 paths: the test-network key is not the mainnet key', async () => {
    const i = trx('tron-nile', TESTNET_PATH, NILE_TRX);
    expect(await verdict(store(), request(i, tronContext(TESTNET_PATH)), both())).toBe('ACCEPTED');
    expect(tronAddress(child(mk.ecdsa, TESTNET_PATH))).not.toBe(tronAddress(child(mk.ecdsa, MAINNET_PATH)));
  });

  it('keeps coin type 195 on TRON mainnet, and refuses coin type 1 there (SENDER_MISMATCH)', async () => {
    const ok = trx('tron-mainnet', MAINNET_PATH, MAINNET_TRX);
    const mainnetCtx = (p: number[]) => tronContext(p, { network: 'mainnet' });
    expect(await verdict(store(), request(ok, mainnetCtx(MAINNET_PATH)), both())).toBe('ACCEPTED');
    const testKey = trx('tron-mainnet', TESTNET_PATH, MAINNET_TRX);
    expect(await verdict(store(), request(testKey, mainnetCtx(TESTNET_PATH)), both())).toBe('SENDER_MISMATCH');
  });
});
