/**
 * Shared fixtures of the chain-context attack tests (attack-*.test.ts): a master key (secp256k1
 * ECDSA key and Taproot key with their chain codes, as a signer's KeyRecord.keys holds them), the
 * signer's trust (pinned Admin device, approver devices, `chains` configuration), a signed policy
 * covering every chain, and honest builders of sign requests for each chain family, which the
 * tests then forge as a compromised coordinator would. Everything goes through the real
 * `enforceTransferEvidence` on a real encrypted store.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  type BitcoinContext,
  type EthereumContext,
  ethereumAddress,
  LITECOIN_REGTEST,
  recomputeBitcoinDigests,
  recomputeEthereumDigests,
  recomputeTronDigests,
  type TransferFields,
  type TronContext,
  tronAddress,
  utxoAddress,
} from '@custodian/chains';
import { bytesToHex, deriveSecp256k1 } from '@custodian/crypto';
import {
  type Approval,
  assetId,
  KeyAlgorithm,
  type PolicyDocument,
  type SignRequest,
  signApproval,
  signPolicy,
  type TransferIntent,
  walletIdOf,
} from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { afterAll, beforeAll, expect } from 'vitest';
import { type CeremonyStore, type EnforcementTrust, EvidenceRefused, enforceTransferEvidence } from '../src/index.js';
import { SecureStore } from '../src/level-store/index.js';
import { tempDir } from './helpers.js';

/**
 * A fresh encrypted store in a temporary folder (`custodian-<label>-…`), opened before the file's
 * tests (`beforeAll`) and closed and deleted after them (`afterAll`); returns its getter.
 */
export function tempStore(label: string): () => SecureStore {
  let store: SecureStore | undefined;
  let dir = '';
  beforeAll(async () => {
    dir = tempDir(label);
    store = await SecureStore.open(join(dir, 'db'), 'pass', { N: 1 << 10, r: 8, p: 1 });
  });
  afterAll(async () => {
    await store?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    if (store === undefined) throw new Error(`the ${label} store is opened in beforeAll`);
    return store;
  };
}

export const adminSk = p256.utils.randomSecretKey();
export const dev1 = p256.utils.randomSecretKey();
export const dev2 = p256.utils.randomSecretKey();
const pub = (sk: Uint8Array) => bytesToHex(p256.getPublicKey(sk, true));

/** A master key as the signer's key record holds it (public keys, chain codes). */
export function masterKey(): {
  ecdsa: { publicKey: Uint8Array; chainCode: Uint8Array };
  tr: { publicKey: Uint8Array; chainCode: Uint8Array };
} {
  return {
    ecdsa: { publicKey: secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true), chainCode: randomBytes(32) },
    tr: { publicKey: secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true), chainCode: randomBytes(32) },
  };
}
export let mk: ReturnType<typeof masterKey> = masterKey();
/** Build requests for another master key (the hostile-coordinator suite uses its signers' real key). */
export function useMasterKey(m: ReturnType<typeof masterKey>): void {
  mk = m;
}
/** Another master key (the coordinator's own, or another customer's). */
export const foreignMk = masterKey();

export function trustOf(m = mk, chains: Record<string, unknown> = CHAINS): EnforcementTrust {
  return {
    trustedAdminKeys: [pub(adminSk)],
    approverKeys: new Map([
      ['dev-1', pub(dev1)],
      ['dev-2', pub(dev2)],
    ]),
    chains: chains as EnforcementTrust['chains'],
    keys: [
      {
        algorithm: KeyAlgorithm.SECP256K1_ECDSA,
        suite: 'cggmp',
        publicKey: bytesToHex(m.ecdsa.publicKey),
        chainCode: bytesToHex(m.ecdsa.chainCode),
      },
      {
        algorithm: KeyAlgorithm.SECP256K1_TAPROOT,
        suite: 'secp256k1-tr',
        publicKey: bytesToHex(m.tr.publicKey),
        chainCode: bytesToHex(m.tr.chainCode),
      },
    ],
  } as unknown as EnforcementTrust;
}

export const ETH_DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
export const TRON_DEST = tronAddress(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true));
export const TRON_USDT = tronAddress(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true));
export const LTC_DEST = utxoAddress(
  LITECOIN_REGTEST,
  secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true),
  'p2wpkh',
);

/** The signers' `chains`: native coins implied; TRC-20 USDT (the fixtures' contract) on Nile. */
export const CHAINS = {
  'ethereum-local': { family: 'ethereum', chainId: 31337, maxFee: '10000000000000000' },
  'litecoin-regtest': { family: 'bitcoin', network: 'litecoin-regtest', maxFee: '1000000' },
  'tron-nile': {
    family: 'tron',
    network: 'nile',
    maxFee: '100000000',
    assets: { USDT: { contract: TRON_USDT, decimals: 6 } },
  },
} as const;

const profile = '11111111-1111-4111-8111-111111111111';
export const WALLET = '22222222-2222-4222-8222-222222222222';
const policyDoc: PolicyDocument = {
  policy_id: '44444444-4444-4444-8444-444444444444',
  version: 1,
  profile_id: profile,
  scope: { wallet_ids: null, blockchain: null, asset_id: null },
  whitelist: [ETH_DEST, TRON_DEST, LTC_DEST],
  per_transaction_limit: '100000000',
  daily_limit: null,
  approvals: { quorum: 2, above_amount: '50000000' },
  created_at: '2026-01-01T00:00:00.000Z',
};
export const policy = signPolicy(policyDoc, 'admin-phone', adminSk);

/** The child key of a master key at a path (public BIP32). */
export function child(key: { publicKey: Uint8Array; chainCode: Uint8Array }, path: readonly number[]): Uint8Array {
  return deriveSecp256k1(key.publicKey, key.chainCode, path).publicKey;
}
export const p2wpkhOf = (pk: Uint8Array) => utxoAddress(LITECOIN_REGTEST, pk, 'p2wpkh');
export const p2trOf = (pk: Uint8Array) => utxoAddress(LITECOIN_REGTEST, pk, 'p2tr');

/** The derived wallet id of a key id and a wallet path (`walletIdOf(keyId, path[2])`), {@link WALLET} for a path without a wallet index. */
export function walletOf(keyId: string, path: readonly number[]): string {
  const w = path[2];
  return typeof w === 'number' && Number.isSafeInteger(w) && w >= 0 && w < 0x8000_0000 ? walletIdOf(keyId, w) : WALLET;
}

let n = 0;
/**
 * A fresh transfer intent (unique transfer id); its `asset_id` is the directory id of its blockchain
 * and symbol, and its wallet id the derived one of its key id and path, unless `over` names them.
 */
export function intent(over: Partial<TransferIntent> = {}): TransferIntent {
  n++;
  return {
    transfer_id: `55555555-5555-4555-8555-${String(n).padStart(12, '0')}`,
    profile_id: profile,
    wallet_id: walletOf(over.key_id ?? 'key-1', over.derivation_path ?? [44, 60, 0, 0, 0]),
    blockchain: 'ethereum-local',
    asset_id: assetId(over.blockchain ?? 'ethereum-local', over.asset_symbol ?? 'ETH'),
    asset_symbol: 'ETH',
    asset_decimals: 18,
    asset_contract: null,
    source_address: ethereumAddress(child(mk.ecdsa, [44, 60, 0, 0, 0])),
    destination_address: ETH_DEST,
    amount: '100',
    derivation_path: [44, 60, 0, 0, 0],
    key_algorithm: 'SECP256K1_ECDSA',
    key_id: 'key-1',
    created_at: '2026-03-04T10:00:00.000Z',
    max_fee: '10000000000000000',
    ...over,
  };
}

function fieldsOf(i: TransferIntent): TransferFields {
  return {
    asset:
      i.asset_contract === null
        ? { kind: 'native' }
        : { kind: 'token', contract: i.asset_contract, symbol: i.asset_symbol, decimals: i.asset_decimals },
    destination: i.destination_address,
    amount: BigInt(i.amount),
  };
}

/** A sign request for an intent and chain context, digests recomputed from them, approved by dev-1 (and dev-2 when needed). */
export function request(
  i: TransferIntent,
  context: EthereumContext | BitcoinContext | TronContext,
  approvals?: Approval[],
): SignRequest {
  const f = fieldsOf(i);
  const digests = i.blockchain.startsWith('ethereum')
    ? recomputeEthereumDigests(f, context as EthereumContext)
    : i.blockchain.startsWith('tron')
      ? recomputeTronDigests(f, context as TronContext)
      : recomputeBitcoinDigests(LITECOIN_REGTEST, f, context as BitcoinContext);
  const a = approvals ?? [
    signApproval(i, 'APPROVE', 'dev-1', dev1, '2026-03-04T10:00:01.000Z'),
    ...(BigInt(i.amount) > 50000000n ? [signApproval(i, 'APPROVE', 'dev-2', dev2, '2026-03-04T10:00:02.000Z')] : []),
  ];
  return {
    keyId: i.key_id,
    algorithm: i.key_algorithm === 'SECP256K1_TAPROOT' ? KeyAlgorithm.SECP256K1_TAPROOT : KeyAlgorithm.SECP256K1_ECDSA,
    derivationPath: [...i.derivation_path],
    digests: digests.map((d) => d.digest),
    evidence: {
      intentJson: JSON.stringify(i),
      policyJson: JSON.stringify(policy),
      approvalsJson: a.map((x) => JSON.stringify(x)),
      chainContextJson: JSON.stringify(context),
    },
  };
}

/** An honest Ethereum context of the wallet key at `path`. */
export function ethContext(path: number[], over: Partial<EthereumContext> = {}): EthereumContext {
  const pk = child(mk.ecdsa, path);
  return {
    chainId: 31337,
    from: ethereumAddress(pk),
    fromPublicKey: bytesToHex(pk),
    fromPath: path,
    nonce: n,
    gas: '21000',
    maxFeePerGas: '2000000000',
    maxPriorityFeePerGas: '1000000000',
    ...over,
  };
}

/** An honest TRON context of the wallet key at `path` (Nile). */
export function tronContext(path: number[], over: Partial<TronContext> = {}): TronContext {
  const pk = child(mk.ecdsa, path);
  return {
    network: 'nile',
    from: tronAddress(pk),
    fromPublicKey: bytesToHex(pk),
    fromPath: path,
    refBlockBytes: 'a1b2',
    refBlockHash: '0011223344556677',
    expiration: 1_772_600_000_000,
    timestamp: 1_772_599_400_000,
    feeLimit: '0',
    ...over,
  } as TronContext;
}

/** A Litecoin-regtest intent of wallet 0, P2WPKH source at m/44/1/0/0/0. */
export function ltcIntent(over: Partial<TransferIntent> = {}): TransferIntent {
  const path = [44, 1, 0, 0, 0];
  return intent({
    blockchain: 'litecoin-regtest',
    asset_symbol: 'LTC',
    asset_decimals: 8,
    source_address: p2wpkhOf(child(mk.ecdsa, path)),
    destination_address: LTC_DEST,
    amount: '100000',
    derivation_path: path,
    max_fee: '1000000',
    ...over,
  });
}

/** One UTXO input of a key (its P2WPKH address). */
export function utxoInput(pk: Uint8Array, path: readonly number[], value: bigint, kind: 'p2wpkh' | 'p2tr' = 'p2wpkh') {
  return {
    txid: bytesToHex(randomBytes(32)),
    vout: 0,
    value: value.toString(),
    address: kind === 'p2wpkh' ? p2wpkhOf(pk) : p2trOf(pk),
    kind,
    publicKey: bytesToHex(pk),
    path: [...path],
  };
}

/** A UTXO context: the inputs given, the change (or none) and fee = inputs − amount − change. */
export function ltcContext(
  i: TransferIntent,
  inputs: ReturnType<typeof utxoInput>[],
  change: { pk: Uint8Array; path: number[]; value: bigint; kind?: 'p2wpkh' | 'p2tr' } | null,
): BitcoinContext {
  const total = inputs.reduce((a, x) => a + BigInt(x.value), 0n);
  const out = BigInt(i.amount) + (change?.value ?? 0n);
  const kind = change?.kind ?? 'p2wpkh';
  return {
    network: 'litecoin-regtest',
    version: 2,
    lockTime: 0,
    sequence: 0xfffffffd,
    inputs,
    change: change
      ? {
          address: kind === 'p2wpkh' ? p2wpkhOf(change.pk) : p2trOf(change.pk),
          publicKey: bytesToHex(change.pk),
          path: change.path,
          kind,
          value: change.value.toString(),
        }
      : null,
    fee: (total - out).toString(),
    feeRate: '10',
  };
}

/** A request with its policy replaced by one with `doc`'s fields, signed by the pinned Admin device. */
export function withPolicy(req: SignRequest, doc: Partial<PolicyDocument>): SignRequest {
  const base = (JSON.parse(req.evidence?.policyJson ?? '{}') as { document: PolicyDocument }).document;
  const p = signPolicy({ ...base, ...doc }, 'admin-phone', adminSk);
  return { ...req, evidence: { ...req.evidence, policyJson: JSON.stringify(p) } } as SignRequest;
}

/**
 * Run the real check; 'ACCEPTED' or the refusal code. A refusal must leave nothing in the ledger:
 * asserted here for every refused request. `now`: the signer's clock (default: the real one).
 */
export async function verdict(store: CeremonyStore, req: SignRequest, trust = trustOf(), now?: Date): Promise<string> {
  const before = (await store.keys('ledger')).length;
  try {
    const v = await enforceTransferEvidence(store, req, trust, now);
    v.release();
    return 'ACCEPTED';
  } catch (e) {
    expect(e).toBeInstanceOf(EvidenceRefused);
    expect((await store.keys('ledger')).length).toBe(before);
    return (e as EvidenceRefused).code;
  }
}

/** Accept and commit the ledger entry, as the ceremony does once the signature is produced. */
export async function signAndCommit(
  store: CeremonyStore,
  req: SignRequest,
  trust = trustOf(),
  now?: Date,
): Promise<void> {
  const v = await enforceTransferEvidence(store, req, trust, now);
  await store.batch(v.ledgerOps);
  v.release();
}
