/**
 * The devices room's reads for the signing side (`devices` table): what the device hub checks at
 * every hello and send, and what the signing services need of a device party. Writes stay with
 * {@link DeviceService} (`service.ts`).
 */
import type { Db } from '../db/db.js';
import type { HubDeviceRecord } from './hub-types.js';

/** Dependencies of {@link DeviceStore}. */
export interface DeviceStoreComponents {
  readonly db: Db;
}

/** Device records as the hub and the signing services read them. */
export class DeviceStore {
  constructor(private readonly c: DeviceStoreComponents) {}

  /** Key, status and pinned MPC peer id of `deviceId` (lower-case UUID); undefined when unknown. */
  async hubRecord(deviceId: string): Promise<HubDeviceRecord | undefined> {
    const r = (
      await this.c.db.query<{ public_key: string; status: string; mpc_peer_id: string | null }>(
        'SELECT public_key, status, mpc_peer_id FROM devices WHERE device_id = $1',
        [deviceId],
      )
    )[0];
    return r ? { publicKey: r.public_key, status: r.status, mpcPeerId: r.mpc_peer_id } : undefined;
  }

  /** Status of `deviceId` (`PENDING`, `APPROVED`, `REJECTED`, `REMOVED`); undefined when unknown. */
  async status(deviceId: string): Promise<string | undefined> {
    const r = await this.c.db.query<{ status: string }>('SELECT status FROM devices WHERE device_id = $1', [deviceId]);
    return r[0]?.status;
  }

  /** Enrolled P-256 public key (compressed hex) of `deviceId`; undefined when unknown. */
  async publicKey(deviceId: string): Promise<string | undefined> {
    const r = await this.c.db.query<{ public_key: string }>('SELECT public_key FROM devices WHERE device_id = $1', [
      deviceId,
    ]);
    return r[0]?.public_key;
  }
}
