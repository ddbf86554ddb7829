/**
 * Hostile review of issue #28 [utxo]: the Taproot master key's Y parity. The FROST DKG does not
 * normalise the secp256k1-tr group key to even Y, and the signers' key record holds it as a
 * 33-byte point of its real parity (master-key.ts `publicKey: groupPublicKey`). The coordinator
 * records it x-only (coordinator signing/master-key.ts `outcomeOf`: `tr.publicKey.slice(1)`) and
 * derives P2TR addresses from `02‖x` (addresses.ts `masterKeyFor`). For an odd-Y group key (half
 * of all master keys) BIP32 CKDpub from 02‖x differs from CKDpub from 03‖x (the parent point and
 * the HMAC input `serP(parent)` both differ): every P2TR deposit address the coordinator hands out
 * is a key the signers neither recognise (INPUT_KEY_MISMATCH) nor sign for (FROST derives from the
 * share's real group key) — coins paid there are stranded.
 */
import { bytesToHex, deriveSecp256k1 } from '@custodian/crypto';
import { KeyAlgorithm, type SignRequest } from '@custodian/wire';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
// the coordinator's own derivation of P2TR address keys
import { masterKeyFor } from '../../coordinator/src/addresses.js';
import {
  child,
  ltcContext,
  ltcIntent,
  request,
  tempStore,
  trustOf,
  useMasterKey,
  utxoInput,
  verdict,
} from './attack-fixtures.js';

const store = tempStore('review-taproot-parity');
const SRC = [44, 1, 0, 0, 0];
const TR = [44, 1, 0, 0, 3];
const COIN = 100_000_000n;

/** A FROST group key as the signers hold it, of odd Y (03‖x), and its chain code. */
function oddTaprootKey() {
  for (;;) {
    const publicKey = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true);
    if (publicKey[0] === 3) return { publicKey, chainCode: randomBytes(32) };
  }
}

describe('review: P2TR addresses of an odd-Y Taproot master key', () => {
  it('the signers accept a P2TR input at the address the coordinator derived for the wallet', async () => {
    const m = {
      ecdsa: { publicKey: secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true), chainCode: randomBytes(32) },
      tr: oddTaprootKey(),
    };
    useMasterKey(m);
    // coordinator: master-key.ts records the Taproot key x-only; wallets/store.ts derives with masterKeyFor
    const master = masterKeyFor(
      {
        secp256k1_public_key: bytesToHex(m.ecdsa.publicKey),
        secp256k1_chain_code: bytesToHex(m.ecdsa.chainCode),
        taproot_public_key: bytesToHex(m.tr.publicKey.slice(1)),
        taproot_chain_code: bytesToHex(m.tr.chainCode),
      },
      'p2tr',
    );
    const coordinatorKey = deriveSecp256k1(master.publicKey, master.chainCode, TR).publicKey;
    // the key the signers derive (and FROST signs with) at the same path
    expect.soft(bytesToHex(coordinatorKey)).toBe(bytesToHex(child(m.tr, TR)));
    const i = ltcIntent();
    const ctx = ltcContext(
      i,
      [utxoInput(child(m.ecdsa, SRC), SRC, COIN), utxoInput(coordinatorKey, TR, COIN, 'p2tr')],
      { pk: child(m.ecdsa, [44, 1, 0, 1, 2]), path: [44, 1, 0, 1, 2], value: 2n * COIN - 100_000n - 9_000n },
    );
    const req: SignRequest = {
      ...request(i, ctx),
      digestKeys: [
        { algorithm: KeyAlgorithm.SECP256K1_ECDSA, derivationPath: SRC },
        { algorithm: KeyAlgorithm.SECP256K1_TAPROOT, derivationPath: TR },
      ],
    };
    expect(await verdict(store(), req, trustOf(m))).toBe('ACCEPTED');
  });
});
