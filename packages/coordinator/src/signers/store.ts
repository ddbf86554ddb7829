/**
 * The signers room's data: master key records (`master_keys`) — the PUBLIC output of the DKG
 * ceremony; no secret ever reaches the coordinator.
 */
import { randomUUID } from 'node:crypto';
import { ed25519Group, secp256k1Group } from '@custodian/crypto';
import type { Db, Queryable } from '../db/db.js';
import { type Clock, iso } from '../util.js';

/**
 * The key id the signers know a master key by: hex of the 16 bytes of the master key ceremony's
 * UUID (the ceremony id the coordinator sends in StartCeremony), else of the master key id.
 */
export function transferKeyId(mk: { ceremony_id: string | null; master_key_id: string }): string {
  return (mk.ceremony_id ?? mk.master_key_id).replaceAll('-', '').toLowerCase();
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
  /**
   * FROST/Taproot master key as the signers hold it: 33-byte compressed public key with its Y parity
   * (hex 66, `02…` or `03…`) and chain code (hex 64); null when none was recorded.
   */
  taproot_public_key: string | null;
  taproot_chain_code: string | null;
  /** Refreshes and committed reshares so far (0 after the master key ceremony; issue #22). */
  epoch: number;
  /** Last refresh or committed reshare (ISO 8601), or null. */
  refreshed_at: string | null;
  created_at: string;
}

/** Input of {@link MasterKeyStore.insertMasterKey}: 33-byte compressed secp256k1 key, 32-byte Ed25519 key, 32-byte chain codes. */
export interface MasterKeyInput {
  ceremonyId: string | null;
  threshold: number;
  parties: unknown;
  secp256k1: { publicKey: Uint8Array; chainCode: Uint8Array };
  ed25519: { publicKey: Uint8Array; chainCode: Uint8Array };
  /** Taproot master key: 33-byte SEC1-compressed public key (either Y parity, as the signers report it) and 32-byte chain code (optional). */
  taproot?: { publicKey: Uint8Array; chainCode: Uint8Array };
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** Dependencies of {@link MasterKeyStore}. */
export interface MasterKeyStoreComponents {
  readonly db: Db;
  readonly clock: Clock;
}

/** Master key records. */
export class MasterKeyStore {
  constructor(private readonly c: MasterKeyStoreComponents) {}

  /**
   * Record a master key's PUBLIC material (output of the DKG ceremony). Keys are validated as
   * curve points before they are stored.
   * @throws RangeError / Error for wrong lengths or invalid points
   */
  async insertMasterKey(input: MasterKeyInput, q: Queryable = this.c.db): Promise<MasterKeyView> {
    secp256k1Group.decodePoint(input.secp256k1.publicKey, 'secp256k1.publicKey');
    ed25519Group.decodePoint(input.ed25519.publicKey, 'ed25519.publicKey');
    if (input.taproot !== undefined) {
      // x-only (32 bytes) is refused: P2TR children derive from the point with its parity
      if (input.taproot.publicKey.length !== 33)
        throw new RangeError('taproot.publicKey must be 33 bytes (compressed, with its Y parity)');
      secp256k1Group.decodePoint(input.taproot.publicKey, 'taproot.publicKey');
    }
    for (const [n, c] of [
      ['secp256k1.chainCode', input.secp256k1.chainCode],
      ['ed25519.chainCode', input.ed25519.chainCode],
      ...(input.taproot ? [['taproot.chainCode', input.taproot.chainCode] as const] : []),
    ] as const) {
      if (!(c instanceof Uint8Array) || c.length !== 32) throw new RangeError(`${n} must be 32 bytes`);
    }
    const id = randomUUID();
    const now = this.c.clock();
    await q.query(
      `INSERT INTO master_keys (master_key_id, ceremony_id, threshold, parties, secp256k1_public_key,
         secp256k1_chain_code, ed25519_public_key, ed25519_chain_code, created_at, taproot_public_key, taproot_chain_code)
       VALUES ($1,$2,$3,$4::jsonb,$5,$6,$7,$8,$9,$10,$11)`,
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
        input.taproot ? hex(input.taproot.publicKey) : null,
        input.taproot ? hex(input.taproot.chainCode) : null,
      ],
    );
    return (await this.listMasterKeys(q)).find((m) => m.master_key_id === id)!;
  }

  /** Every master key record, oldest first. */
  async listMasterKeys(q: Queryable = this.c.db): Promise<MasterKeyView[]> {
    const rows = await q.query<MasterKeyView & { created_at: Date; refreshed_at: Date | null }>(
      `SELECT master_key_id, ceremony_id, threshold, parties, secp256k1_public_key, secp256k1_chain_code,
              ed25519_public_key, ed25519_chain_code, taproot_public_key, taproot_chain_code, epoch, refreshed_at, created_at
         FROM master_keys ORDER BY created_at, master_key_id`,
    );
    return rows.map((r) => ({ ...r, created_at: iso(r.created_at)!, refreshed_at: iso(r.refreshed_at) }));
  }
}

/** A registered (not removed) server signer as the signing services dial it. */
export interface ServerSignerLink {
  signer_id: string;
  /** libp2p peer id (Ed25519). */
  peer_id: string;
  /** Multiaddr registered in the admin API (may end in `/p2p/<peer id>`). */
  address: string;
}

/** Dependencies of {@link ServerSignerStore}. */
export interface ServerSignerStoreComponents {
  readonly db: Db;
}

/** The registered server signers (`server_signers`), as the signing services read them. */
export class ServerSignerStore {
  constructor(private readonly c: ServerSignerStoreComponents) {}

  /** Every server signer not removed, in no particular order. */
  async live(): Promise<ServerSignerLink[]> {
    const rows = await this.c.db.query<ServerSignerLink>(
      'SELECT signer_id, peer_id, address FROM server_signers WHERE removed_at IS NULL',
    );
    return rows.map((r) => ({ signer_id: String(r.signer_id), peer_id: r.peer_id, address: r.address }));
  }

  /** Whether `peerId` is the peer id of a live (registered, not removed) server signer. */
  async isLivePeer(peerId: string): Promise<boolean> {
    const r = await this.c.db.query('SELECT 1 FROM server_signers WHERE peer_id = $1 AND removed_at IS NULL', [peerId]);
    return r.length > 0;
  }

  /** Peer id of the live server signer `signerId` (case-insensitive UUID text); undefined when unknown or removed. */
  async peerIdOf(signerId: string): Promise<string | undefined> {
    const r = await this.c.db.query<{ peer_id: string }>(
      'SELECT peer_id FROM server_signers WHERE signer_id::text = $1 AND removed_at IS NULL',
      [signerId.toLowerCase()],
    );
    return r[0]?.peer_id;
  }
}
