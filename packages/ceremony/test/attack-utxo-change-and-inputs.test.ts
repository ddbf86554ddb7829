/**
 * Issue #20 item 1 (Bitcoin family — change and inputs), as a compromised coordinator: the change
 * output and every input's key come from the chain context the coordinator writes. The signer must
 * derive the key of every input (from its path, a path of the intent's wallet) and of the change
 * (a path of the same wallet, branch 0 or 1) from its OWN key record, and refuse anything else
 * with INPUT_KEY_MISMATCH / CHANGE_MISMATCH; a refusal writes nothing to the ledger.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import {
  child,
  foreignMk,
  ltcContext,
  ltcIntent,
  mk,
  request,
  tempStore,
  utxoInput,
  verdict,
} from './attack-fixtures.js';

const store = tempStore('attack-utxo');

const SRC = [44, 1, 0, 0, 0];
const COIN = 100_000_000n; // 1 LTC

describe('attack: UTXO change and input keys chosen by the coordinator', () => {
  it('accepts the honest transfer: input of the source key, change back to the source address', async () => {
    const i = ltcIntent();
    const ctx = ltcContext(i, [utxoInput(child(mk.ecdsa, SRC), SRC, COIN)], {
      pk: child(mk.ecdsa, SRC),
      path: SRC,
      value: COIN - 100_000n - 5_000n,
    });
    expect(await verdict(store(), request(i, ctx))).toBe('ACCEPTED');
  });

  it('accepts change to a change address of the same wallet (branch 1)', async () => {
    const i = ltcIntent();
    const changePath = [44, 1, 0, 1, 7];
    const ctx = ltcContext(i, [utxoInput(child(mk.ecdsa, SRC), SRC, COIN)], {
      pk: child(mk.ecdsa, changePath),
      path: changePath,
      value: COIN - 100_000n - 5_000n,
    });
    expect(await verdict(store(), request(i, ctx))).toBe('ACCEPTED');
  });

  it('refuses change paid to a key the coordinator holds (CHANGE_MISMATCH)', async () => {
    const i = ltcIntent();
    const attacker = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true);
    const ctx = ltcContext(i, [utxoInput(child(mk.ecdsa, SRC), SRC, COIN)], {
      pk: attacker,
      path: [44, 1, 0, 1, 0], // claims a change path of the wallet
      value: COIN - 100_000n - 5_000n,
    });
    expect(await verdict(store(), request(i, ctx))).toBe('CHANGE_MISMATCH');
  });

  it("refuses change to another wallet's address, to another master key, and outside branches 0/1 (CHANGE_MISMATCH)", async () => {
    const value = COIN - 100_000n - 5_000n;
    const input = () => [utxoInput(child(mk.ecdsa, SRC), SRC, COIN)];
    const otherWallet = [44, 1, 5, 1, 0];
    let i = ltcIntent();
    expect(
      await verdict(
        store(),
        request(i, ltcContext(i, input(), { pk: child(mk.ecdsa, otherWallet), path: otherWallet, value })),
      ),
    ).toBe('CHANGE_MISMATCH');
    i = ltcIntent();
    expect(
      await verdict(store(), request(i, ltcContext(i, input(), { pk: child(foreignMk.ecdsa, SRC), path: SRC, value }))),
    ).toBe('CHANGE_MISMATCH');
    const branch2 = [44, 1, 0, 2, 0];
    i = ltcIntent();
    expect(
      await verdict(
        store(),
        request(i, ltcContext(i, input(), { pk: child(mk.ecdsa, branch2), path: branch2, value })),
      ),
    ).toBe('CHANGE_MISMATCH');
    // P2TR change of the ECDSA key: no signer key can spend it (Taproot signs with the Taproot key)
    i = ltcIntent();
    expect(
      await verdict(
        store(),
        request(i, ltcContext(i, input(), { pk: child(mk.ecdsa, SRC), path: SRC, value, kind: 'p2tr' })),
      ),
    ).toBe('CHANGE_MISMATCH');
  });

  it('refuses an input whose key is not the one the signer derives for its path (INPUT_KEY_MISMATCH)', async () => {
    const i = ltcIntent();
    const foreign = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true);
    const ctx = ltcContext(i, [utxoInput(child(mk.ecdsa, SRC), SRC, COIN), utxoInput(foreign, SRC, 10n * COIN)], {
      pk: child(mk.ecdsa, SRC),
      path: SRC,
      value: 11n * COIN - 100_000n - 5_000n,
    });
    expect(await verdict(store(), request(i, ctx))).toBe('INPUT_KEY_MISMATCH');
  });

  it("refuses an input of another wallet's path or of another coin type (INPUT_KEY_MISMATCH)", async () => {
    for (const path of [
      [44, 1, 3, 0, 0],
      [44, 60, 0, 0, 0],
      [44, 1, 0, 4, 0],
    ]) {
      const i = ltcIntent();
      const ctx = ltcContext(i, [utxoInput(child(mk.ecdsa, path), path, COIN)], {
        pk: child(mk.ecdsa, SRC),
        path: SRC,
        value: COIN - 100_000n - 5_000n,
      });
      expect(await verdict(store(), request(i, ctx)), path.join('/')).toBe('INPUT_KEY_MISMATCH');
    }
  });
});
