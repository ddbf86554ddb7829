/**
 * Item 1b of enforce.ts on the signer's side (issue #20): the chain context binds nothing the signer
 * cannot check on its own — asset, chain id / network, wallet path and sender key, Bitcoin-family
 * inputs and change, fee cap and ceiling — each against the signer's configuration and key record.
 * Bitcoin family (issue #28): inputs may be P2WPKH (ECDSA key) and P2TR (Taproot key) of several
 * addresses of the intent's wallet; the change is a branch-1 address of that wallet or the source.
 */
import {
  type BitcoinContext,
  type EthereumContext,
  ethereumAddress,
  type Json,
  type TronContext,
  tronAddress,
  UTXO_NETWORKS,
  utxoAddress,
} from '@custodian/chains';
import { bytesToHex, deriveSecp256k1, hexToBytes } from '@custodian/crypto';
import type { TransferIntent } from '@custodian/wire';
import { assetMismatch } from '../assets.js';
import type { ChainConfig } from '../chains-config.js';
import type { EnforcementTrust, MasterPublicKey } from './enforce.js';
import { EvidenceRefused } from './refusals.js';

/**
 * Coin type of wallet paths on a configured chain (SLIP-0044): 60 on every EVM chain (EIP-155
 * chain ids separate them), 195 on TRON mainnet, 1 on every TRON and Bitcoin-family test network
 * (a TRON transaction has no chain id: a test-network approval must never sign with the mainnet key).
 */
function coinTypeOf(chain: ChainConfig): number {
  if (chain.family === 'ethereum') return 60;
  if (chain.family === 'tron') return chain.network === 'mainnet' ? 195 : 1;
  const n = UTXO_NETWORKS.find((x) => x.id === chain.network);
  if (!n) throw new EvidenceRefused('CHAIN_NOT_CONFIGURED', `unknown network ${chain.network}`);
  return n.coinType;
}

/** Whether `path` is `m/44/{coinType}/{wallet}/{0|1}/{index}` (non-hardened), and of `wallet` when given. */
function isWalletPath(path: unknown, coinType: number, wallet?: number): path is number[] {
  if (!Array.isArray(path) || path.length !== 5) return false;
  if (!path.every((x) => Number.isSafeInteger(x) && x >= 0 && x < 0x8000_0000)) return false;
  return (
    path[0] === 44 &&
    path[1] === coinType &&
    (wallet === undefined || path[2] === wallet) &&
    (path[3] === 0 || path[3] === 1)
  );
}

const DERIVED_LIMIT = 1024;
const derivedKeys = new Map<string, string>();

/**
 * The child public key (33 bytes, hex) of a master key at a non-hardened path (BIP32 CKDpub,
 * `deriveSecp256k1`), memoised (public data). The master key is taken exactly as the key record
 * holds it — 33-byte compressed with its Y parity (the FROST group key is not normalised to even
 * Y), the point FROST signing derives from and the coordinator records and derives addresses from.
 * @throws EvidenceRefused SENDER_MISMATCH when the key record has no such key, or not a 33-byte one
 */
function derivedKey(keys: readonly MasterPublicKey[] | undefined, suite: string, path: readonly number[]): string {
  const k = keys?.find((x) => x.suite === suite);
  if (!k) throw new EvidenceRefused('SENDER_MISMATCH', `the key record has no ${suite} key to derive from`);
  const id = `${k.publicKey}/${k.chainCode}/${path.join('/')}`;
  const hit = derivedKeys.get(id);
  if (hit !== undefined) return hit;
  if (k.publicKey.length !== 66)
    throw new EvidenceRefused('SENDER_MISMATCH', `the key record's ${suite} key is not a 33-byte compressed point`);
  const pub = hexToBytes(k.publicKey);
  const child = bytesToHex(deriveSecp256k1(pub, hexToBytes(k.chainCode), path).publicKey);
  if (derivedKeys.size >= DERIVED_LIMIT) derivedKeys.delete(derivedKeys.keys().next().value as string);
  derivedKeys.set(id, child);
  return child;
}

/** The master key that can spend a UTXO address kind: ECDSA (cggmp) for P2WPKH, Taproot (FROST) for P2TR. */
const SUITE_OF_KIND = { p2wpkh: 'cggmp', p2tr: 'secp256k1-tr' } as const;

function big(v: unknown, what: string): bigint {
  if (typeof v !== 'string' && typeof v !== 'number')
    throw new EvidenceRefused('DIGEST_MISMATCH', `${what}: not a number`);
  try {
    const b = BigInt(v);
    if (b < 0n) throw new Error('negative');
    return b;
  } catch {
    throw new EvidenceRefused('DIGEST_MISMATCH', `${what}: not a non-negative integer`);
  }
}

/**
 * Issue #20 items 1–4 on the signer side: the asset (review finding 3: {@link assetMismatch}), chain
 * id / network, wallet path and sender, Bitcoin-family inputs and change, and the fee bound, each
 * against the signer's own configuration and key record.
 * Called after the digests were recomputed from the same context (so the context's shapes are the
 * adapters' and every address matches its public key).
 * @throws EvidenceRefused ASSET_MISMATCH, CHAIN_MISMATCH, SENDER_MISMATCH, INPUT_KEY_MISMATCH,
 *   CHANGE_MISMATCH, FEE_ABOVE_CAP, FEE_ABOVE_CEILING
 */
export function checkChainContext(
  intent: TransferIntent,
  context: Json,
  chain: ChainConfig,
  trust: EnforcementTrust,
): void {
  const asset = assetMismatch(intent, chain);
  if (asset !== undefined) throw new EvidenceRefused('ASSET_MISMATCH', asset);
  const coinType = coinTypeOf(chain);
  const path = intent.derivation_path;
  if (!isWalletPath(path, coinType)) {
    throw new EvidenceRefused('SENDER_MISMATCH', `derivation path is not a wallet path m/44/${coinType}/w/{0|1}/i`);
  }
  const wallet = path[2] as number;
  const cap = big(intent.max_fee, 'intent.max_fee');
  const ceiling = BigInt(chain.maxFee);
  let fee: bigint;
  if (chain.family === 'ethereum') {
    const ctx = context as EthereumContext;
    if (ctx.chainId !== chain.chainId)
      throw new EvidenceRefused('CHAIN_MISMATCH', `context chain id ${ctx.chainId} is not ${chain.chainId}`);
    if (intent.key_algorithm !== 'SECP256K1_ECDSA')
      throw new EvidenceRefused('SENDER_MISMATCH', 'EVM signs with ECDSA');
    const sender = derivedKey(trust.keys, 'cggmp', path);
    const address = ethereumAddress(hexToBytes(sender));
    if (ctx.fromPublicKey !== sender || ctx.from !== address || intent.source_address !== address)
      throw new EvidenceRefused('SENDER_MISMATCH', 'the sender is not the key derived for the intent path');
    fee = big(ctx.gas, 'context.gas') * big(ctx.maxFeePerGas, 'context.maxFeePerGas');
  } else if (chain.family === 'tron') {
    const ctx = context as TronContext & { network?: unknown };
    if (ctx.network !== chain.network)
      throw new EvidenceRefused('CHAIN_MISMATCH', `context network ${String(ctx.network)} is not ${chain.network}`);
    if (intent.key_algorithm !== 'SECP256K1_ECDSA')
      throw new EvidenceRefused('SENDER_MISMATCH', 'TRON signs with ECDSA');
    const sender = derivedKey(trust.keys, 'cggmp', path);
    const address = tronAddress(hexToBytes(sender));
    if (ctx.fromPublicKey !== sender || ctx.from !== address || intent.source_address !== address)
      throw new EvidenceRefused('SENDER_MISMATCH', 'the sender is not the key derived for the intent path');
    // TRC-20: fee_limit bounds the energy burnt; a TRX transfer has no fee field (bandwidth only)
    fee = intent.asset_contract === null ? 0n : big(ctx.feeLimit, 'context.feeLimit');
  } else {
    const ctx = context as BitcoinContext;
    const network = UTXO_NETWORKS.find((n) => n.id === chain.network);
    if (!network || ctx.network !== network.id)
      throw new EvidenceRefused('CHAIN_MISMATCH', `context network ${String(ctx.network)} is not ${chain.network}`);
    const kind = intent.key_algorithm === 'SECP256K1_TAPROOT' ? 'p2tr' : 'p2wpkh';
    if (intent.key_algorithm === 'ED25519') throw new EvidenceRefused('SENDER_MISMATCH', 'UTXO keys are secp256k1');
    const sender = derivedKey(trust.keys, SUITE_OF_KIND[kind], path);
    if (intent.source_address !== utxoAddress(network, hexToBytes(sender), kind))
      throw new EvidenceRefused('SENDER_MISMATCH', `source_address is not the ${kind} address of the derived key`);
    let total = 0n;
    for (const [i, input] of ctx.inputs.entries()) {
      // issue #28: inputs of either kind, each of its own kind's master key at its own path of the
      // intent's wallet (which key signs which digest: enforce.ts compares the request's digest keys)
      const ik = input.kind === 'p2tr' || input.kind === 'p2wpkh' ? input.kind : undefined;
      if (ik === undefined || !isWalletPath(input.path, coinType, wallet))
        throw new EvidenceRefused('INPUT_KEY_MISMATCH', `inputs[${i}]: not a wallet address of the intent's wallet`);
      const pk = derivedKey(trust.keys, SUITE_OF_KIND[ik], input.path);
      if (input.publicKey !== pk || input.address !== utxoAddress(network, hexToBytes(pk), ik))
        throw new EvidenceRefused('INPUT_KEY_MISMATCH', `inputs[${i}]: key is not the one derived for its path`);
      total += big(input.value, `inputs[${i}].value`);
    }
    let out = big(intent.amount, 'intent.amount');
    if (ctx.change !== null) {
      const c = ctx.change;
      const ck = c.kind === 'p2tr' || c.kind === 'p2wpkh' ? c.kind : undefined;
      // a change address (branch 1) of the wallet, or the source address itself (transfers built
      // before #28 send change there); another receiving address would move funds between
      // customer-visible addresses without approval
      if (
        ck === undefined ||
        !isWalletPath(c.path, coinType, wallet) ||
        (c.path[3] !== 1 && c.address !== intent.source_address)
      )
        throw new EvidenceRefused(
          'CHANGE_MISMATCH',
          "change: neither a change address (branch 1) of the intent's wallet nor its source address",
        );
      const pk = derivedKey(trust.keys, SUITE_OF_KIND[ck], c.path);
      if (c.publicKey !== pk || c.address !== utxoAddress(network, hexToBytes(pk), ck))
        throw new EvidenceRefused('CHANGE_MISMATCH', 'change: key is not the one derived for its path');
      out += big(c.value, 'change.value');
    }
    if (total < out) throw new EvidenceRefused('DIGEST_MISMATCH', 'outputs exceed inputs');
    fee = total - out;
  }
  if (fee > cap) throw new EvidenceRefused('FEE_ABOVE_CAP', `maximum fee ${fee} exceeds the approved cap ${cap}`);
  if (fee > ceiling)
    throw new EvidenceRefused('FEE_ABOVE_CEILING', `maximum fee ${fee} exceeds this signer's ceiling ${ceiling}`);
}
