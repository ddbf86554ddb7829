/**
 * Reading a transfer intent on the signer's side (enforce.ts items 1 and 1c): its creation time
 * against the signer's clock, its fields as the chain adapters take them, and the digests and
 * replacement key recomputed from it and the chain context.
 */
import {
  type DigestToSign,
  type EthereumContext,
  type Json,
  recomputeBitcoinDigests,
  recomputeEthereumDigests,
  recomputeTronDigests,
  type TransferFields,
  UTXO_NETWORKS,
} from '@custodian/chains';
import { bytesToHex } from '@custodian/crypto';
import type { TransferIntent } from '@custodian/wire';
import type { ChainConfig } from '../chains-config.js';
import { EvidenceRefused } from './refusals.js';

/**
 * How long an intent's `created_at` may lie ahead of the signer's clock (milliseconds): 5 minutes
 * of clock skew between the coordinator and the signer. Later: `INTENT_TIME_INVALID`. The rollback
 * rule (rollback.ts `rollbackRefusal`) refuses intents created before a detected restore plus
 * this skew.
 */
export const CREATED_AT_SKEW_MS = 5 * 60_000;

/** ISO 8601 date-time with seconds and an explicit zone (what `Date.prototype.toISOString` writes). */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/**
 * The time of an intent's `created_at`, checked against the signer's clock.
 * @param createdAt ISO 8601 date-time with seconds and zone, e.g. `2026-03-04T10:00:00.000Z`
 * @param now the signer's clock
 * @returns milliseconds since the epoch
 * @throws EvidenceRefused INTENT_TIME_INVALID when it is not such a time, or later than `now` + {@link CREATED_AT_SKEW_MS}
 */
export function intentTime(createdAt: unknown, now: Date): number {
  const t = typeof createdAt === 'string' && ISO_TIME.test(createdAt) ? Date.parse(createdAt) : Number.NaN;
  if (!Number.isFinite(t))
    throw new EvidenceRefused('INTENT_TIME_INVALID', 'intent.created_at is not an ISO 8601 time');
  if (t > now.getTime() + CREATED_AT_SKEW_MS)
    throw new EvidenceRefused('INTENT_TIME_INVALID', 'intent.created_at is later than the signer clock allows');
  return t;
}

/** Chain fields of an intent, as the chain adapters take them. */
export function intentFields(intent: TransferIntent): TransferFields {
  if (!/^[1-9][0-9]{0,77}$/.test(intent.amount)) throw new EvidenceRefused('DIGEST_MISMATCH', 'intent.amount');
  return {
    asset:
      intent.asset_contract === null
        ? { kind: 'native' }
        : {
            kind: 'token',
            contract: intent.asset_contract,
            symbol: intent.asset_symbol,
            decimals: intent.asset_decimals,
          },
    destination: intent.destination_address,
    amount: BigInt(intent.amount),
  };
}

/** Chain family of a directory blockchain key (`ethereum*`, `bitcoin*` / `litecoin*`, `tron*`). */
export function familyOfKey(chain: string): ChainConfig['family'] | undefined {
  if (chain.startsWith('ethereum')) return 'ethereum';
  if (chain.startsWith('bitcoin') || chain.startsWith('litecoin')) return 'bitcoin';
  if (chain.startsWith('tron')) return 'tron';
  return undefined;
}

/**
 * Recompute a transfer's digests from its intent and chain context, by the intent's blockchain
 * family (blockchain keys `ethereum*`, `bitcoin*` / `litecoin*`, `tron*`), and the replacement key
 * of the transaction (see {@link LedgerEntry}).
 * @param chain the signer's configuration of the intent's blockchain: the Bitcoin-family network
 *   is then the configured one (else it is inferred from the blockchain key)
 * @throws EvidenceRefused DIGEST_MISMATCH when the context does not fit the fields or the chain is unknown
 */
export function recomputeIntentDigests(
  intent: TransferIntent,
  context: Json,
  chain?: ChainConfig,
): { digests: DigestToSign[]; replacementKey: string } {
  const fields = intentFields(intent);
  const key = intent.blockchain;
  try {
    if (key.startsWith('ethereum')) {
      const ctx = context as EthereumContext;
      const digests = recomputeEthereumDigests(fields, ctx);
      if (ctx.from !== intent.source_address) throw new Error('context.from is not the intent source_address');
      return { digests, replacementKey: `eth:${ctx.chainId}:${ctx.from}:${ctx.nonce}` };
    }
    if (key.startsWith('bitcoin') || key.startsWith('litecoin')) {
      const ctx = context as Parameters<typeof recomputeBitcoinDigests>[2];
      const network = UTXO_NETWORKS.find((n) => n.id === ctx.network);
      // directory keys name mainnets `<coin>-mainnet`; chains' network ids are `<coin>`
      const expected = chain?.family === 'bitcoin' ? chain.network : key.replace(/-mainnet$/, '');
      if (network === undefined || network.id !== expected) {
        throw new Error('context.network is not the intent chain');
      }
      const digests = recomputeBitcoinDigests(network, fields, ctx);
      const outpoints = ctx.inputs.map((i) => `${i.txid}:${i.vout}`).sort();
      return { digests, replacementKey: `utxo:${key}:${outpoints.join(',')}` };
    }
    if (key.startsWith('tron')) {
      const ctx = context as Parameters<typeof recomputeTronDigests>[1];
      const digests = recomputeTronDigests(fields, ctx);
      if (ctx.from !== intent.source_address) throw new Error('context.from is not the intent source_address');
      // a TRON transaction cannot be replaced: every different tx is a different key
      return { digests, replacementKey: `tron:${bytesToHex(digests[0]?.digest ?? new Uint8Array(0))}` };
    }
  } catch (e) {
    if (e instanceof EvidenceRefused) throw e;
    throw new EvidenceRefused('DIGEST_MISMATCH', `chain context does not fit the intent: ${(e as Error).message}`);
  }
  throw new EvidenceRefused('DIGEST_MISMATCH', `unsupported blockchain ${key}`);
}
