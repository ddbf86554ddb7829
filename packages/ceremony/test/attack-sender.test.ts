/**
 * Issue #20 item 4 (sender), as a compromised coordinator: approvers are shown one wallet while
 * another wallet's key signs. The signer derives the child key of (key_id, intent.derivation_path)
 * from its own key record and refuses (SENDER_MISMATCH) when the context's sender (`from`,
 * `fromPublicKey`) or the intent's `source_address` is not that key's address, or when the path is
 * not a wallet path `m/44/{coin_type}/{wallet}/{0|1}/{index}` of the configured coin type.
 */
import { ethereumAddress, tronAddress } from '@custodian/chains';
import { bytesToHex } from '@custodian/crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import {
  child,
  ethContext,
  intent,
  ltcContext,
  ltcIntent,
  mk,
  p2trOf,
  p2wpkhOf,
  request,
  TRON_DEST,
  tempStore,
  tronContext,
  utxoInput,
  verdict,
} from './attack-fixtures.js';

const store = tempStore('attack-sender');

const W0 = [44, 60, 0, 0, 0];
const W1 = [44, 60, 1, 0, 0];

describe("attack: another wallet's key signs what the approvers saw as this wallet", () => {
  it("EVM: approvers see wallet 0's address, the path is wallet 1's (SENDER_MISMATCH)", async () => {
    // the signature would be made by wallet 1's key: wallet 1's funds move
    const i = intent({ derivation_path: W1 }); // source_address stays wallet 0's
    const ctx = { ...ethContext(W0), fromPath: W1 };
    expect(await verdict(store(), request(i, ctx))).toBe('SENDER_MISMATCH');
  });

  it('EVM: a context sender key that is not derived from the key record (SENDER_MISMATCH)', async () => {
    const foreign = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true);
    const i = intent({ source_address: ethereumAddress(foreign) });
    const ctx = ethContext(W0, { from: ethereumAddress(foreign), fromPublicKey: bytesToHex(foreign) });
    expect(await verdict(store(), request(i, ctx))).toBe('SENDER_MISMATCH');
  });

  it('EVM: a derivation path that is not a wallet path of the chain (SENDER_MISMATCH)', async () => {
    for (const path of [
      [44, 195, 0, 0, 0], // TRON's coin type on an Ethereum chain
      [44, 60, 0, 2, 0], // branch 2
      [44, 60, 0, 0], // too short
      [0, 1],
    ]) {
      const pk = child(mk.ecdsa, path);
      const i = intent({ derivation_path: path, source_address: ethereumAddress(pk) });
      expect(await verdict(store(), request(i, ethContext(path))), path.join('/')).toBe('SENDER_MISMATCH');
    }
  });

  it("TRON: approvers see wallet 0's address, wallet 1's key signs (SENDER_MISMATCH)", async () => {
    const t0 = [44, 1, 0, 0, 0];
    const t1 = [44, 1, 1, 0, 0];
    const i = intent({
      blockchain: 'tron-nile',
      asset_symbol: 'TRX',
      asset_decimals: 6,
      source_address: tronAddress(child(mk.ecdsa, t0)),
      destination_address: TRON_DEST,
      derivation_path: t1,
      max_fee: '50000000',
    });
    expect(await verdict(store(), request(i, { ...tronContext(t0), fromPath: t1 }))).toBe('SENDER_MISMATCH');
  });

  it("UTXO: the intent's source address is wallet 0's, the inputs are wallet 1's (SENDER_MISMATCH)", async () => {
    const l1 = [44, 1, 1, 0, 0];
    const i = ltcIntent({ derivation_path: l1 }); // source_address: wallet 0's
    const ctx = ltcContext(i, [utxoInput(child(mk.ecdsa, l1), l1, 1_000_000n)], {
      pk: child(mk.ecdsa, l1),
      path: l1,
      value: 1_000_000n - 100_000n - 5_000n,
    });
    expect(await verdict(store(), request(i, ctx))).toBe('SENDER_MISMATCH');
    // honest: wallet 1's own address as the source
    const j = ltcIntent({ derivation_path: l1, source_address: p2wpkhOf(child(mk.ecdsa, l1)) });
    const ok = ltcContext(j, [utxoInput(child(mk.ecdsa, l1), l1, 1_000_000n)], {
      pk: child(mk.ecdsa, l1),
      path: l1,
      value: 1_000_000n - 100_000n - 5_000n,
    });
    expect(await verdict(store(), request(j, ok))).toBe('ACCEPTED');
  });

  it('UTXO Taproot: the P2TR sender is the Taproot key of the record, not the ECDSA key (SENDER_MISMATCH)', async () => {
    const p = [44, 1, 0, 0, 0];
    const honest = child(mk.tr, p);
    const j = ltcIntent({ key_algorithm: 'SECP256K1_TAPROOT', source_address: p2trOf(honest) });
    const ok = ltcContext(j, [utxoInput(honest, p, 1_000_000n, 'p2tr')], {
      pk: honest,
      path: p,
      value: 1_000_000n - 100_000n - 5_000n,
      kind: 'p2tr',
    });
    expect(await verdict(store(), request(j, ok))).toBe('ACCEPTED');
    const wrong = child(mk.ecdsa, p);
    const k = ltcIntent({ key_algorithm: 'SECP256K1_TAPROOT', source_address: p2trOf(wrong) });
    const bad = ltcContext(k, [utxoInput(wrong, p, 1_000_000n, 'p2tr')], {
      pk: wrong,
      path: p,
      value: 1_000_000n - 100_000n - 5_000n,
      kind: 'p2tr',
    });
    expect(await verdict(store(), request(k, bad))).toBe('SENDER_MISMATCH');
  });
});
