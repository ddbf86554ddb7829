/**
 * Wallets and deposit addresses (wallets room): wallet creation (next wallet index of the newest
 * master key, one derived address per blockchain, no ceremony), listing, additional UTXO
 * addresses. Every change emits its webhook events (WALLET_CREATED, ADDRESS_CREATED) in the same
 * transaction. Longer than 400 lines by a little: the wallet and the address derivation share
 * the wallet row lock and the BIP32 invalid-child skips, and read best together.
 */
import { randomUUID } from 'node:crypto';
import { Bip32InvalidChildError, deriveSecp256k1 } from '@custodian/crypto';
import { walletIdOf } from '@custodian/wire';
import { ADDRESS_CODECS, type AddressType, type MasterKeyHex, masterKeyFor, nextDerivedAddress } from '../addresses.js';
import type { Db, Queryable } from '../db/db.js';
import { BLOCKCHAINS, type BlockchainDef } from '../directory.js';
import { ApiError } from '../errors.js';
import { transferKeyId } from '../signers/store.js';
import { type Page, type PageRequest, pageOffset } from '../store.js';
import { type Clock, iso } from '../util.js';
import { emitEvent } from '../webhooks/outbox.js';
import { refuseArchived } from './archive.js';
import { BLOCKCHAIN_ENABLED } from './profiles.js';

/** Address object. */
export interface AddressView {
  address_id: string;
  wallet_id: string;
  blockchain_id: string;
  address: string;
  address_type: string;
  address_index: number;
  derivation_path: string;
  public_key: string;
  created_at: string;
}

/** Wallet object (creation response). */
export interface WalletView {
  wallet_id: string;
  profile_id: string;
  name: string | null;
  blockchain_ids: string[];
  created_at: string;
  addresses: AddressView[];
}

interface AddressRow {
  address_id: string;
  wallet_id: string;
  blockchain_id: string;
  address: string;
  address_type: string;
  address_index: number;
  derivation_path: string;
  public_key: string;
  created_at: Date;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const unhex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s, 'hex'));

function addressView(r: AddressRow): AddressView {
  return {
    address_id: r.address_id,
    wallet_id: r.wallet_id,
    blockchain_id: r.blockchain_id,
    address: r.address,
    address_type: r.address_type,
    address_index: r.address_index,
    derivation_path: r.derivation_path,
    public_key: r.public_key,
    created_at: iso(r.created_at)!,
  };
}

function chainDef(key: string): BlockchainDef {
  const d = BLOCKCHAINS.find((b) => b.key === key);
  if (d === undefined) throw new Error(`blockchain ${key} is not in the built-in directory`);
  return d;
}

/** Dependencies of {@link WalletStore}. */
export interface WalletStoreComponents {
  readonly db: Db;
  readonly clock: Clock;
}

/** Wallets and their addresses. */
export class WalletStore {
  constructor(private readonly c: WalletStoreComponents) {}

  /** Run `fn` in the caller's transaction `tx`, or in a new one when there is none. */
  private inTx<T>(tx: Queryable | undefined, fn: (q: Queryable) => Promise<T>): Promise<T> {
    return tx === undefined ? this.c.db.tx(fn) : fn(tx);
  }

  /** Enabled blockchains among `ids` for a profile; throws 422 naming the first unknown one. */
  private async requireEnabledChains(q: Queryable, profileId: string, ids: readonly string[]) {
    const rows = await q.query<{ blockchain_id: string; key: string }>(
      `SELECT b.blockchain_id, b.key FROM blockchains b WHERE b.blockchain_id = ANY($2::uuid[]) AND ${BLOCKCHAIN_ENABLED}`,
      [profileId, ids],
    );
    const byId = new Map(rows.map((r) => [r.blockchain_id, r.key]));
    ids.forEach((id, i) => {
      if (!byId.has(id.toLowerCase())) {
        throw new ApiError('UNKNOWN_BLOCKCHAIN', `blockchain ${id} is unknown or not enabled for this profile`, [
          { field: `body.blockchain_ids[${i}]`, message: 'unknown or not enabled for this profile' },
        ]);
      }
    });
    return byId;
  }

  /**
   * Derive and insert the next address of a wallet on one blockchain and branch (0 external =
   * deposit addresses, 1 internal = change; the index counts per branch), from the master key
   * that can spend its type ({@link masterKeyFor}: P2TR ← Taproot key), skipping the (probability
   * < 2^-127) indices BIP32 declares invalid. Caller holds the wallet row lock (change addresses
   * are the pipeline's, transfers/utxo-sources.ts).
   * @throws ApiError VALIDATION_FAILED (422) for P2TR without a Taproot master key
   */
  private async insertNextAddress(
    q: Queryable,
    w: { wallet_id: string; wallet_index: number } & MasterKeyHex,
    blockchainId: string,
    chain: BlockchainDef,
    type: AddressType,
    branch: 0 | 1 = 0,
  ): Promise<AddressView> {
    const r = await q.query<{ next: number }>(
      `SELECT COALESCE(max(address_index) + 1, 0)::int AS next FROM addresses
       WHERE wallet_id = $1 AND blockchain_id = $2 AND branch = $3`,
      [w.wallet_id, blockchainId, branch],
    );
    const d = nextDerivedAddress(w, chain, w.wallet_index, type, branch, r[0]?.next ?? 0);
    const row: AddressRow = {
      address_id: randomUUID(),
      wallet_id: w.wallet_id,
      blockchain_id: blockchainId,
      address: d.address,
      address_type: type,
      address_index: d.index,
      derivation_path: d.derivationPath,
      public_key: hex(d.publicKey),
      created_at: this.c.clock(),
    };
    await q.query(
      `INSERT INTO addresses (address_id, wallet_id, blockchain_id, address_index, address, address_type, public_key,
           derivation_path, created_at, branch) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`,
      [
        row.address_id,
        row.wallet_id,
        row.blockchain_id,
        row.address_index,
        row.address,
        row.address_type,
        row.public_key,
        row.derivation_path,
        row.created_at,
        branch,
      ],
    );
    return addressView(row);
  }

  /**
   * Create a wallet: allocate the next wallet index of the newest master key, record its
   * blockchains and derive the first deposit address of each (no ceremony). The wallet id is
   * derived, `walletIdOf(transferKeyId(master key), wallet index)` (@custodian/wire): signers
   * recompute it from a transfer intent's key id and path and refuse any other (`WALLET_MISMATCH`).
   * @param within optional extra work in the same transaction (audit entry, webhook outbox row)
   * @param tx the caller's open transaction (e.g. the one completing an idempotency record);
   *   default: a transaction of its own
   * @throws ApiError UNKNOWN_BLOCKCHAIN (422) naming the field; NO_MASTER_KEY (409)
   */
  async createWallet(
    profileId: string,
    input: { name?: string | null; blockchain_ids: string[] },
    within?: (q: Queryable, wallet: WalletView) => Promise<void>,
    tx?: Queryable,
  ): Promise<WalletView> {
    const ids = [...new Set(input.blockchain_ids.map((s) => s.toLowerCase()))];
    return this.inTx(tx, async (q) => {
      const chains = await this.requireEnabledChains(q, profileId, ids);
      const mk = (
        await q.query<{
          master_key_id: string;
          ceremony_id: string | null;
          next_wallet_index: number;
          secp256k1_public_key: string;
          secp256k1_chain_code: string;
          taproot_public_key: string | null;
          taproot_chain_code: string | null;
        }>(
          `SELECT master_key_id, ceremony_id, next_wallet_index, secp256k1_public_key, secp256k1_chain_code,
                  taproot_public_key, taproot_chain_code FROM master_keys
           ORDER BY created_at DESC, master_key_id LIMIT 1 FOR UPDATE`,
        )
      )[0];
      if (mk === undefined)
        throw new ApiError('NO_MASTER_KEY', 'the master key ceremony has not been run on this instance');
      const pub = unhex(mk.secp256k1_public_key);
      const cc = unhex(mk.secp256k1_chain_code);
      // Wallet-level invalid child (some m/44/c/i invalid for a chain): skip i, as BIP32 says.
      let walletIndex = mk.next_wallet_index;
      for (;;) {
        try {
          for (const key of chains.values()) deriveSecp256k1(pub, cc, `m/44/${chainDef(key).coinType}/${walletIndex}`);
          break;
        } catch (e) {
          if (!(e instanceof Bip32InvalidChildError)) throw e;
          walletIndex++;
        }
      }
      await q.query('UPDATE master_keys SET next_wallet_index = $2 WHERE master_key_id = $1', [
        mk.master_key_id,
        walletIndex + 1,
      ]);
      const walletId = walletIdOf(transferKeyId(mk), walletIndex);
      const now = this.c.clock();
      const name = input.name ?? null;
      await q.query(
        'INSERT INTO wallets (wallet_id, profile_id, name, master_key_id, wallet_index, created_at) VALUES ($1,$2,$3,$4,$5,$6)',
        [walletId, profileId, name, mk.master_key_id, walletIndex, now],
      );
      const w = { wallet_id: walletId, wallet_index: walletIndex, ...mk };
      const addresses: AddressView[] = [];
      for (const id of ids) {
        await q.query('INSERT INTO wallet_blockchains (wallet_id, blockchain_id) VALUES ($1,$2)', [walletId, id]);
        const chain = chainDef(chains.get(id)!);
        addresses.push(await this.insertNextAddress(q, w, id, chain, ADDRESS_CODECS[chain.family].addressTypes[0]!));
      }
      const wallet = {
        wallet_id: walletId,
        profile_id: profileId,
        name,
        blockchain_ids: ids,
        created_at: iso(now)!,
        addresses,
      };
      // Webhook outbox rows in the same transaction (webhooks/outbox.ts).
      await emitEvent(q, this.c.clock, {
        profileId,
        type: 'WALLET_CREATED',
        data: { wallet_id: walletId, name, blockchain_ids: ids },
      });
      for (const a of addresses) await this.emitAddressCreated(q, profileId, a);
      if (within !== undefined) await within(q, wallet);
      return wallet;
    });
  }

  /**
   * Wallet identifiers of a profile, oldest first.
   * @param walletIds when given, only these wallets (a dashboard user's wallet-group scope, admin/scope.ts)
   */
  async listWallets(
    profileId: string,
    p: PageRequest,
    walletIds?: readonly string[],
  ): Promise<Page<{ wallet_id: string }>> {
    // Deleted wallets (archive.ts) are gone from lists.
    const where = `profile_id = $1 AND deleted_at IS NULL${walletIds === undefined ? '' : ' AND wallet_id = ANY($2::uuid[])'}`;
    const params: unknown[] = walletIds === undefined ? [profileId] : [profileId, walletIds];
    const n = params.length;
    const rows = await this.c.db.query<{ wallet_id: string }>(
      `SELECT wallet_id FROM wallets WHERE ${where} ORDER BY created_at, wallet_id LIMIT $${n + 1} OFFSET $${n + 2}`,
      [...params, p.page_size, pageOffset(p)],
    );
    const total =
      (await this.c.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM wallets WHERE ${where}`, params))[0]?.n ??
      0;
    return { data: rows, page: p.page, page_size: p.page_size, total };
  }

  /**
   * One wallet with its blockchains and its listed (not archived) addresses, or 404
   * WALLET_NOT_FOUND (also for a deleted wallet, archive.ts).
   */
  async getWallet(profileId: string, walletId: string): Promise<WalletView> {
    const w = (
      await this.c.db.query<{ wallet_id: string; profile_id: string; name: string | null; created_at: Date }>(
        'SELECT wallet_id, profile_id, name, created_at FROM wallets WHERE profile_id = $1 AND wallet_id = $2 AND deleted_at IS NULL',
        [profileId, walletId],
      )
    )[0];
    if (w === undefined) throw new ApiError('WALLET_NOT_FOUND', `no wallet ${walletId} in this profile`);
    const chains = await this.c.db.query<{ blockchain_id: string }>(
      `SELECT wb.blockchain_id FROM wallet_blockchains wb JOIN blockchains b USING (blockchain_id)
       WHERE wb.wallet_id = $1 ORDER BY b.sort`,
      [walletId],
    );
    const addrs = await this.c.db.query<AddressRow>(
      `SELECT a.* FROM addresses a JOIN blockchains b USING (blockchain_id) WHERE a.wallet_id = $1 AND a.branch = 0
       AND a.archived_at IS NULL ORDER BY b.sort, a.address_index`,
      [walletId],
    );
    return {
      wallet_id: w.wallet_id,
      profile_id: w.profile_id,
      name: w.name,
      blockchain_ids: chains.map((c) => c.blockchain_id),
      created_at: iso(w.created_at)!,
      addresses: addrs.map(addressView),
    };
  }

  /**
   * The wallet with its master key's public keys and chain codes (ECDSA, Taproot) and
   * `archived_at` (archive.ts) (`lock`: FOR UPDATE of the wallet row).
   * @throws ApiError WALLET_NOT_FOUND (404) unless the profile has the wallet (not deleted)
   */
  async requireWallet(q: Queryable, profileId: string, walletId: string, lock = false) {
    const w = (
      await q.query<{
        wallet_id: string;
        wallet_index: number;
        secp256k1_public_key: string;
        secp256k1_chain_code: string;
        taproot_public_key: string | null;
        taproot_chain_code: string | null;
        archived_at: Date | null;
      }>(
        `SELECT w.wallet_id, w.wallet_index, m.secp256k1_public_key, m.secp256k1_chain_code,
                m.taproot_public_key, m.taproot_chain_code, w.archived_at
         FROM wallets w JOIN master_keys m USING (master_key_id)
         WHERE w.profile_id = $1 AND w.wallet_id = $2 AND w.deleted_at IS NULL ${lock ? 'FOR UPDATE OF w' : ''}`,
        [profileId, walletId],
      )
    )[0];
    if (w === undefined) throw new ApiError('WALLET_NOT_FOUND', `no wallet ${walletId} in this profile`);
    return w;
  }

  /** Deposit addresses of a wallet (archived ones are not listed, archive.ts), optionally on one blockchain. */
  async listAddresses(
    profileId: string,
    walletId: string,
    blockchainId: string | undefined,
    p: PageRequest,
  ): Promise<Page<AddressView>> {
    await this.requireWallet(this.c.db, profileId, walletId);
    const params: unknown[] = [walletId];
    if (blockchainId !== undefined) params.push(blockchainId);
    // deposit addresses only: change addresses (branch 1, the pipeline's) and archived ones are not listed
    const where = `a.wallet_id = $1 AND a.branch = 0 AND a.archived_at IS NULL ${blockchainId !== undefined ? 'AND a.blockchain_id = $2' : ''}`;
    const n = params.length;
    const rows = await this.c.db.query<AddressRow>(
      `SELECT a.* FROM addresses a JOIN blockchains b USING (blockchain_id) WHERE ${where}
       ORDER BY b.sort, a.address_index LIMIT $${n + 1} OFFSET $${n + 2}`,
      [...params, p.page_size, pageOffset(p)],
    );
    const total =
      (await this.c.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM addresses a WHERE ${where}`, params))[0]
        ?.n ?? 0;
    return { data: rows.map(addressView), page: p.page, page_size: p.page_size, total };
  }

  /**
   * Create an additional deposit address. Only UTXO blockchains allow several addresses per
   * wallet (seed §2 "Address"); the wallet row lock serialises concurrent creations.
   * @throws ApiError WALLET_NOT_FOUND (404), WALLET_ARCHIVED (409), BLOCKCHAIN_NOT_IN_WALLET / ADDRESS_LIMIT_REACHED /
   *   VALIDATION_FAILED for an address type the chain does not support (422)
   * @param tx the caller's open transaction; default: a transaction of its own
   */
  async createAddress(
    profileId: string,
    walletId: string,
    input: { blockchain_id: string; address_type?: AddressType },
    tx?: Queryable,
  ): Promise<AddressView> {
    const blockchainId = input.blockchain_id.toLowerCase();
    return this.inTx(tx, async (q) => {
      const w = await this.requireWallet(q, profileId, walletId, true);
      refuseArchived(w);
      const c = (
        await q.query<{ key: string }>(
          `SELECT b.key FROM wallet_blockchains wb JOIN blockchains b USING (blockchain_id)
           WHERE wb.wallet_id = $1 AND wb.blockchain_id = $2`,
          [walletId, blockchainId],
        )
      )[0];
      if (c === undefined) {
        throw new ApiError('BLOCKCHAIN_NOT_IN_WALLET', `the wallet was not created with blockchain ${blockchainId}`, [
          { field: 'body.blockchain_id', message: 'not one of the wallet blockchain_ids' },
        ]);
      }
      const chain = chainDef(c.key);
      const codec = ADDRESS_CODECS[chain.family];
      const type = input.address_type ?? codec.addressTypes[0]!;
      if (!codec.addressTypes.includes(type)) {
        throw new ApiError('VALIDATION_FAILED', `address_type ${type} is not supported on ${chain.key}`, [
          { field: 'body.address_type', message: `must be one of ${codec.addressTypes.join(', ')}` },
        ]);
      }
      if (chain.accountModel === 'account') {
        throw new ApiError(
          'ADDRESS_LIMIT_REACHED',
          `${chain.key} is account-based: the wallet already has its one address there`,
          [{ field: 'body.blockchain_id', message: 'account-based blockchain: one address per wallet' }],
        );
      }
      const a = await this.insertNextAddress(q, w, blockchainId, chain, type);
      await this.emitAddressCreated(q, profileId, a);
      return a;
    });
  }

  private async emitAddressCreated(q: Queryable, profileId: string, a: AddressView): Promise<void> {
    await emitEvent(q, this.c.clock, {
      profileId,
      type: 'ADDRESS_CREATED',
      data: {
        address_id: a.address_id,
        wallet_id: a.wallet_id,
        blockchain_id: a.blockchain_id,
        address: a.address,
        address_type: a.address_type,
        derivation_path: a.derivation_path,
      },
    });
  }
}
