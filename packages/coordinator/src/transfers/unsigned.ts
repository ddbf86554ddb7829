/**
 * The stored form of an unsigned transaction (`transfers.unsigned`, and `fee_bump.unsigned` of a
 * fee bump round): JSON, bytes hex, bigints decimal strings. Written before any signer sees the
 * transaction, so a restart signs the same one (pipeline.ts).
 */
import type { DigestToSign, Json, TransferFields, UnsignedTransfer } from '@custodian/chains';

/** Stored form of an {@link UnsignedTransfer}. */
export interface StoredUnsigned {
  chain: string;
  unsignedTx: string;
  context: Json;
  /** Highest fee the transaction can pay, native base units (decimal string). */
  maxFee: string;
  /**
   * The fee cap (`TransferIntent.max_fee`, native base units) of the intent this transaction is
   * signed under: the transfer's, or a fee bump round's raised cap. Absent in rows written before
   * fee caps: the transfer's intent's cap then.
   */
  approvedMaxFee?: string;
  digests: {
    digest: string;
    scheme: 'ecdsa' | 'schnorr';
    publicKey: string;
    path: number[];
    inputIndex: number;
    taprootTweak?: string;
  }[];
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const unhex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s, 'hex'));

/** JSON form of `u`; `approvedMaxFee`: the cap of the intent it is signed under (base units). */
export function storeUnsigned(u: UnsignedTransfer, approvedMaxFee?: string): StoredUnsigned {
  return {
    chain: u.chain,
    unsignedTx: hex(u.unsignedTx),
    context: u.context,
    maxFee: u.maxFee.toString(),
    ...(approvedMaxFee !== undefined ? { approvedMaxFee } : {}),
    digests: u.digests.map((d) => ({
      digest: hex(d.digest),
      scheme: d.scheme,
      publicKey: hex(d.key.publicKey),
      path: [...d.key.path],
      inputIndex: d.inputIndex,
      ...(d.taprootTweak ? { taprootTweak: hex(d.taprootTweak) } : {}),
    })),
  };
}

/** The {@link UnsignedTransfer} of a stored one, with the transfer's chain `fields` (from its intent). */
export function loadUnsigned(s: StoredUnsigned, fields: TransferFields): UnsignedTransfer {
  return {
    chain: s.chain,
    fields,
    unsignedTx: unhex(s.unsignedTx),
    context: s.context,
    maxFee: BigInt(s.maxFee),
    digests: s.digests.map(
      (d): DigestToSign => ({
        digest: unhex(d.digest),
        scheme: d.scheme,
        key: { publicKey: unhex(d.publicKey), path: d.path },
        inputIndex: d.inputIndex,
        ...(d.taprootTweak ? { taprootTweak: unhex(d.taprootTweak) } : {}),
      }),
    ),
  };
}
