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
import type { AuditFn } from '../audit/service.js';
import type { Db, Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import { type Clock, iso } from '../util.js';
import type { WebhookEventType } from '../webhooks/events.js';
import { emitEvent } from '../webhooks/outbox.js';

/** Dependencies of {@link GroupService}. */
export interface GroupComponents {
  readonly db: Db;
  readonly clock: Clock;
  /** Appends the audit entry of each change in its transaction (audit room, `AuditLog.record`). */
  readonly audit: AuditFn;
}

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

/** Columns every group row has. */
interface GroupRow {
  profile_id: string;
  name: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * What differs between the two kinds of group: their table, their members (wallets and users of
 * a wallet group; entries of an address group) and the names of their audit actions and events.
 * Everything else — existence checks, unique names per profile, soft delete, audit and event in
 * the same transaction — is {@link GroupService}'s, once.
 */
interface GroupKind<V, M> {
  /** "wallet group" / "address group" (RESOURCE_NOT_FOUND message). */
  noun: string;
  table: 'wallet_groups' | 'address_groups';
  idColumn: 'wallet_group_id' | 'address_group_id';
  /** Audit actions are `<prefix>.created|updated|deleted`. */
  auditPrefix: 'wallet_group' | 'address_group';
  events: { created: WebhookEventType; updated: WebhookEventType; deleted: WebhookEventType };
  /** The view of a group row: the row plus its members. */
  view(q: Queryable, id: string, row: GroupRow): Promise<V>;
  /** Replace the members. @throws ApiError VALIDATION_FAILED naming the field */
  setMembers(q: Queryable, profileId: string, id: string, members: M): Promise<void>;
  /** Extra clean-up when the group is deleted. */
  onDelete?(q: Queryable, id: string): Promise<void>;
  /** The webhook event payload. */
  data(v: V): Record<string, unknown>;
}

const WALLET_GROUPS: GroupKind<WalletGroupView, string[]> = {
  noun: 'wallet group',
  table: 'wallet_groups',
  idColumn: 'wallet_group_id',
  auditPrefix: 'wallet_group',
  events: { created: 'WALLET_GROUP_CREATED', updated: 'WALLET_GROUP_UPDATED', deleted: 'WALLET_GROUP_DELETED' },
  async view(q, id, g) {
    const wallets = await q.query<{ wallet_id: string }>(
      'SELECT wallet_id FROM wallet_group_wallets WHERE wallet_group_id = $1 ORDER BY wallet_id',
      [id],
    );
    const users = await q.query<{ user_id: string }>(
      'SELECT user_id FROM wallet_group_users WHERE wallet_group_id = $1 ORDER BY user_id',
      [id],
    );
    return {
      wallet_group_id: id,
      ...g,
      wallet_ids: wallets.map((w) => w.wallet_id),
      user_ids: users.map((u) => u.user_id),
      created_at: iso(g.created_at)!,
      updated_at: iso(g.updated_at)!,
    };
  },
  async setMembers(q, profileId, id, walletIds) {
    const ids = [...new Set(walletIds.map((w) => w.toLowerCase()))];
    const found = await q.query<{ wallet_id: string }>(
      'SELECT wallet_id FROM wallets WHERE profile_id = $1 AND wallet_id = ANY($2::uuid[]) AND deleted_at IS NULL',
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
  },
  async onDelete(q, id) {
    await q.query('DELETE FROM wallet_group_users WHERE wallet_group_id = $1', [id]);
  },
  data: (g) => ({ wallet_group_id: g.wallet_group_id, name: g.name, wallet_ids: g.wallet_ids, user_ids: g.user_ids }),
};

const ADDRESS_GROUPS: GroupKind<AddressGroupView, AddressGroupEntry[]> = {
  noun: 'address group',
  table: 'address_groups',
  idColumn: 'address_group_id',
  auditPrefix: 'address_group',
  events: { created: 'ADDRESS_GROUP_CREATED', updated: 'ADDRESS_GROUP_UPDATED', deleted: 'ADDRESS_GROUP_DELETED' },
  async view(q, id, g) {
    const entries = await q.query<AddressGroupEntry>(
      'SELECT blockchain_id, address, label FROM address_group_entries WHERE address_group_id = $1 ORDER BY blockchain_id, address',
      [id],
    );
    return { address_group_id: id, ...g, entries, created_at: iso(g.created_at)!, updated_at: iso(g.updated_at)! };
  },
  async setMembers(q, _profileId, id, entries) {
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
  },
  data: (g) => ({ address_group_id: g.address_group_id, name: g.name, entries: g.entries }),
};

/** Wallet-group and address-group operations. */
export class GroupService {
  constructor(private readonly c: GroupComponents) {}

  // ---- one implementation for both kinds ---------------------------------------------------

  private async list<V>(kind: GroupKind<V, unknown>, profileId: string): Promise<V[]> {
    const rows = await this.c.db.query<{ id: string }>(
      `SELECT ${kind.idColumn} AS id FROM ${kind.table} WHERE profile_id = $1 AND deleted_at IS NULL
       ORDER BY created_at, ${kind.idColumn}`,
      [profileId],
    );
    return Promise.all(rows.map((r) => this.get(kind, profileId, r.id)));
  }

  private async get<V>(
    kind: GroupKind<V, unknown>,
    profileId: string,
    id: string,
    q: Queryable = this.c.db,
  ): Promise<V> {
    const g = (
      await q.query<GroupRow>(
        `SELECT profile_id, name, description, created_at, updated_at FROM ${kind.table}
         WHERE profile_id = $1 AND ${kind.idColumn} = $2 AND deleted_at IS NULL`,
        [profileId, id],
      )
    )[0];
    if (g === undefined) throw notFound(kind.noun);
    return kind.view(q, id, g);
  }

  private create<V, M>(
    kind: GroupKind<V, M>,
    actor: string,
    profileId: string,
    input: { name: string; description?: string | null },
    members: M,
  ): Promise<V> {
    return conflictOnName(
      this.c.db.tx(async (q) => {
        if ((await q.query('SELECT 1 FROM profiles WHERE profile_id = $1', [profileId])).length === 0)
          throw notFound('profile');
        const id = randomUUID();
        const now = this.c.clock();
        await q.query(
          `INSERT INTO ${kind.table} (${kind.idColumn}, profile_id, name, description, created_at, updated_at)
           VALUES ($1,$2,$3,$4,$5,$5)`,
          [id, profileId, input.name, input.description ?? null, now],
        );
        await kind.setMembers(q, profileId, id, members);
        const g = await this.get(kind, profileId, id, q);
        await this.c.audit(q, actor, `${kind.auditPrefix}.created`, kind.auditPrefix, id, { profile_id: profileId });
        await this.emit(q, profileId, kind.events.created, kind.data(g));
        return g;
      }),
    );
  }

  private update<V extends { name: string; description: string | null }, M>(
    kind: GroupKind<V, M>,
    actor: string,
    profileId: string,
    id: string,
    input: { name?: string; description?: string | null },
    members: M | undefined,
  ): Promise<V> {
    return conflictOnName(
      this.c.db.tx(async (q) => {
        const cur = await this.get(kind, profileId, id, q);
        await q.query(
          `UPDATE ${kind.table} SET name = $2, description = $3, updated_at = $4 WHERE ${kind.idColumn} = $1`,
          [
            id,
            input.name ?? cur.name,
            input.description === undefined ? cur.description : input.description,
            this.c.clock(),
          ],
        );
        if (members !== undefined) await kind.setMembers(q, profileId, id, members);
        const g = await this.get(kind, profileId, id, q);
        await this.c.audit(q, actor, `${kind.auditPrefix}.updated`, kind.auditPrefix, id, { profile_id: profileId });
        await this.emit(q, profileId, kind.events.updated, kind.data(g));
        return g;
      }),
    );
  }

  private async delete<V>(kind: GroupKind<V, unknown>, actor: string, profileId: string, id: string): Promise<void> {
    await this.c.db.tx(async (q) => {
      const g = await this.get(kind, profileId, id, q);
      await q.query(`UPDATE ${kind.table} SET deleted_at = $2 WHERE ${kind.idColumn} = $1`, [id, this.c.clock()]);
      await kind.onDelete?.(q, id);
      await this.c.audit(q, actor, `${kind.auditPrefix}.deleted`, kind.auditPrefix, id, { profile_id: profileId });
      await this.emit(q, profileId, kind.events.deleted, kind.data(g));
    });
  }

  private emit(q: Queryable, profileId: string, type: WebhookEventType, data: Record<string, unknown>) {
    return emitEvent(q, this.c.clock, { profileId, type, data });
  }

  // ---- wallet groups ----------------------------------------------------------------------

  listWalletGroups(profileId: string): Promise<WalletGroupView[]> {
    return this.list(WALLET_GROUPS, profileId);
  }

  /** @throws ApiError RESOURCE_NOT_FOUND */
  getWalletGroup(profileId: string, id: string, q: Queryable = this.c.db): Promise<WalletGroupView> {
    return this.get(WALLET_GROUPS, profileId, id, q);
  }

  /** Create a wallet group; emits WALLET_GROUP_CREATED. @throws ApiError CONFLICT (name taken), VALIDATION_FAILED */
  createWalletGroup(
    actor: string,
    profileId: string,
    input: { name: string; description?: string | null; wallet_ids?: string[] },
  ): Promise<WalletGroupView> {
    return this.create(WALLET_GROUPS, actor, profileId, input, input.wallet_ids ?? []);
  }

  /** Rename / redescribe / replace the wallets of a group; emits WALLET_GROUP_UPDATED. */
  updateWalletGroup(
    actor: string,
    profileId: string,
    id: string,
    input: { name?: string; description?: string | null; wallet_ids?: string[] },
  ): Promise<WalletGroupView> {
    return this.update(WALLET_GROUPS, actor, profileId, id, input, input.wallet_ids);
  }

  /** Delete a wallet group (its wallets are untouched, its user assignments go); emits WALLET_GROUP_DELETED. */
  deleteWalletGroup(actor: string, profileId: string, id: string): Promise<void> {
    return this.delete(WALLET_GROUPS, actor, profileId, id);
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
    return this.c.db.tx(async (q) => {
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
        const action = assigned ? 'wallet_group.user_assigned' : 'wallet_group.user_unassigned';
        await this.c.audit(q, actor, action, 'wallet_group', id, { user_id: userId });
        await this.emit(q, profileId, 'WALLET_GROUP_USER_ASSIGNED', { wallet_group_id: id, user_id: userId, assigned });
      }
      return this.getWalletGroup(profileId, id, q);
    });
  }

  // ---- address groups ---------------------------------------------------------------------

  listAddressGroups(profileId: string): Promise<AddressGroupView[]> {
    return this.list(ADDRESS_GROUPS, profileId);
  }

  /** @throws ApiError RESOURCE_NOT_FOUND */
  getAddressGroup(profileId: string, id: string, q: Queryable = this.c.db): Promise<AddressGroupView> {
    return this.get(ADDRESS_GROUPS, profileId, id, q);
  }

  /** Create an address group; emits ADDRESS_GROUP_CREATED. @throws ApiError CONFLICT (name taken), VALIDATION_FAILED */
  createAddressGroup(
    actor: string,
    profileId: string,
    input: { name: string; description?: string | null; entries?: AddressGroupEntry[] },
  ): Promise<AddressGroupView> {
    return this.create(ADDRESS_GROUPS, actor, profileId, input, input.entries ?? []);
  }

  /** Rename / redescribe / replace the entries of an address group; emits ADDRESS_GROUP_UPDATED. */
  updateAddressGroup(
    actor: string,
    profileId: string,
    id: string,
    input: { name?: string; description?: string | null; entries?: AddressGroupEntry[] },
  ): Promise<AddressGroupView> {
    return this.update(ADDRESS_GROUPS, actor, profileId, id, input, input.entries);
  }

  /** Delete an address group; emits ADDRESS_GROUP_DELETED. */
  deleteAddressGroup(actor: string, profileId: string, id: string): Promise<void> {
    return this.delete(ADDRESS_GROUPS, actor, profileId, id);
  }
}

function conflictOnName<T>(p: Promise<T>): Promise<T> {
  return p.catch((e: unknown) => {
    if (isUniqueViolation(e)) throw new ApiError('CONFLICT', 'a group with this name already exists in the profile');
    throw e;
  });
}
