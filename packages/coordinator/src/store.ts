/**
 * Domain operations of the custody REST API over a {@link Db}: profiles, API keys, directory,
 * wallets, addresses, balances, master keys and idempotency records. All SQL is PostgreSQL and
 * runs unchanged on PGlite and on a PostgreSQL server; every multi-row change is one transaction.
 */
import { randomUUID } from 'node:crypto';
import { Bip32InvalidChildError, deriveSecp256k1, ed25519Group, secp256k1Group } from '@custodian/crypto';
import { walletIdOf } from '@custodian/wire';
import { formatUnits } from 'viem';
import { ADDRESS_CODECS, type AddressType, addressPath } from './addresses.js';
import { addressAllowed } from './api/cidrs.js';
import type { Db, Queryable } from './db/db.js';
import { BLOCKCHAINS, type BlockchainDef } from './directory.js';
import { ApiError } from './errors.js';
import { type Clock, iso, randomToken, sha256Hex } from './util.js';
import { emitEvent } from './webhooks/outbox.js';

/** Page request: `page` ≥ 1, `page_size` in [1, 200]. */

/**
 * The key id the signers know a master key by: hex of the 16 bytes of the master key ceremony's
 * UUID (the ceremony id the coordinator sends in StartCeremony), else of the master key id.
 */
export function transferKeyId(mk: { ceremony_id: string | null; master_key_id: string }): string {
  return (mk.ceremony_id ?? mk.master_key_id).replaceAll('-', '').toLowerCase();
}

export interface PageRequest {
  readonly page: number;
  readonly page_size: number;
}

/** Paginated envelope of every list endpoint. `total` counts all matching items. */
export interface Page<T> {
  data: T[];
  page: number;
  page_size: number;
  total: number;
}

/** Blockchain directory entry as returned by the API. */
export interface BlockchainView {
  blockchain_id: string;
  key: string;
  name: string;
  family: string;
  network: string;
  chain_id: string | null;
  account_model: 'account' | 'utxo';
  testnet: boolean;
  address_types: AddressType[];
  native_asset_id: string | null;
}

/** Asset directory entry as returned by the API. */
export interface AssetView {
  asset_id: string;
  symbol: string;
  name: string;
  decimals: number;
  blockchain: string;
  blockchain_id: string;
  kind: string;
  contract_address: string | null;
}

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

/** Balance object: one wallet × asset; `amount` in asset units, `amount_base_units` integer. */
export interface BalanceView {
  wallet_id: string;
  blockchain_id: string;
  asset_id: string;
  symbol: string;
  decimals: number;
  amount: string;
  amount_base_units: string;
  updated_at: string | null;
}

/** Public master key record (no secret ever reaches the coordinator). Hex-encoded keys. */
export interface MasterKeyView {
  master_key_id: string;
  ceremony_id: string | null;
  threshold: number;
  parties: unknown;
  secp256k1_public_key: string;
  secp256k1_chain_code: string;
  ed25519_public_key: string;
  ed25519_chain_code: string;
  created_at: string;
}

/** Input of {@link Store.insertMasterKey}: 33-byte compressed secp256k1 key, 32-byte Ed25519 key, 32-byte chain codes. */
export interface MasterKeyInput {
  ceremonyId: string | null;
  threshold: number;
  parties: unknown;
  secp256k1: { publicKey: Uint8Array; chainCode: Uint8Array };
  ed25519: { publicKey: Uint8Array; chainCode: Uint8Array };
}

/** Outcome of {@link Store.peekIdempotent}: a completed record to replay, a conflicting one, or none. */
export type IdempotencyPeek =
  | { kind: 'absent' }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'mismatch' };

/** Outcome of {@link Store.claimIdempotent}. */
export type IdempotencyClaim =
  | { kind: 'started'; claimId: string }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'mismatch' }
  | { kind: 'in_flight' };

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
const offset = (p: PageRequest) => (p.page - 1) * p.page_size;

/** SQL predicate "blockchain b is enabled for profile $1". */
const BLOCKCHAIN_ENABLED = `COALESCE((SELECT pb.enabled FROM profile_blockchains pb
  WHERE pb.profile_id = $1 AND pb.blockchain_id = b.blockchain_id), b.default_enabled)`;
/** SQL predicate "asset a (of blockchain b) is enabled for profile $1". */
const ASSET_ENABLED = `${BLOCKCHAIN_ENABLED} AND COALESCE((SELECT pa.enabled FROM profile_assets pa
  WHERE pa.profile_id = $1 AND pa.asset_id = a.asset_id), true)`;

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

/** Store of the custody REST API. */
export class Store {
  constructor(
    readonly db: Db,
    readonly clock: Clock,
  ) {}

  /** Run `fn` in the caller's transaction `tx`, or in a new one when there is none. */
  private inTx<T>(tx: Queryable | undefined, fn: (q: Queryable) => Promise<T>): Promise<T> {
    return tx === undefined ? this.db.tx(fn) : fn(tx);
  }

  // ---- profiles ---------------------------------------------------------------------------

  /** Create a profile (the scope of API paths and keys). */
  async createProfile(
    name: string,
    q: Queryable = this.db,
  ): Promise<{ profile_id: string; name: string; created_at: string }> {
    const id = randomUUID();
    const now = this.clock();
    await q.query('INSERT INTO profiles (profile_id, name, created_at) VALUES ($1, $2, $3)', [id, name, now]);
    return { profile_id: id, name, created_at: iso(now)! };
  }

  /** Every profile, oldest first. */
  async listProfiles(): Promise<{ profile_id: string; name: string; created_at: string }[]> {
    const rows = await this.db.query<{ profile_id: string; name: string; created_at: Date }>(
      'SELECT profile_id, name, created_at FROM profiles ORDER BY created_at, profile_id',
    );
    return rows.map((r) => ({ ...r, created_at: iso(r.created_at)! }));
  }

  /** Whether a profile exists. */
  async profileExists(profileId: string): Promise<boolean> {
    const r = await this.db.query('SELECT 1 FROM profiles WHERE profile_id = $1', [profileId]);
    return r.length > 0;
  }

  // ---- API keys -----------------------------------------------------------------------------

  /**
   * Create an API key for a profile. The secret `cst_<43 base64url chars>` (256 random bits) is
   * returned once; only its SHA-256 is stored (a fast hash suffices for a high-entropy token).
   * `allowedCidrs`: canonical ranges from `normaliseAllowedCidrs` (api/cidrs.ts) the key may be used
   * from, or null for any address.
   */
  async createApiKey(
    profileId: string,
    name: string,
    createdBy: string | null,
    q: Queryable = this.db,
    allowedCidrs: readonly string[] | null = null,
  ): Promise<{
    api_key_id: string;
    profile_id: string;
    name: string;
    key_prefix: string;
    allowed_cidrs: string[] | null;
    created_at: string;
    api_key: string;
  }> {
    const secret = `cst_${randomToken(32)}`;
    const id = randomUUID();
    const now = this.clock();
    const prefix = secret.slice(0, 10);
    const cidrs = allowedCidrs === null ? null : [...allowedCidrs];
    await q.query(
      `INSERT INTO api_keys (api_key_id, profile_id, name, key_hash, key_prefix, created_by, created_at, allowed_cidrs)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8::jsonb)`,
      [id, profileId, name, sha256Hex(secret), prefix, createdBy, now, cidrs === null ? null : JSON.stringify(cidrs)],
    );
    return {
      api_key_id: id,
      profile_id: profileId,
      name,
      key_prefix: prefix,
      allowed_cidrs: cidrs,
      created_at: iso(now)!,
      api_key: secret,
    };
  }

  private readonly keyTouched = new Map<string, number>();

  /**
   * Resolve a presented API key to its profile; `null` when unknown or revoked. With `clientIp`
   * (`req.ip`), `address_allowed` tells whether the key's `allowed_cidrs` (null: any address)
   * admit it; without, it is true only for a key without ranges. Records `last_used_at` at most
   * once a minute per key (best effort, not awaited), and only for an admitted address.
   */
  async authenticateApiKey(
    secret: string,
    clientIp?: string,
  ): Promise<{
    api_key_id: string;
    profile_id: string;
    allowed_cidrs: string[] | null;
    address_allowed: boolean;
  } | null> {
    const rows = await this.db.query<{ api_key_id: string; profile_id: string; allowed_cidrs: string[] | null }>(
      'SELECT api_key_id, profile_id, allowed_cidrs FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
      [sha256Hex(secret)],
    );
    const row = rows[0];
    if (row === undefined) return null;
    const allowed =
      row.allowed_cidrs === null || (clientIp !== undefined && addressAllowed(row.allowed_cidrs, clientIp));
    const key = { ...row, address_allowed: allowed };
    if (!allowed) return key;
    const now = this.clock();
    if ((this.keyTouched.get(key.api_key_id) ?? 0) + 60_000 <= now.getTime()) {
      this.keyTouched.set(key.api_key_id, now.getTime());
      this.db
        .query('UPDATE api_keys SET last_used_at = $2 WHERE api_key_id = $1', [key.api_key_id, now])
        .catch(() => this.keyTouched.delete(key.api_key_id));
    }
    return key;
  }

  // ---- directory ----------------------------------------------------------------------------

  /** Blockchains enabled for a profile, in directory order. */
  async listBlockchains(profileId: string, p: PageRequest): Promise<Page<BlockchainView>> {
    const rows = await this.db.query<{
      blockchain_id: string;
      key: string;
      name: string;
      family: BlockchainDef['family'];
      network: string;
      chain_id: string | null;
      account_model: 'account' | 'utxo';
      testnet: boolean;
      native_asset_id: string | null;
      total: number;
    }>(
      `SELECT b.blockchain_id, b.key, b.name, b.family, b.network, b.chain_id, b.account_model, b.testnet,
              (SELECT a.asset_id FROM assets a WHERE a.blockchain_id = b.blockchain_id AND a.kind = 'native') AS native_asset_id,
              count(*) OVER ()::int AS total
       FROM blockchains b WHERE ${BLOCKCHAIN_ENABLED}
       ORDER BY b.sort LIMIT $2 OFFSET $3`,
      [profileId, p.page_size, offset(p)],
    );
    const total = rows[0]?.total ?? (await this.countBlockchains(profileId));
    return {
      data: rows.map(({ total: _t, ...r }) => ({ ...r, address_types: [...ADDRESS_CODECS[r.family].addressTypes] })),
      page: p.page,
      page_size: p.page_size,
      total,
    };
  }

  private async countBlockchains(profileId: string): Promise<number> {
    const r = await this.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM blockchains b WHERE ${BLOCKCHAIN_ENABLED}`,
      [profileId],
    );
    return r[0]?.n ?? 0;
  }

  /** Assets enabled for a profile (an asset is visible when it and its blockchain are enabled). */
  async listAssets(profileId: string, p: PageRequest): Promise<Page<AssetView>> {
    const sql = `FROM assets a JOIN blockchains b ON b.blockchain_id = a.blockchain_id WHERE ${ASSET_ENABLED}`;
    const rows = await this.db.query<AssetView>(
      `SELECT a.asset_id, a.symbol, a.name, a.decimals, b.key AS blockchain, a.blockchain_id, a.kind, a.contract_address
       ${sql} ORDER BY b.sort, a.sort LIMIT $2 OFFSET $3`,
      [profileId, p.page_size, offset(p)],
    );
    const total = (await this.db.query<{ n: number }>(`SELECT count(*)::int AS n ${sql}`, [profileId]))[0]?.n ?? 0;
    return { data: rows, page: p.page, page_size: p.page_size, total };
  }

  /** Enable or disable a blockchain for a profile. */
  async setBlockchainEnabled(profileId: string, blockchainId: string, enabled: boolean, q: Queryable = this.db) {
    const r = await q.query('SELECT 1 FROM blockchains WHERE blockchain_id = $1', [blockchainId]);
    if (r.length === 0) throw new ApiError('RESOURCE_NOT_FOUND', 'no such blockchain');
    await q.query(
      `INSERT INTO profile_blockchains (profile_id, blockchain_id, enabled) VALUES ($1,$2,$3)
       ON CONFLICT (profile_id, blockchain_id) DO UPDATE SET enabled = EXCLUDED.enabled`,
      [profileId, blockchainId, enabled],
    );
  }

  /** Enable or disable an asset for a profile. */
  async setAssetEnabled(profileId: string, assetId: string, enabled: boolean, q: Queryable = this.db) {
    const r = await q.query('SELECT 1 FROM assets WHERE asset_id = $1', [assetId]);
    if (r.length === 0) throw new ApiError('RESOURCE_NOT_FOUND', 'no such asset');
    await q.query(
      `INSERT INTO profile_assets (profile_id, asset_id, enabled) VALUES ($1,$2,$3)
       ON CONFLICT (profile_id, asset_id) DO UPDATE SET enabled = EXCLUDED.enabled`,
      [profileId, assetId, enabled],
    );
  }

  // ---- master keys --------------------------------------------------------------------------

  /**
   * Record a master key's PUBLIC material (output of the DKG ceremony). Keys are validated as
   * curve points before they are stored.
   * @throws RangeError / Error for wrong lengths or invalid points
   */
  async insertMasterKey(input: MasterKeyInput, q: Queryable = this.db): Promise<MasterKeyView> {
    secp256k1Group.decodePoint(input.secp256k1.publicKey, 'secp256k1.publicKey');
    ed25519Group.decodePoint(input.ed25519.publicKey, 'ed25519.publicKey');
    for (const [n, c] of [
      ['secp256k1.chainCode', input.secp256k1.chainCode],
      ['ed25519.chainCode', input.ed25519.chainCode],
    ] as const) {
      if (!(c instanceof Uint8Array) || c.length !== 32) throw new RangeError(`${n} must be 32 bytes`);
    }
    const id = randomUUID();
    const now = this.clock();
    await q.query(
      `INSERT INTO master_keys (master_key_id, ceremony_id, threshold, parties, secp256k1_public_key,
         secp256k1_chain_code, ed25519_public_key, ed25519_chain_code, created_at)
       VALUES ($1,$2,$3,$4::jsonb,$5,$6,$7,$8,$9)`,
      [
        id,
        input.ceremonyId,
        input.threshold,
        JSON.stringify(input.parties),
        hex(input.secp256k1.publicKey),
        hex(input.secp256k1.chainCode),
        hex(input.ed25519.publicKey),
        hex(input.ed25519.chainCode),
        now,
      ],
    );
    return (await this.listMasterKeys(q)).find((m) => m.master_key_id === id)!;
  }

  /** Every master key record, oldest first. */
  async listMasterKeys(q: Queryable = this.db): Promise<MasterKeyView[]> {
    const rows = await q.query<MasterKeyView & { created_at: Date }>(
      `SELECT master_key_id, ceremony_id, threshold, parties, secp256k1_public_key, secp256k1_chain_code,
              ed25519_public_key, ed25519_chain_code, created_at FROM master_keys ORDER BY created_at, master_key_id`,
    );
    return rows.map((r) => ({ ...r, created_at: iso(r.created_at)! }));
  }

  // ---- wallets and addresses ----------------------------------------------------------------

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
   * Derive and insert the next address of a wallet on one blockchain, skipping the (probability
   * < 2^-127) indices BIP32 declares invalid. Caller holds the wallet row lock.
   */
  private async insertNextAddress(
    q: Queryable,
    w: { wallet_id: string; wallet_index: number; secp256k1_public_key: string; secp256k1_chain_code: string },
    blockchainId: string,
    chain: BlockchainDef,
    type: AddressType,
  ): Promise<AddressView> {
    const r = await q.query<{ next: number }>(
      `SELECT COALESCE(max(address_index) + 1, 0)::int AS next FROM addresses WHERE wallet_id = $1 AND blockchain_id = $2`,
      [w.wallet_id, blockchainId],
    );
    let index = r[0]?.next ?? 0;
    const codec = ADDRESS_CODECS[chain.family];
    for (;;) {
      const path = addressPath(chain.coinType, w.wallet_index, index);
      let child: { publicKey: Uint8Array };
      try {
        child = deriveSecp256k1(unhex(w.secp256k1_public_key), unhex(w.secp256k1_chain_code), path);
      } catch (e) {
        if (e instanceof Bip32InvalidChildError && e.depth === 5) {
          index++;
          continue;
        }
        throw e;
      }
      const row: AddressRow = {
        address_id: randomUUID(),
        wallet_id: w.wallet_id,
        blockchain_id: blockchainId,
        address: codec.encode(child.publicKey, type, chain),
        address_type: type,
        address_index: index,
        derivation_path: path,
        public_key: hex(child.publicKey),
        created_at: this.clock(),
      };
      await q.query(
        `INSERT INTO addresses (address_id, wallet_id, blockchain_id, address_index, address, address_type, public_key,
           derivation_path, created_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)`,
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
        ],
      );
      return addressView(row);
    }
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
        }>(
          `SELECT master_key_id, ceremony_id, next_wallet_index, secp256k1_public_key, secp256k1_chain_code FROM master_keys
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
      const now = this.clock();
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
      await emitEvent(q, this.clock, {
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
    const where = `profile_id = $1${walletIds === undefined ? '' : ' AND wallet_id = ANY($2::uuid[])'}`;
    const params: unknown[] = walletIds === undefined ? [profileId] : [profileId, walletIds];
    const n = params.length;
    const rows = await this.db.query<{ wallet_id: string }>(
      `SELECT wallet_id FROM wallets WHERE ${where} ORDER BY created_at, wallet_id LIMIT $${n + 1} OFFSET $${n + 2}`,
      [...params, p.page_size, offset(p)],
    );
    const total =
      (await this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM wallets WHERE ${where}`, params))[0]?.n ?? 0;
    return { data: rows, page: p.page, page_size: p.page_size, total };
  }

  /** One wallet with its blockchains and addresses, or 404 WALLET_NOT_FOUND. */
  async getWallet(profileId: string, walletId: string): Promise<WalletView> {
    const w = (
      await this.db.query<{ wallet_id: string; profile_id: string; name: string | null; created_at: Date }>(
        'SELECT wallet_id, profile_id, name, created_at FROM wallets WHERE profile_id = $1 AND wallet_id = $2',
        [profileId, walletId],
      )
    )[0];
    if (w === undefined) throw new ApiError('WALLET_NOT_FOUND', `no wallet ${walletId} in this profile`);
    const chains = await this.db.query<{ blockchain_id: string }>(
      `SELECT wb.blockchain_id FROM wallet_blockchains wb JOIN blockchains b USING (blockchain_id)
       WHERE wb.wallet_id = $1 ORDER BY b.sort`,
      [walletId],
    );
    const addrs = await this.db.query<AddressRow>(
      `SELECT a.* FROM addresses a JOIN blockchains b USING (blockchain_id) WHERE a.wallet_id = $1
       ORDER BY b.sort, a.address_index`,
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

  private async requireWallet(q: Queryable, profileId: string, walletId: string, lock = false) {
    const w = (
      await q.query<{
        wallet_id: string;
        wallet_index: number;
        secp256k1_public_key: string;
        secp256k1_chain_code: string;
      }>(
        `SELECT w.wallet_id, w.wallet_index, m.secp256k1_public_key, m.secp256k1_chain_code
         FROM wallets w JOIN master_keys m USING (master_key_id)
         WHERE w.profile_id = $1 AND w.wallet_id = $2 ${lock ? 'FOR UPDATE OF w' : ''}`,
        [profileId, walletId],
      )
    )[0];
    if (w === undefined) throw new ApiError('WALLET_NOT_FOUND', `no wallet ${walletId} in this profile`);
    return w;
  }

  /** Deposit addresses of a wallet, optionally on one blockchain. */
  async listAddresses(
    profileId: string,
    walletId: string,
    blockchainId: string | undefined,
    p: PageRequest,
  ): Promise<Page<AddressView>> {
    await this.requireWallet(this.db, profileId, walletId);
    const params: unknown[] = [walletId];
    if (blockchainId !== undefined) params.push(blockchainId);
    const where = `a.wallet_id = $1 ${blockchainId !== undefined ? 'AND a.blockchain_id = $2' : ''}`;
    const n = params.length;
    const rows = await this.db.query<AddressRow>(
      `SELECT a.* FROM addresses a JOIN blockchains b USING (blockchain_id) WHERE ${where}
       ORDER BY b.sort, a.address_index LIMIT $${n + 1} OFFSET $${n + 2}`,
      [...params, p.page_size, offset(p)],
    );
    const total =
      (await this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM addresses a WHERE ${where}`, params))[0]?.n ??
      0;
    return { data: rows.map(addressView), page: p.page, page_size: p.page_size, total };
  }

  /**
   * Create an additional deposit address. Only UTXO blockchains allow several addresses per
   * wallet (seed §2 "Address"); the wallet row lock serialises concurrent creations.
   * @throws ApiError WALLET_NOT_FOUND (404), BLOCKCHAIN_NOT_IN_WALLET / ADDRESS_LIMIT_REACHED /
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
    await emitEvent(q, this.clock, {
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

  // ---- balances -----------------------------------------------------------------------------

  /**
   * Balances of a wallet: one entry per (blockchain of the wallet) × (asset enabled for the
   * profile on that blockchain), zero when nothing was ever observed.
   */
  async listBalances(
    profileId: string,
    walletId: string,
    filter: { blockchain_id?: string; asset_id?: string },
    p: PageRequest,
  ): Promise<Page<BalanceView>> {
    await this.requireWallet(this.db, profileId, walletId);
    const conds = ['wb.wallet_id = $2', ASSET_ENABLED];
    const params: unknown[] = [profileId, walletId];
    if (filter.blockchain_id !== undefined) {
      params.push(filter.blockchain_id);
      conds.push(`a.blockchain_id = $${params.length}`);
    }
    if (filter.asset_id !== undefined) {
      params.push(filter.asset_id);
      conds.push(`a.asset_id = $${params.length}`);
    }
    const from = `FROM wallet_blockchains wb JOIN blockchains b ON b.blockchain_id = wb.blockchain_id
      JOIN assets a ON a.blockchain_id = wb.blockchain_id
      LEFT JOIN balances bal ON bal.wallet_id = wb.wallet_id AND bal.asset_id = a.asset_id
      WHERE ${conds.join(' AND ')}`;
    const rows = await this.db.query<{
      blockchain_id: string;
      asset_id: string;
      symbol: string;
      decimals: number;
      amount: string;
      updated_at: Date | null;
    }>(
      `SELECT a.blockchain_id, a.asset_id, a.symbol, a.decimals, COALESCE(bal.amount, 0)::text AS amount, bal.updated_at
       ${from} ORDER BY b.sort, a.sort LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, p.page_size, offset(p)],
    );
    const total = (await this.db.query<{ n: number }>(`SELECT count(*)::int AS n ${from}`, params))[0]?.n ?? 0;
    return {
      data: rows.map((r) => ({
        wallet_id: walletId,
        blockchain_id: r.blockchain_id,
        asset_id: r.asset_id,
        symbol: r.symbol,
        decimals: r.decimals,
        amount: formatUnits(BigInt(r.amount), r.decimals),
        amount_base_units: r.amount,
        updated_at: iso(r.updated_at),
      })),
      page: p.page,
      page_size: p.page_size,
      total,
    };
  }

  /** Balance of one asset of a wallet; 404 ASSET_NOT_FOUND when the wallet cannot hold it. */
  async getBalance(profileId: string, walletId: string, assetId: string): Promise<BalanceView> {
    const r = await this.listBalances(profileId, walletId, { asset_id: assetId }, { page: 1, page_size: 1 });
    const b = r.data[0];
    if (b === undefined) {
      throw new ApiError('ASSET_NOT_FOUND', `asset ${assetId} is not enabled on any blockchain of this wallet`);
    }
    return b;
  }

  /**
   * Set a wallet's balance of an asset (integer base units, decimal string). Used by the chain
   * indexer; never takes floats.
   * @throws RangeError when `amount` is not a non-negative integer string
   */
  async setBalance(walletId: string, assetId: string, amount: string, q: Queryable = this.db): Promise<void> {
    if (!/^(0|[1-9][0-9]{0,77})$/.test(amount)) throw new RangeError('amount must be a non-negative integer string');
    await q.query(
      `INSERT INTO balances (wallet_id, asset_id, amount, updated_at) VALUES ($1,$2,$3::numeric,$4)
       ON CONFLICT (wallet_id, asset_id) DO UPDATE SET amount = EXCLUDED.amount, updated_at = EXCLUDED.updated_at`,
      [walletId, assetId, amount, this.clock()],
    );
  }

  // ---- idempotency --------------------------------------------------------------------------

  /**
   * Look up a completed, unexpired idempotency record without claiming the key (no lock, no
   * transaction): `replay` when it matches the request (method, lowercased path, SHA-256 of the
   * canonical body), `mismatch` when it does not, `absent` otherwise.
   */
  async peekIdempotent(
    profileId: string,
    key: string,
    method: string,
    path: string,
    requestHash: string,
  ): Promise<IdempotencyPeek> {
    const row = (
      await this.db.query<IdempotencyRow>(
        `SELECT method, path, request_hash, state, status_code, response_body FROM idempotency_keys
         WHERE profile_id = $1 AND idempotency_key = $2 AND state = 'DONE' AND expires_at > $3`,
        [profileId, key, this.clock()],
      )
    )[0];
    if (row === undefined) return { kind: 'absent' };
    return matchIdempotent(row, method, path, requestHash);
  }

  /**
   * Claim an idempotency key inside the caller's transaction `q` — the one that then creates the
   * resource and {@link completeIdempotent completes} the record, so a claim is never committed
   * on its own: a crash or error before the commit rolls back the claim with the resource, and a
   * retry finds the key free. The primary key (profile_id, idempotency_key) makes the claim
   * atomic: a concurrent request with the same key waits on the uncommitted claim, then sees the
   * completed record (`replay`/`mismatch`) or, after a rollback, claims the key itself; it waits at
   * most `waitMs` (PostgreSQL `lock_timeout`), then gets `in_flight` and must roll back. Deleted
   * first: an expired record (the key may be reused after the retention window) and an IN_FLIGHT
   * record left committed by an earlier version, which completed records outside the creating
   * transaction.
   * @param retentionMs how long the completed record is kept
   * @param waitMs longest wait for a concurrent claim of the same key (ms)
   */
  async claimIdempotent(
    q: Queryable,
    profileId: string,
    key: string,
    method: string,
    path: string,
    requestHash: string,
    retentionMs: number,
    waitMs: number,
  ): Promise<IdempotencyClaim> {
    const now = this.clock();
    const prev = (await q.query<{ v: string }>(`SELECT current_setting('lock_timeout') AS v`))[0]?.v ?? '0';
    await q.query(`SELECT set_config('lock_timeout', $1, true)`, [`${Math.max(1, Math.ceil(waitMs))}ms`]);
    const claimId = randomUUID();
    let inserted: boolean;
    try {
      await q.query(
        `DELETE FROM idempotency_keys WHERE profile_id = $1 AND idempotency_key = $2
           AND (expires_at <= $3 OR state = 'IN_FLIGHT')`,
        [profileId, key, now],
      );
      const ins = await q.query(
        `INSERT INTO idempotency_keys (profile_id, idempotency_key, claim_id, method, path, request_hash, state,
           created_at, expires_at)
         VALUES ($1,$2,$3,$4,$5,$6,'IN_FLIGHT',$7,$8) ON CONFLICT (profile_id, idempotency_key) DO NOTHING RETURNING 1`,
        [profileId, key, claimId, method, path, requestHash, now, new Date(now.getTime() + retentionMs)],
      );
      inserted = ins.length === 1;
    } catch (e) {
      // lock_not_available: the first request with this key is still running.
      if ((e as { code?: unknown }).code === '55P03') return { kind: 'in_flight' };
      throw e;
    }
    await q.query(`SELECT set_config('lock_timeout', $1, true)`, [prev]);
    if (inserted) return { kind: 'started', claimId };
    const row = (
      await q.query<IdempotencyRow>(
        `SELECT method, path, request_hash, state, status_code, response_body FROM idempotency_keys
         WHERE profile_id = $1 AND idempotency_key = $2`,
        [profileId, key],
      )
    )[0];
    // Gone again between our INSERT and SELECT (expired and purged): the client retries.
    if (row === undefined || row.state !== 'DONE') return { kind: 'in_flight' };
    return matchIdempotent(row, method, path, requestHash);
  }

  /**
   * Complete a claim with the response to replay (status, JSON body), in the transaction `q` of
   * its {@link claimIdempotent claim} — committed together with the resource it describes.
   */
  async completeIdempotent(
    q: Queryable,
    profileId: string,
    key: string,
    claimId: string,
    status: number,
    body: unknown,
  ): Promise<void> {
    await q.query(
      `UPDATE idempotency_keys SET state = 'DONE', status_code = $4, response_body = $5::jsonb
       WHERE profile_id = $1 AND idempotency_key = $2 AND claim_id = $3`,
      [profileId, key, claimId, status, JSON.stringify(body)],
    );
  }

  /** Delete expired idempotency records; returns how many. */
  async purgeIdempotency(): Promise<number> {
    const r = await this.db.query('DELETE FROM idempotency_keys WHERE expires_at <= $1 RETURNING 1', [this.clock()]);
    return r.length;
  }
}

interface IdempotencyRow {
  method: string;
  path: string;
  request_hash: string;
  state: string;
  status_code: number | null;
  response_body: unknown;
}

function matchIdempotent(
  row: IdempotencyRow,
  method: string,
  path: string,
  requestHash: string,
): { kind: 'replay'; status: number; body: unknown } | { kind: 'mismatch' } {
  if (row.method !== method || row.path !== path || row.request_hash !== requestHash) return { kind: 'mismatch' };
  return { kind: 'replay', status: row.status_code ?? 200, body: row.response_body };
}
