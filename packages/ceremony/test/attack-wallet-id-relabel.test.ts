/**
 * Review of issue #20, finding 1 (HIGH), as a compromised coordinator: the intent's `wallet_id` is
 * a label the coordinator chooses. It labels a transfer of wallet 7 (path m/44/60/7/…, wallet 7's
 * source address, correctly derived) with the HOT wallet's id, so that a lenient policy scoped to
 * the hot wallet (one approval) — and the hot wallet's daily limit — govern wallet 7's funds.
 *
 * Must hold: wallet ids are derivable (`walletIdOf(key_id, wallet index)`, @custodian/wire) and the
 * signer refuses (`WALLET_MISMATCH`) an intent whose `wallet_id` is not
 * `walletIdOf(intent.key_id, derivation_path[2])`. Real path: `enforceTransferEvidence` on a real
 * encrypted store (attack-fixtures.ts).
 */
import { ethereumAddress } from '@custodian/chains';
import { signApproval, walletIdOf } from '@custodian/wire';
import { describe, expect, it } from 'vitest';
import {
  child,
  dev1,
  ethContext,
  intent,
  ltcContext,
  ltcIntent,
  mk,
  p2wpkhOf,
  request,
  tempStore,
  utxoInput,
  verdict,
  withPolicy,
} from './attack-fixtures.js';

const store = tempStore('attack-wallet-id');

const W7 = [44, 60, 7, 0, 0];
/** The hot wallet: wallet 0 of the key, with its real (derived) id. */
const HOT = walletIdOf('key-1', 0);
const hotOnly = {
  scope: { wallet_ids: [HOT], blockchain: null, asset_id: null },
  approvals: { quorum: 2, above_amount: '100000000' },
};

/** A 90 000 000-unit transfer of wallet 7 labelled `walletId`, approved by ONE device. */
function wallet7Transfer(walletId: string) {
  const i = intent({
    wallet_id: walletId,
    derivation_path: W7,
    source_address: ethereumAddress(child(mk.ecdsa, W7)),
    amount: '90000000',
  });
  return withPolicy(
    request(i, ethContext(W7), [signApproval(i, 'APPROVE', 'dev-1', dev1, '2026-03-04T10:00:01.000Z')]),
    hotOnly,
  );
}

describe('attack: a transfer of wallet 7 labelled with the hot wallet id', () => {
  it("the hot wallet's policy does not move wallet 7's funds (WALLET_MISMATCH)", async () => {
    expect(await verdict(store(), wallet7Transfer(HOT))).toBe('WALLET_MISMATCH');
  });

  it("with its own id, wallet 7 is outside the hot wallet's policy (POLICY_OUT_OF_SCOPE)", async () => {
    expect(await verdict(store(), wallet7Transfer(walletIdOf('key-1', 7)))).toBe('POLICY_OUT_OF_SCOPE');
  });

  it("another key's wallet id, or an id that is no wallet's, is refused (WALLET_MISMATCH)", async () => {
    expect(await verdict(store(), wallet7Transfer(walletIdOf('key-2', 7)))).toBe('WALLET_MISMATCH');
    expect(await verdict(store(), wallet7Transfer('22222222-2222-4222-8222-222222222222'))).toBe('WALLET_MISMATCH');
  });

  it("Bitcoin family: wallet 3's coins labelled with the hot wallet id are refused (WALLET_MISMATCH)", async () => {
    const path = [44, 1, 3, 0, 0];
    const pk = child(mk.ecdsa, path);
    const i = ltcIntent({ wallet_id: HOT, derivation_path: path, source_address: p2wpkhOf(pk) });
    const req = request(i, ltcContext(i, [utxoInput(pk, path, 200000n)], null));
    expect(await verdict(store(), req)).toBe('WALLET_MISMATCH');
    const own = ltcIntent({ derivation_path: path, source_address: p2wpkhOf(pk) });
    expect(own.wallet_id).toBe(walletIdOf('key-1', 3));
    expect(await verdict(store(), request(own, ltcContext(own, [utxoInput(pk, path, 200000n)], null)))).toBe(
      'ACCEPTED',
    );
  });
});
