/**
 * The wallets room: profiles and their directory settings, wallets, addresses and balances, wallet
 * groups and address groups. {@link WalletService} holds the dashboard's audited changes (profile
 * creation, enabling blockchains and assets, wallet creation and renaming) and exposes the room's
 * stores — {@link ProfileStore} (`profiles.ts`), {@link WalletStore} (`store.ts`),
 * {@link BalanceStore} (`balances.ts`) — and {@link GroupService} (`groups.ts`), all built from
 * the same components.
 */
import type { AuditLog } from '../audit/service.js';
import type { Db } from '../db/db.js';
import { ApiError } from '../errors.js';
import type { Page, PageRequest } from '../store.js';
import { type Clock, iso } from '../util.js';
import { emitEvent } from '../webhooks/outbox.js';
import { WalletArchive } from './archive.js';
import { BalanceStore } from './balances.js';
import { type DepositView, listDeposits } from './deposits.js';
import { GroupService } from './groups.js';
import { ProfileStore } from './profiles.js';
import { WalletStore, type WalletView } from './store.js';

/** Dependencies of {@link WalletService} (and of its stores and groups). */
export interface WalletComponents {
  readonly db: Db;
  readonly clock: Clock;
  readonly audit: AuditLog;
}

/** The admin API's wallet: the wallet object plus `archived_at` (ISO 8601 UTC, null while active). */
export type AdminWalletView = WalletView & { archived_at: string | null };

/** Profiles, wallets, balances and groups. */
export class WalletService {
  /** Profiles and their enabled blockchains and assets. */
  readonly profiles: ProfileStore;
  /** Wallets and addresses. */
  readonly store: WalletStore;
  /** Wallet balances. */
  readonly balances: BalanceStore;
  /** Wallet groups and address groups. */
  readonly groups: GroupService;
  /** Wallet archival and deletion, address labels and archival (archive.ts). */
  readonly archive: WalletArchive;

  constructor(private readonly c: WalletComponents) {
    this.profiles = new ProfileStore(c);
    this.store = new WalletStore(c);
    this.balances = new BalanceStore({ ...c, wallets: this.store });
    this.groups = new GroupService({ db: c.db, clock: c.clock, audit: c.audit.record });
    this.archive = new WalletArchive(c);
  }

  /** Create a profile (dashboard); audited `profile.created`. */
  async createProfile(actor: string, name: string) {
    return this.c.db.tx(async (q) => {
      const p = await this.profiles.createProfile(name, q);
      await this.c.audit.record(q, actor, 'profile.created', 'profile', p.profile_id, { name });
      return p;
    });
  }

  /**
   * Enable or disable a blockchain or an asset for a profile; audited `profile.<kind>_enabled|disabled`.
   * @throws ApiError RESOURCE_NOT_FOUND (profile, blockchain or asset)
   */
  async setDirectoryEntry(
    actor: string,
    profileId: string,
    kind: 'blockchain' | 'asset',
    id: string,
    enabled: boolean,
  ) {
    await this.c.db.tx(async (q) => {
      await this.profiles.requireProfile(q, profileId);
      if (kind === 'blockchain') await this.profiles.setBlockchainEnabled(profileId, id, enabled, q);
      else await this.profiles.setAssetEnabled(profileId, id, enabled, q);
      await this.c.audit.record(q, actor, `profile.${kind}_${enabled ? 'enabled' : 'disabled'}`, kind, id, {
        profile_id: profileId,
      });
    });
  }

  /**
   * Wallet creation from the dashboard (same derivation as the REST API); audited `wallet.created`.
   * @throws ApiError RESOURCE_NOT_FOUND (profile), UNKNOWN_BLOCKCHAIN (422), NO_MASTER_KEY (409)
   */
  async createWallet(actor: string, profileId: string, input: { name?: string; blockchain_ids: string[] }) {
    await this.profiles.requireProfile(this.c.db, profileId);
    return this.store.createWallet(profileId, input, (q, w) =>
      this.c.audit.record(q, actor, 'wallet.created', 'wallet', w.wallet_id, { profile_id: profileId }),
    );
  }

  /**
   * Rename a wallet (dashboard); emits WALLET_UPDATED in the same transaction.
   * @throws ApiError WALLET_NOT_FOUND
   */
  async updateWallet(actor: string, profileId: string, walletId: string, input: { name: string | null }) {
    await this.c.db.tx(async (q) => {
      const r = await q.query(
        'UPDATE wallets SET name = $3 WHERE profile_id = $1 AND wallet_id = $2 AND deleted_at IS NULL RETURNING wallet_id',
        [profileId, walletId, input.name],
      );
      if (r.length === 0) throw new ApiError('WALLET_NOT_FOUND', `no wallet ${walletId} in this profile`);
      await this.c.audit.record(q, actor, 'wallet.updated', 'wallet', walletId, { profile_id: profileId });
      await emitEvent(q, this.c.clock, {
        profileId,
        type: 'WALLET_UPDATED',
        data: { wallet_id: walletId, name: input.name },
      });
    });
    return this.store.getWallet(profileId, walletId);
  }

  /**
   * One wallet as the admin API shows it: {@link WalletStore.getWallet} plus `archived_at`.
   * @throws ApiError WALLET_NOT_FOUND
   */
  async getAdminWallet(profileId: string, walletId: string): Promise<AdminWalletView> {
    const w = await this.store.getWallet(profileId, walletId);
    const r = await this.c.db.query<{ archived_at: Date | null }>(
      'SELECT archived_at FROM wallets WHERE wallet_id = $1',
      [walletId],
    );
    return { ...w, archived_at: iso(r[0]?.archived_at ?? null) };
  }

  /**
   * Newest-first page of a wallet's detected incoming transactions (deposits.ts); amounts as decimal
   * strings in asset units plus `amount_base_units`.
   * @throws ApiError WALLET_NOT_FOUND
   */
  async listDeposits(profileId: string, walletId: string, p: PageRequest): Promise<Page<DepositView>> {
    return listDeposits(this.c.db, profileId, walletId, p);
  }
}
