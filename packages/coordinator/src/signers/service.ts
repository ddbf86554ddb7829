/**
 * The signers room: registered server signers (list, register after the out-of-band fingerprint
 * check, remove), with the master key records ({@link MasterKeyStore}, `store.ts`) and the master
 * key ceremonies ({@link CeremonyService}, `ceremonies.ts`) built from the same components and
 * exposed as {@link SignerService.masterKeys} and {@link SignerService.ceremonies}.
 */
import { randomUUID } from 'node:crypto';
import { fingerprint as signerFingerprint } from '@custodian/signer-client';
import type { AdminOptions } from '../admin/options.js';
import type { AuditLog } from '../audit/service.js';
import type { CeremonyClient } from '../ceremony.js';
import type { Db } from '../db/db.js';
import { ed25519PeerKey, lockPeerId, normaliseFingerprint } from '../devices/binding.js';
import { ApiError } from '../errors.js';
import type { BlameStore } from '../signing/blame-store.js';
import { notFound, type Page, type PageRequest, pageOffset } from '../store.js';
import { type Clock, iso } from '../util.js';
import { emitInstanceEvent } from '../webhooks/outbox.js';
import { type CeremonyOwner, CeremonyService } from './ceremonies.js';
import { MasterKeyStore, type MasterKeyView } from './store.js';

/** Dependencies of {@link SignerService} (and of its ceremonies and master key records). */
export interface SignerComponents {
  readonly db: Db;
  readonly clock: Clock;
  readonly audit: AuditLog;
  /** Signer control channel for ceremonies; absent: ceremonies answer 503 SIGNERS_UNAVAILABLE. */
  readonly ceremonyClient: CeremonyClient | undefined;
  readonly options: Pick<AdminOptions, 'minMobileSigners' | 'dkgTimeoutMs'>;
  /** Checked blames of ceremonies (signing/blame-store.ts), recorded and shown by the ceremonies. */
  readonly blames?: BlameStore | undefined;
  /**
   * The coordinator's links to the server signers (signing/services.ts `signerLink`): whether a
   * libp2p connection to the peer is open now, and when one last was. Absent (signing off):
   * every signer is unreachable, never seen.
   */
  readonly links?: SignerLinkStatus | undefined;
  /** This process as a replica, the owner of the ceremonies it runs (signers/ceremonies.ts); absent: none. */
  readonly replica?: CeremonyOwner | undefined;
  /** Warnings of the ceremonies (signers/ceremonies.ts `CeremonyComponents.log`). */
  readonly log?: ((level: 'warn', msg: string, fields?: Record<string, unknown>) => void) | undefined;
}

/** What the coordinator knows of its link to one server signer (by libp2p peer id). */
export interface SignerLinkStatus {
  /** `reachable`: a connection is open now; `lastSeenAt`: last time one was open (null: not since start). */
  link(peerId: string): { reachable: boolean; lastSeenAt: Date | null };
}

/** Server signers; master keys and ceremonies as sub-services. */
export class SignerService {
  /** Master key records (public keys and chain codes). */
  readonly masterKeys: MasterKeyStore;
  /** Master key ceremonies (DKG). */
  readonly ceremonies: CeremonyService;

  constructor(private readonly c: SignerComponents) {
    this.masterKeys = new MasterKeyStore(c);
    this.ceremonies = new CeremonyService({ ...c, masterKeys: this.masterKeys });
  }

  /**
   * One page of live server signers, oldest first, each with `reachable` (a libp2p connection from
   * this coordinator to the signer is open now) and `last_seen_at` (ISO time a connection was last
   * open — now when reachable — or null when none was since the coordinator started).
   */
  async list(p: PageRequest): Promise<Page<Record<string, unknown>>> {
    const rows = await this.c.db.query<Record<string, unknown> & { created_at: Date; peer_id: string }>(
      `SELECT signer_id, name, peer_id, address, fingerprint, created_at FROM server_signers
       WHERE removed_at IS NULL ORDER BY created_at, signer_id LIMIT $1 OFFSET $2`,
      [p.page_size, pageOffset(p)],
    );
    const [count] = await this.c.db.query<{ n: string }>(
      'SELECT COUNT(*)::text AS n FROM server_signers WHERE removed_at IS NULL',
    );
    const data = rows.map((r) => {
      const l = this.c.links?.link(r.peer_id) ?? { reachable: false, lastSeenAt: null };
      return { ...r, created_at: iso(r.created_at), reachable: l.reachable, last_seen_at: iso(l.lastSeenAt) };
    });
    return { data, page: p.page, page_size: p.page_size, total: Number(count?.n ?? 0) };
  }

  /** One page of master key records, oldest first (the records of {@link MasterKeyStore.listMasterKeys}). */
  async pageMasterKeys(p: PageRequest): Promise<Page<MasterKeyView>> {
    const all = await this.masterKeys.listMasterKeys();
    const start = pageOffset(p);
    return { data: all.slice(start, start + p.page_size), page: p.page, page_size: p.page_size, total: all.length };
  }

  /**
   * Register a server signer. The fingerprint the operator compared out of band must be the one of
   * the peer id's Ed25519 identity key (`custodian signer init` prints both; `fingerprint` of
   * @custodian/signer-client fingerprint.ts); spaces, colons and case are ignored, and it is stored as the
   * signer prints it.
   * @throws ApiError VALIDATION_FAILED (`body.peer_id` not an Ed25519 peer id, `body.fingerprint`
   *   not the peer id's), CONFLICT (peer id already registered, or given to a device at enrollment —
   *   any device, whatever its status: one peer id names one party)
   */
  async add(actor: string, input: { name: string; peer_id: string; address: string; fingerprint: string }) {
    const key = ed25519PeerKey(input.peer_id, 'body.peer_id');
    const expected = signerFingerprint(key);
    if (normaliseFingerprint(input.fingerprint) !== normaliseFingerprint(expected)) {
      throw new ApiError('VALIDATION_FAILED', "the fingerprint is not the peer id's identity key; do not register", [
        { field: 'body.fingerprint', message: "does not match the peer id's identity key" },
      ]);
    }
    input = { ...input, fingerprint: expected };
    return this.c.db.tx(async (q) => {
      await lockPeerId(q, input.peer_id);
      const dup = await q.query('SELECT 1 FROM server_signers WHERE peer_id = $1 AND removed_at IS NULL', [
        input.peer_id,
      ]);
      if (dup.length > 0) throw new ApiError('CONFLICT', 'a server signer with this peer id is already registered');
      const device = await q.query('SELECT 1 FROM devices WHERE mpc_peer_id = $1 LIMIT 1', [input.peer_id]);
      if (device.length > 0) throw new ApiError('CONFLICT', 'this peer id is a mobile device’s MPC peer id');
      const id = randomUUID();
      const now = this.c.clock();
      await q.query(
        'INSERT INTO server_signers (signer_id, name, peer_id, address, fingerprint, created_at) VALUES ($1,$2,$3,$4,$5,$6)',
        [id, input.name, input.peer_id, input.address, input.fingerprint, now],
      );
      await this.c.audit.record(q, actor, 'server_signer.added', 'server_signer', id, { peer_id: input.peer_id });
      await emitInstanceEvent(q, this.c.clock, 'SERVER_CREATED', {
        signer_id: id,
        name: input.name,
        peer_id: input.peer_id,
      });
      return { signer_id: id, ...input, created_at: iso(now) };
    });
  }

  /** Remove a server signer; audited, SERVER_DELETED. @throws ApiError RESOURCE_NOT_FOUND */
  async remove(actor: string, id: string): Promise<void> {
    await this.c.db.tx(async (q) => {
      const r = await q.query<{ name: string; peer_id: string }>(
        'UPDATE server_signers SET removed_at = $2 WHERE signer_id = $1 AND removed_at IS NULL RETURNING name, peer_id',
        [id, this.c.clock()],
      );
      if (r[0] === undefined) throw notFound('server signer');
      await this.c.audit.record(q, actor, 'server_signer.removed', 'server_signer', id);
      await emitInstanceEvent(q, this.c.clock, 'SERVER_DELETED', {
        signer_id: id,
        name: r[0].name,
        peer_id: r[0].peer_id,
      });
    });
  }
}
