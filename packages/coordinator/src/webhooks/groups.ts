/**
 * Wallet groups and address groups — the admin features implied by the seed §6 event types
 * WALLET_GROUP_* and ADDRESS_GROUP_*:
 *
 * - a **wallet group** is a named set of wallets of one profile; users assigned to it are scoped
 *   to those wallets in the dashboard (the assignment is stored here; WALLET_GROUP_USER_ASSIGNED);
 * - an **address group** is a named address-book set of (blockchain, address, label) entries of
 *   one profile, which whitelist policies reference by id.
 *
 * Every change is audited and emits its webhook event in the same transaction.
 */
import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import { type Clock, iso } from '../util.js';
import type { WebhookEventType } from './events.js';
import { emitEvent } from './outbox.js';

/** Audit hook: (transaction, actor, action, target type, target id, details). */
export type AuditFn = (
  q: Queryable,
  actor: string | null,
  action: string,
  targetType: string | null,
  targetId: string | null,
  details?: Record<string, unknown>,
) => Promise<void>;

/** A wallet group. */
export interface WalletGroupView {
  wallet_group_id: string;
  profile_id: string;
  name: string;
  description: string | null;
  wallet_ids: string[];
  user_ids: string[];
  created_at: string;
  updated_at: string;
}

/** One address-book entry. */
export interface AddressGroupEntry {
  blockchain_id: string;
  address: string;
  label: string | null;
}

/** An address group. */
export interface AddressGroupView {
  address_group_id: string;
  profile_id: string;
  name: string;
  description: string | null;
  entries: AddressGroupEntry[];
  created_at: string;
  updated_at: string;
}

const notFound = (what: string) => new ApiError('RESOURCE_NOT_FOUND', `no such ${what}`);

function isUniqueViolation(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: string }).code === '23505';
}

/** Wallet-group and address-group operations. */
export class GroupService {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly audit: AuditFn,
  ) {}

  private emit(q: Queryable, profileId: string, type: WebhookEventType, data: Record<string, unknown>) {
    return emitEvent(q, this.clock, { profileId, type, data });
  }

  // ---- wallet groups ----------------------------------------------------------------------

  async listWalletGroups(profileId: string): Promise<WalletGroupView[]> {
    const rows = await this.db.query<{ wallet_group_id: string }>(
      'SELECT wallet_group_id FROM wallet_groups WHERE profile_id = $1 AND deleted_at IS NULL ORDER BY created_at, wallet_group_id',
      [profileId],
    );
    return Promise.all(rows.map((r) => this.getWalletGroup(profileId, r.wallet_group_id)));
  }

  async getWalletGroup(profileId: string, id: string, q: Queryable = this.db): Promise<WalletGroupView> {
    const g = (
      await q.query<{
        wallet_group_id: string;
        profile_id: string;
        name: string;
        description: string | null;
        created_at: Date;
        updated_at: Date;
      }>(
        `SELECT wallet_group_id, profile_id, name, description, created_at, updated_at FROM wallet_groups
         WHERE profile_id = $1 AND wallet_group_id = $2 AND deleted_at IS NULL`,
        [profileId, id],
      )
    )[0];
    if (g === undefined) throw notFound('wallet group');
    const wallets = await q.query<{ wallet_id: string }>(
      'SELECT wallet_id FROM wallet_group_wallets WHERE wallet_group_id = $1 ORDER BY wallet_id',
      [id],
    );
    const users = await q.query<{ user_id: string }>(
      'SELECT user_id FROM wallet_group_users WHERE wallet_group_id = $1 ORDER BY user_id',
      [id],
    );
    return {
      ...g,
      wallet_ids: wallets.map((w) => w.wallet_id),
      user_ids: users.map((u) => u.user_id),
      created_at: iso(g.created_at)!,
      updated_at: iso(g.updated_at)!,
    };
  }

  private async setWallets(q: Queryable, profileId: string, id: string, walletIds: string[]) {
    const ids = [...new Set(walletIds.map((w) => w.toLowerCase()))];
    const found = await q.query<{ wallet_id: string }>(
      'SELECT wallet_id FROM wallets WHERE profile_id = $1 AND wallet_id = ANY($2::uuid[])',
      [profileId, ids],
    );
    const known = new Set(found.map((f) => f.wallet_id));
    const i = ids.findIndex((w) => !known.has(w));
    if (i >= 0) {
      throw new ApiError('VALIDATION_FAILED', `wallet ${ids[i]} is not a wallet of this profile`, [
        { field: `body.wallet_ids[${i}]`, message: 'not a wallet of this profile' },
      ]);
    }
    await q.query('DELETE FROM wallet_group_wallets WHERE wallet_group_id = $1', [id]);
    for (const w of ids)
      await q.query('INSERT INTO wallet_group_wallets (wallet_group_id, wallet_id) VALUES ($1,$2)', [id, w]);
  }

  private conflictOnName<T>(p: Promise<T>): Promise<T> {
    return p.catch((e: unknown) => {
      if (isUniqueViolation(e)) throw new ApiError('CONFLICT', 'a group with this name already exists in the profile');
      throw e;
    });
  }

  /** Create a wallet group; emits WALLET_GROUP_CREATED. */
  async createWalletGroup(
    actor: string,
    profileId: string,
    input: { name: string; description?: string | null; wallet_ids?: string[] },
  ): Promise<WalletGroupView> {
    return this.conflictOnName(
      this.db.tx(async (q) => {
        await this.requireProfile(q, profileId);
        const id = randomUUID();
        const now = this.clock();
        await q.query(
          `INSERT INTO wallet_groups (wallet_group_id, profile_id, name, description, created_at, updated_at)
           VALUES ($1,$2,$3,$4,$5,$5)`,
          [id, profileId, input.name, input.description ?? null, now],
        );
        await this.setWallets(q, profileId, id, input.wallet_ids ?? []);
        const g = await this.getWalletGroup(profileId, id, q);
        await this.audit(q, actor, 'wallet_group.created', 'wallet_group', id, { profile_id: profileId });
        await this.emit(q, profileId, 'WALLET_GROUP_CREATED', walletGroupData(g));
        return g;
      }),
    );
  }

  /** Rename / redescribe / replace the wallets of a group; emits WALLET_GROUP_UPDATED. */
  async updateWalletGroup(
    actor: string,
    profileId: string,
    id: string,
    input: { name?: string; description?: string | null; wallet_ids?: string[] },
  ): Promise<WalletGroupView> {
    return this.conflictOnName(
      this.db.tx(async (q) => {
        const cur = await this.getWalletGroup(profileId, id, q);
        await q.query(
          'UPDATE wallet_groups SET name = $2, description = $3, updated_at = $4 WHERE wallet_group_id = $1',
          [
            id,
            input.name ?? cur.name,
            input.description === undefined ? cur.description : input.description,
            this.clock(),
          ],
        );
        if (input.wallet_ids !== undefined) await this.setWallets(q, profileId, id, input.wallet_ids);
        const g = await this.getWalletGroup(profileId, id, q);
        await this.audit(q, actor, 'wallet_group.updated', 'wallet_group', id, { profile_id: profileId });
        await this.emit(q, profileId, 'WALLET_GROUP_UPDATED', walletGroupData(g));
        return g;
      }),
    );
  }

  /** Delete a wallet group (its wallets are untouched); emits WALLET_GROUP_DELETED. */
  async deleteWalletGroup(actor: string, profileId: string, id: string): Promise<void> {
    await this.db.tx(async (q) => {
      const g = await this.getWalletGroup(profileId, id, q);
      await q.query('UPDATE wallet_groups SET deleted_at = $2 WHERE wallet_group_id = $1', [id, this.clock()]);
      await q.query('DELETE FROM wallet_group_users WHERE wallet_group_id = $1', [id]);
      await this.audit(q, actor, 'wallet_group.deleted', 'wallet_group', id, { profile_id: profileId });
      await this.emit(q, profileId, 'WALLET_GROUP_DELETED', walletGroupData(g));
    });
  }

  /**
   * Assign a user to (or remove from) a wallet group; emits WALLET_GROUP_USER_ASSIGNED with
   * `assigned`. Idempotent: no event when nothing changes.
   */
  async assignUser(
    actor: string,
    profileId: string,
    id: string,
    userId: string,
    assigned: boolean,
  ): Promise<WalletGroupView> {
    return this.db.tx(async (q) => {
      await this.getWalletGroup(profileId, id, q);
      const u = await q.query('SELECT 1 FROM users WHERE user_id = $1 AND deleted_at IS NULL', [userId]);
      if (u.length === 0) throw notFound('user');
      const changed = assigned
        ? await q.query(
            'INSERT INTO wallet_group_users (wallet_group_id, user_id) VALUES ($1,$2) ON CONFLICT DO NOTHING RETURNING 1',
            [id, userId],
          )
        : await q.query('DELETE FROM wallet_group_users WHERE wallet_group_id = $1 AND user_id = $2 RETURNING 1', [
            id,
            userId,
          ]);
      if (changed.length > 0) {
        await this.audit(
          q,
          actor,
          assigned ? 'wallet_group.user_assigned' : 'wallet_group.user_unassigned',
          'wallet_group',
          id,
          {
            user_id: userId,
          },
        );
        await this.emit(q, profileId, 'WALLET_GROUP_USER_ASSIGNED', { wallet_group_id: id, user_id: userId, assigned });
      }
      return this.getWalletGroup(profileId, id, q);
    });
  }

  // ---- address groups ---------------------------------------------------------------------

  async listAddressGroups(profileId: string): Promise<AddressGroupView[]> {
    const rows = await this.db.query<{ address_group_id: string }>(
      'SELECT address_group_id FROM address_groups WHERE profile_id = $1 AND deleted_at IS NULL ORDER BY created_at, address_group_id',
      [profileId],
    );
    return Promise.all(rows.map((r) => this.getAddressGroup(profileId, r.address_group_id)));
  }

  async getAddressGroup(profileId: string, id: string, q: Queryable = this.db): Promise<AddressGroupView> {
    const g = (
      await q.query<{
        address_group_id: string;
        profile_id: string;
        name: string;
        description: string | null;
        created_at: Date;
        updated_at: Date;
      }>(
        `SELECT address_group_id, profile_id, name, description, created_at, updated_at FROM address_groups
         WHERE profile_id = $1 AND address_group_id = $2 AND deleted_at IS NULL`,
        [profileId, id],
      )
    )[0];
    if (g === undefined) throw notFound('address group');
    const entries = await q.query<AddressGroupEntry>(
      'SELECT blockchain_id, address, label FROM address_group_entries WHERE address_group_id = $1 ORDER BY blockchain_id, address',
      [id],
    );
    return { ...g, entries, created_at: iso(g.created_at)!, updated_at: iso(g.updated_at)! };
  }

  private async setEntries(q: Queryable, id: string, entries: AddressGroupEntry[]) {
    const chains = new Set(
      (await q.query<{ blockchain_id: string }>('SELECT blockchain_id FROM blockchains')).map((b) => b.blockchain_id),
    );
    const seen = new Set<string>();
    await q.query('DELETE FROM address_group_entries WHERE address_group_id = $1', [id]);
    for (const [i, e] of entries.entries()) {
      const bc = e.blockchain_id.toLowerCase();
      if (!chains.has(bc)) {
        throw new ApiError('VALIDATION_FAILED', `unknown blockchain ${e.blockchain_id}`, [
          { field: `body.entries[${i}].blockchain_id`, message: 'unknown blockchain' },
        ]);
      }
      const key = `${bc}|${e.address}`;
      if (seen.has(key)) {
        throw new ApiError('VALIDATION_FAILED', 'duplicate address entry', [
          { field: `body.entries[${i}].address`, message: 'listed twice for this blockchain' },
        ]);
      }
      seen.add(key);
      await q.query(
        'INSERT INTO address_group_entries (address_group_id, blockchain_id, address, label) VALUES ($1,$2,$3,$4)',
        [id, bc, e.address, e.label ?? null],
      );
    }
  }

  /** Create an address group; emits ADDRESS_GROUP_CREATED. */
  async createAddressGroup(
    actor: string,
    profileId: string,
    input: { name: string; description?: string | null; entries?: AddressGroupEntry[] },
  ): Promise<AddressGroupView> {
    return this.conflictOnName(
      this.db.tx(async (q) => {
        await this.requireProfile(q, profileId);
        const id = randomUUID();
        const now = this.clock();
        await q.query(
          `INSERT INTO address_groups (address_group_id, profile_id, name, description, created_at, updated_at)
           VALUES ($1,$2,$3,$4,$5,$5)`,
          [id, profileId, input.name, input.description ?? null, now],
        );
        await this.setEntries(q, id, input.entries ?? []);
        const g = await this.getAddressGroup(profileId, id, q);
        await this.audit(q, actor, 'address_group.created', 'address_group', id, { profile_id: profileId });
        await this.emit(q, profileId, 'ADDRESS_GROUP_CREATED', addressGroupData(g));
        return g;
      }),
    );
  }

  /** Rename / redescribe / replace the entries of an address group; emits ADDRESS_GROUP_UPDATED. */
  async updateAddressGroup(
    actor: string,
    profileId: string,
    id: string,
    input: { name?: string; description?: string | null; entries?: AddressGroupEntry[] },
  ): Promise<AddressGroupView> {
    return this.conflictOnName(
      this.db.tx(async (q) => {
        const cur = await this.getAddressGroup(profileId, id, q);
        await q.query(
          'UPDATE address_groups SET name = $2, description = $3, updated_at = $4 WHERE address_group_id = $1',
          [
            id,
            input.name ?? cur.name,
            input.description === undefined ? cur.description : input.description,
            this.clock(),
          ],
        );
        if (input.entries !== undefined) await this.setEntries(q, id, input.entries);
        const g = await this.getAddressGroup(profileId, id, q);
        await this.audit(q, actor, 'address_group.updated', 'address_group', id, { profile_id: profileId });
        await this.emit(q, profileId, 'ADDRESS_GROUP_UPDATED', addressGroupData(g));
        return g;
      }),
    );
  }

  /** Delete an address group; emits ADDRESS_GROUP_DELETED. */
  async deleteAddressGroup(actor: string, profileId: string, id: string): Promise<void> {
    await this.db.tx(async (q) => {
      const g = await this.getAddressGroup(profileId, id, q);
      await q.query('UPDATE address_groups SET deleted_at = $2 WHERE address_group_id = $1', [id, this.clock()]);
      await this.audit(q, actor, 'address_group.deleted', 'address_group', id, { profile_id: profileId });
      await this.emit(q, profileId, 'ADDRESS_GROUP_DELETED', addressGroupData(g));
    });
  }

  private async requireProfile(q: Queryable, id: string) {
    if ((await q.query('SELECT 1 FROM profiles WHERE profile_id = $1', [id])).length === 0) throw notFound('profile');
  }
}

function walletGroupData(g: WalletGroupView) {
  return { wallet_group_id: g.wallet_group_id, name: g.name, wallet_ids: g.wallet_ids, user_ids: g.user_ids };
}

function addressGroupData(g: AddressGroupView) {
  return { address_group_id: g.address_group_id, name: g.name, entries: g.entries };
}
