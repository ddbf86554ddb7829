/**
 * Issue #28 (one ceremony, several keys), as a compromised coordinator: `SignRequest.digestKeys`
 * names the key each digest is signed with. The signer must accept only the keys it recomputes
 * from the chain context itself (each input's scheme and path, on the intent's wallet), refuse a
 * per-digest key the context does not give (DIGEST_MISMATCH), an input of another wallet
 * (INPUT_KEY_MISMATCH), change to a receiving address that is not the source (CHANGE_MISMATCH), and
 * per-digest keys other than the intent's on an account chain (DIGEST_MISMATCH).
 */
import { KeyAlgorithm, type SignRequest } from '@custodian/wire';
import { describe, expect, it } from 'vitest';
import {
  child,
  ethContext,
  intent,
  ltcContext,
  ltcIntent,
  mk,
  p2trOf,
  request,
  tempStore,
  utxoInput,
  verdict,
} from './attack-fixtures.js';

const store = tempStore('attack-digest-keys');

const SRC = [44, 1, 0, 0, 0];
const TR = [44, 1, 0, 0, 3];
const COIN = 100_000_000n;
const ECDSA = KeyAlgorithm.SECP256K1_ECDSA;
const TAPROOT = KeyAlgorithm.SECP256K1_TAPROOT;

const withKeys = (req: SignRequest, keys: [number, number[]][]): SignRequest => ({
  ...req,
  digestKeys: keys.map(([algorithm, derivationPath]) => ({ algorithm, derivationPath })),
});

/** A P2WPKH input at SRC and a P2TR input at TR of wallet 0, change to a change address. */
function mixed(changePath = [44, 1, 0, 1, 2]) {
  const i = ltcIntent();
  const ctx = ltcContext(
    i,
    [utxoInput(child(mk.ecdsa, SRC), SRC, COIN), utxoInput(child(mk.tr, TR), TR, COIN, 'p2tr')],
    { pk: child(mk.ecdsa, changePath), path: changePath, value: 2n * COIN - 100_000n - 9_000n },
  );
  return request(i, ctx);
}

describe('attack: per-digest keys of a UTXO transaction chosen by the coordinator', () => {
  it('accepts P2WPKH and P2TR inputs of two addresses of the wallet, each with its own key', async () => {
    const req = withKeys(mixed(), [
      [ECDSA, SRC],
      [TAPROOT, TR],
    ]);
    expect(await verdict(store(), req)).toBe('ACCEPTED');
  });

  it('accepts a Taproot intent spending two P2TR addresses of its wallet', async () => {
    const other = [44, 1, 0, 1, 9];
    const tr = ltcIntent({
      key_algorithm: 'SECP256K1_TAPROOT',
      source_address: p2trOf(child(mk.tr, TR)),
      derivation_path: TR,
    });
    const ctx = ltcContext(
      tr,
      [utxoInput(child(mk.tr, TR), TR, COIN, 'p2tr'), utxoInput(child(mk.tr, other), other, COIN, 'p2tr')],
      {
        pk: child(mk.tr, [44, 1, 0, 1, 10]),
        path: [44, 1, 0, 1, 10],
        value: 2n * COIN - 100_000n - 9_000n,
        kind: 'p2tr',
      },
    );
    const req = withKeys(request(tr, ctx), [
      [TAPROOT, TR],
      [TAPROOT, other],
    ]);
    expect(await verdict(store(), req)).toBe('ACCEPTED');
  });

  it('refuses a mixed transaction without per-digest keys (DIGEST_MISMATCH)', async () => {
    expect(await verdict(store(), mixed())).toBe('DIGEST_MISMATCH');
  });

  it("refuses a P2TR input's digest labelled ECDSA (DIGEST_MISMATCH)", async () => {
    const req = withKeys(mixed(), [
      [ECDSA, SRC],
      [ECDSA, TR],
    ]);
    expect(await verdict(store(), req)).toBe('DIGEST_MISMATCH');
  });

  it('refuses a per-digest key at another path than its input (DIGEST_MISMATCH)', async () => {
    const req = withKeys(mixed(), [
      [ECDSA, SRC],
      [TAPROOT, [44, 1, 0, 0, 4]],
    ]);
    expect(await verdict(store(), req)).toBe('DIGEST_MISMATCH');
  });

  it('refuses per-digest keys fewer or more than the digests (DIGEST_MISMATCH)', async () => {
    expect(await verdict(store(), withKeys(mixed(), [[ECDSA, SRC]]))).toBe('DIGEST_MISMATCH');
    const three = withKeys(mixed(), [
      [ECDSA, SRC],
      [TAPROOT, TR],
      [TAPROOT, TR],
    ]);
    expect(await verdict(store(), three)).toBe('DIGEST_MISMATCH');
  });

  it("refuses spending wallet B's coins under wallet A's approved intent (INPUT_KEY_MISMATCH)", async () => {
    const walletB = [44, 1, 7, 0, 0];
    for (const kind of ['p2wpkh', 'p2tr'] as const) {
      const i = ltcIntent();
      const pk = child(kind === 'p2tr' ? mk.tr : mk.ecdsa, walletB);
      const ctx = ltcContext(i, [utxoInput(child(mk.ecdsa, SRC), SRC, COIN), utxoInput(pk, walletB, COIN, kind)], {
        pk: child(mk.ecdsa, SRC),
        path: SRC,
        value: 2n * COIN - 100_000n - 9_000n,
      });
      const req = withKeys(request(i, ctx), [
        [ECDSA, SRC],
        [kind === 'p2tr' ? TAPROOT : ECDSA, walletB],
      ]);
      expect(await verdict(store(), req), kind).toBe('INPUT_KEY_MISMATCH');
    }
  });

  it('refuses change to a receiving (branch 0) address of the wallet that is not the source (CHANGE_MISMATCH)', async () => {
    const i = ltcIntent();
    const receiving = [44, 1, 0, 0, 5];
    const ctx = ltcContext(i, [utxoInput(child(mk.ecdsa, SRC), SRC, COIN)], {
      pk: child(mk.ecdsa, receiving),
      path: receiving,
      value: COIN - 100_000n - 5_000n,
    });
    expect(await verdict(store(), request(i, ctx))).toBe('CHANGE_MISMATCH');
  });

  it('refuses per-digest keys of another path on an Ethereum request (DIGEST_MISMATCH)', async () => {
    const path = [44, 60, 0, 0, 0];
    const req = request(intent(), ethContext(path));
    expect(await verdict(store(), withKeys(req, [[ECDSA, [44, 60, 0, 0, 1]]]))).toBe('DIGEST_MISMATCH');
    expect(await verdict(store(), withKeys(req, [[TAPROOT, path]]))).toBe('DIGEST_MISMATCH');
    // the intent's own key, named per digest, is what it signs anyway
    expect(await verdict(store(), withKeys(request(intent(), ethContext(path)), [[ECDSA, path]]))).toBe('ACCEPTED');
  });
});
