/**
 * Profiles and their directory settings (wallets room): profiles (the scope of API paths and
 * keys), and per profile the enabled blockchains and assets of the built-in directory.
 */
import { randomUUID } from 'node:crypto';
import { ADDRESS_CODECS, type AddressType } from '../addresses.js';
import type { Db, Queryable } from '../db/db.js';
import type { BlockchainDef } from '../directory.js';
import { ApiError } from '../errors.js';
import { notFound, type Page, type PageRequest, pageOffset } from '../store.js';
import { type Clock, iso } from '../util.js';

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

/** What {@link ProfileStore.listDirectory} adds to a {@link BlockchainView}. */
export interface DirectoryFlags {
  /** Enabled for the profile (its own setting, else the directory default). */
  enabled: boolean;
  /** A development network (e.g. `ethereum-local`): off by default in production mode. */
  development: boolean;
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

/** SQL predicate "blockchain b is enabled for profile $1". */
export const BLOCKCHAIN_ENABLED = `COALESCE((SELECT pb.enabled FROM profile_blockchains pb
  WHERE pb.profile_id = $1 AND pb.blockchain_id = b.blockchain_id), b.default_enabled)`;
/** SQL predicate "asset a (of blockchain b) is enabled for profile $1". */
export const ASSET_ENABLED = `${BLOCKCHAIN_ENABLED} AND COALESCE((SELECT pa.enabled FROM profile_assets pa
  WHERE pa.profile_id = $1 AND pa.asset_id = a.asset_id), true)`;

/** Dependencies of {@link ProfileStore}. */
export interface ProfileStoreComponents {
  readonly db: Db;
  readonly clock: Clock;
}

/** Profiles and their enabled blockchains and assets. */
export class ProfileStore {
  constructor(private readonly c: ProfileStoreComponents) {}

  /** Create a profile (the scope of API paths and keys). */
  async createProfile(
    name: string,
    q: Queryable = this.c.db,
  ): Promise<{ profile_id: string; name: string; created_at: string }> {
    const id = randomUUID();
    const now = this.c.clock();
    await q.query('INSERT INTO profiles (profile_id, name, created_at) VALUES ($1, $2, $3)', [id, name, now]);
    return { profile_id: id, name, created_at: iso(now)! };
  }

  /** Every profile, oldest first. */
  async listProfiles(): Promise<{ profile_id: string; name: string; created_at: string }[]> {
    const rows = await this.c.db.query<{ profile_id: string; name: string; created_at: Date }>(
      'SELECT profile_id, name, created_at FROM profiles ORDER BY created_at, profile_id',
    );
    return rows.map((r) => ({ ...r, created_at: iso(r.created_at)! }));
  }

  /** Whether a profile exists. */
  async profileExists(profileId: string): Promise<boolean> {
    const r = await this.c.db.query('SELECT 1 FROM profiles WHERE profile_id = $1', [profileId]);
    return r.length > 0;
  }

  /** @throws ApiError RESOURCE_NOT_FOUND unless the profile exists (in `q`, the caller's transaction). */
  async requireProfile(q: Queryable, profileId: string): Promise<void> {
    if ((await q.query('SELECT 1 FROM profiles WHERE profile_id = $1', [profileId])).length === 0) {
      throw notFound('profile');
    }
  }

  /**
   * Every blockchain of the directory, in directory order, each with whether it is enabled for the
   * profile (its own setting, else the directory default: development networks are off in
   * production) and whether it is a development network — what an Admin reads to enable one by
   * its key (`custodian admin chains list --all`).
   */
  async listDirectory(profileId: string, p: PageRequest): Promise<Page<BlockchainView & DirectoryFlags>> {
    const rows = await this.c.db.query<BlockchainView & DirectoryFlags & { total: number }>(
      `SELECT b.blockchain_id, b.key, b.name, b.family, b.network, b.chain_id, b.account_model, b.testnet,
              (SELECT a.asset_id FROM assets a WHERE a.blockchain_id = b.blockchain_id AND a.kind = 'native') AS native_asset_id,
              ${BLOCKCHAIN_ENABLED} AS enabled, b.development,
              count(*) OVER ()::int AS total
       FROM blockchains b ORDER BY b.sort LIMIT $2 OFFSET $3`,
      [profileId, p.page_size, pageOffset(p)],
    );
    const total =
      rows[0]?.total ?? (await this.c.db.query<{ n: number }>('SELECT count(*)::int AS n FROM blockchains'))[0]?.n ?? 0;
    return {
      data: rows.map(({ total: _t, ...r }) => ({
        ...r,
        address_types: [...ADDRESS_CODECS[r.family as BlockchainDef['family']].addressTypes],
      })),
      page: p.page,
      page_size: p.page_size,
      total,
    };
  }

  /** Blockchains enabled for a profile, in directory order. */
  async listBlockchains(profileId: string, p: PageRequest): Promise<Page<BlockchainView>> {
    const rows = await this.c.db.query<{
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
      [profileId, p.page_size, pageOffset(p)],
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
    const r = await this.c.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM blockchains b WHERE ${BLOCKCHAIN_ENABLED}`,
      [profileId],
    );
    return r[0]?.n ?? 0;
  }

  /** Assets enabled for a profile (an asset is visible when it and its blockchain are enabled). */
  async listAssets(profileId: string, p: PageRequest): Promise<Page<AssetView>> {
    const sql = `FROM assets a JOIN blockchains b ON b.blockchain_id = a.blockchain_id WHERE ${ASSET_ENABLED}`;
    const rows = await this.c.db.query<AssetView>(
      `SELECT a.asset_id, a.symbol, a.name, a.decimals, b.key AS blockchain, a.blockchain_id, a.kind, a.contract_address
       ${sql} ORDER BY b.sort, a.sort LIMIT $2 OFFSET $3`,
      [profileId, p.page_size, pageOffset(p)],
    );
    const total = (await this.c.db.query<{ n: number }>(`SELECT count(*)::int AS n ${sql}`, [profileId]))[0]?.n ?? 0;
    return { data: rows, page: p.page, page_size: p.page_size, total };
  }

  /** Enable or disable a blockchain for a profile. */
  async setBlockchainEnabled(profileId: string, blockchainId: string, enabled: boolean, q: Queryable = this.c.db) {
    const r = await q.query('SELECT 1 FROM blockchains WHERE blockchain_id = $1', [blockchainId]);
    if (r.length === 0) throw new ApiError('RESOURCE_NOT_FOUND', 'no such blockchain');
    await q.query(
      `INSERT INTO profile_blockchains (profile_id, blockchain_id, enabled) VALUES ($1,$2,$3)
       ON CONFLICT (profile_id, blockchain_id) DO UPDATE SET enabled = EXCLUDED.enabled`,
      [profileId, blockchainId, enabled],
    );
  }

  /** Enable or disable an asset for a profile. */
  async setAssetEnabled(profileId: string, assetId: string, enabled: boolean, q: Queryable = this.c.db) {
    const r = await q.query('SELECT 1 FROM assets WHERE asset_id = $1', [assetId]);
    if (r.length === 0) throw new ApiError('RESOURCE_NOT_FOUND', 'no such asset');
    await q.query(
      `INSERT INTO profile_assets (profile_id, asset_id, enabled) VALUES ($1,$2,$3)
       ON CONFLICT (profile_id, asset_id) DO UPDATE SET enabled = EXCLUDED.enabled`,
      [profileId, assetId, enabled],
    );
  }
}
