/**
 * Wallet archival and deletion, address labels and archival (admin API only: the seed's REST API
 * lists no such endpoint, so API-key holders cannot archive or delete; an Admin does it from the
 * dashboard, with a fresh step-up for the destructive ones). Each change fires its webhook event in
 * the same transaction (webhooks/outbox.ts):
 *
 * - Archive / unarchive a wallet → WALLET_UPDATED (`archived`). Archival hides nothing on chain:
 *   the wallet stays listed, its addresses stay watched and deposits are still credited; it only
 *   refuses new transfers and new addresses (409 `WALLET_ARCHIVED`) until unarchived.
 * - Delete a wallet → WALLET_DELETED. Refused while any balance of it is above zero (409
 *   `WALLET_NOT_EMPTY`) or any transfer of it is not terminal (409 `WALLET_TRANSFERS_PENDING`:
 *   PENDING … READY_TO_SEND, or SENT and not yet delivered). Soft delete (`wallets.deleted_at`):
 *   the wallet disappears from lists and GETs (404 `WALLET_NOT_FOUND`), but its rows stay, so its
 *   wallet index and address indices are never reused, and its addresses stay watched — a late
 *   deposit is still recorded against the (hidden) wallet rather than lost.
 * - Set or clear an address label → ADDRESS_UPDATED (`label`); unarchive → ADDRESS_UPDATED.
 * - Archive an address → ADDRESS_DELETED: it is no longer listed as a deposit address, but it stays
 *   watched and its coins stay spendable, because a payer holding the old address may still pay
 *   to it and coins already there must not be stranded. Its index is never reused. On an
 *   account-based blockchain the address is the wallet's only one there and cannot be archived
 *   (409 `ADDRESS_NOT_ARCHIVABLE`).
 */
import type { AuditLog } from '../audit/service.js';
import type { Db, Queryable } from '../db/db.js';
import { blockchainByKey } from '../directory.js';
import { ApiError } from '../errors.js';
import { type Page, type PageRequest, pageOffset } from '../store.js';
import { type Clock, iso } from '../util.js';
import { emitEvent } from '../webhooks/outbox.js';
import type { AddressView } from './store.js';

/** Dependencies of {@link WalletArchive}. */
export interface WalletArchiveComponents {
  readonly db: Db;
  readonly clock: Clock;
  readonly audit: AuditLog;
}

/** Archive state of a wallet (`archived_at` ISO 8601 UTC, or null). */
export interface WalletArchiveView {
  wallet_id: string;
  name: string | null;
  archived_at: string | null;
}

/** An address with its label and archive state (admin API): the address object without its key and creation time. */
export type LabelledAddressView = Omit<AddressView, 'public_key' | 'created_at'> & {
  label: string | null;
  archived_at: string | null;
};

interface WalletRow {
  wallet_id: string;
  name: string | null;
  archived_at: Date | null;
}

/** Statuses of a transfer that is not finished (a SENT one counts until delivered). */
const ACTIVE_TRANSFER = `(status IN ('PENDING', 'PENDING_APPROVAL', 'PENDING_SIGNATURE', 'READY_TO_SEND')
  OR (status = 'SENT' AND delivered_at IS NULL))`;

/** Lock a live (not deleted) wallet row. @throws ApiError WALLET_NOT_FOUND */
async function lockWallet(q: Queryable, profileId: string, walletId: string): Promise<WalletRow> {
  const w = (
    await q.query<WalletRow>(
      `SELECT wallet_id, name, archived_at FROM wallets
       WHERE profile_id = $1 AND wallet_id = $2 AND deleted_at IS NULL FOR UPDATE`,
      [profileId, walletId],
    )
  )[0];
  if (w === undefined) throw new ApiError('WALLET_NOT_FOUND', `no wallet ${walletId} in this profile`);
  return w;
}

/**
 * Refuse when the wallet is archived: the guard of transfer and address creation.
 * @throws ApiError WALLET_ARCHIVED (409)
 */
export function refuseArchived(w: { wallet_id: string; archived_at: Date | null }): void {
  if (w.archived_at !== null) {
    throw new ApiError('WALLET_ARCHIVED', `wallet ${w.wallet_id} is archived; an Admin may unarchive it`);
  }
}

/** Wallet archival and deletion, address labels and archival (see the module comment). */
export class WalletArchive {
  constructor(private readonly c: WalletArchiveComponents) {}

  /**
   * Every address of a live wallet, archived ones included, with `label` and `archived_at`, in
   * blockchain order then branch and address index (admin API; the REST listing shows only the
   * addresses not archived).
   * @throws ApiError WALLET_NOT_FOUND (404)
   */
  async listAddresses(profileId: string, walletId: string, p: PageRequest): Promise<Page<LabelledAddressView>> {
    const live = await this.c.db.query(
      'SELECT 1 FROM wallets WHERE profile_id = $1 AND wallet_id = $2 AND deleted_at IS NULL',
      [profileId, walletId],
    );
    if (live.length === 0) throw new ApiError('WALLET_NOT_FOUND', `no wallet ${walletId} in this profile`);
    const rows = await this.c.db.query<Omit<LabelledAddressView, 'archived_at'> & { archived_at: Date | null }>(
      `SELECT a.address_id, a.wallet_id, a.blockchain_id, a.address, a.address_type, a.address_index,
         a.derivation_path, a.label, a.archived_at
       FROM addresses a JOIN blockchains b USING (blockchain_id) WHERE a.wallet_id = $1
       ORDER BY b.sort, a.branch, a.address_index LIMIT $2 OFFSET $3`,
      [walletId, p.page_size, pageOffset(p)],
    );
    const total =
      (
        await this.c.db.query<{ n: number }>('SELECT count(*)::int AS n FROM addresses WHERE wallet_id = $1', [
          walletId,
        ])
      )[0]?.n ?? 0;
    return {
      data: rows.map((r) => ({ ...r, archived_at: iso(r.archived_at) ?? null })),
      page: p.page,
      page_size: p.page_size,
      total,
    };
  }

  /**
   * Archive (`archived` true) or unarchive a wallet; WALLET_UPDATED with `archived` when the state
   * changes (nothing when it already is); audited `wallet.archived` / `wallet.unarchived`.
   * @throws ApiError WALLET_NOT_FOUND (404)
   */
  async setArchived(actor: string, profileId: string, walletId: string, archived: boolean): Promise<WalletArchiveView> {
    return this.c.db.tx(async (q) => {
      const w = await lockWallet(q, profileId, walletId);
      if ((w.archived_at !== null) === archived) return view(w);
      const at = archived ? this.c.clock() : null;
      await q.query('UPDATE wallets SET archived_at = $2 WHERE wallet_id = $1', [walletId, at]);
      await this.c.audit.record(q, actor, archived ? 'wallet.archived' : 'wallet.unarchived', 'wallet', walletId, {
        profile_id: profileId,
      });
      await emitEvent(q, this.c.clock, {
        profileId,
        type: 'WALLET_UPDATED',
        data: { wallet_id: walletId, name: w.name, archived },
      });
      return view({ ...w, archived_at: at });
    });
  }

  /**
   * Soft-delete an empty wallet with no unfinished transfer; WALLET_DELETED; audited `wallet.deleted`.
   * @throws ApiError WALLET_NOT_FOUND (404), WALLET_NOT_EMPTY / WALLET_TRANSFERS_PENDING (409)
   */
  async deleteWallet(actor: string, profileId: string, walletId: string): Promise<void> {
    await this.c.db.tx(async (q) => {
      const w = await lockWallet(q, profileId, walletId);
      const funded = await q.query('SELECT 1 FROM balances WHERE wallet_id = $1 AND amount > 0 LIMIT 1', [walletId]);
      if (funded.length > 0) {
        throw new ApiError('WALLET_NOT_EMPTY', 'the wallet holds a balance: move the funds out before deleting it');
      }
      const active = await q.query(`SELECT 1 FROM transfers WHERE wallet_id = $1 AND ${ACTIVE_TRANSFER} LIMIT 1`, [
        walletId,
      ]);
      if (active.length > 0) {
        throw new ApiError('WALLET_TRANSFERS_PENDING', 'a transfer of the wallet is not finished yet');
      }
      const chains = await q.query<{ blockchain_id: string }>(
        `SELECT wb.blockchain_id FROM wallet_blockchains wb JOIN blockchains b USING (blockchain_id)
         WHERE wb.wallet_id = $1 ORDER BY b.sort`,
        [walletId],
      );
      await q.query('UPDATE wallets SET deleted_at = $2 WHERE wallet_id = $1', [walletId, this.c.clock()]);
      await this.c.audit.record(q, actor, 'wallet.deleted', 'wallet', walletId, { profile_id: profileId });
      await emitEvent(q, this.c.clock, {
        profileId,
        type: 'WALLET_DELETED',
        data: { wallet_id: walletId, name: w.name, blockchain_ids: chains.map((c) => c.blockchain_id) },
      });
    });
  }

  /**
   * Change an address's label (`label`: text, or null to clear) and/or archive state. A label
   * change or an unarchive fires ADDRESS_UPDATED; an archive fires ADDRESS_DELETED (one event per
   * call: DELETED when archiving, else UPDATED; none when nothing changes). Audited `address.updated`.
   * @throws ApiError WALLET_NOT_FOUND / RESOURCE_NOT_FOUND (404), ADDRESS_NOT_ARCHIVABLE (409)
   */
  async updateAddress(
    actor: string,
    profileId: string,
    walletId: string,
    addressId: string,
    input: { label?: string | null; archived?: boolean },
  ): Promise<LabelledAddressView> {
    return this.c.db.tx(async (q) => {
      await lockWallet(q, profileId, walletId);
      const a = (
        await q.query<Omit<LabelledAddressView, 'archived_at'> & { archived_at: Date | null; key: string }>(
          `SELECT a.address_id, a.wallet_id, a.blockchain_id, a.address, a.address_type, a.address_index,
             a.derivation_path, a.label, a.archived_at, b.key
           FROM addresses a JOIN blockchains b USING (blockchain_id) WHERE a.wallet_id = $1 AND a.address_id = $2`,
          [walletId, addressId],
        )
      )[0];
      if (a === undefined) throw new ApiError('RESOURCE_NOT_FOUND', `no address ${addressId} in this wallet`);
      const label = input.label === undefined ? a.label : input.label;
      const wasArchived = a.archived_at !== null;
      const archive = input.archived === undefined ? wasArchived : input.archived;
      if (archive && !wasArchived && blockchainByKey(a.key)?.accountModel === 'account') {
        throw new ApiError(
          'ADDRESS_NOT_ARCHIVABLE',
          `${a.key} is account-based: this is the wallet's only address there and cannot be archived`,
        );
      }
      const archivedAt = archive === wasArchived ? a.archived_at : archive ? this.c.clock() : null;
      const { key: _key, ...row } = a;
      const out = { ...row, label, archived_at: iso(archivedAt) ?? null };
      if (label === a.label && archive === wasArchived) return out;
      await q.query('UPDATE addresses SET label = $2, archived_at = $3 WHERE address_id = $1', [
        addressId,
        label,
        archivedAt,
      ]);
      await this.c.audit.record(q, actor, 'address.updated', 'address', addressId, {
        profile_id: profileId,
        wallet_id: walletId,
        ...(label !== a.label ? { label } : {}),
        ...(archive !== wasArchived ? { archived: archive } : {}),
      });
      await emitEvent(q, this.c.clock, {
        profileId,
        type: archive && !wasArchived ? 'ADDRESS_DELETED' : 'ADDRESS_UPDATED',
        data: {
          address_id: a.address_id,
          wallet_id: a.wallet_id,
          blockchain_id: a.blockchain_id,
          address: a.address,
          address_type: a.address_type,
          derivation_path: a.derivation_path,
          label,
          archived: archive,
        },
      });
      return out;
    });
  }
}

function view(w: WalletRow): WalletArchiveView {
  return { wallet_id: w.wallet_id, name: w.name, archived_at: iso(w.archived_at) ?? null };
}
