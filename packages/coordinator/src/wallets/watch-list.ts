/**
 * What the deposit watchers watch (transfers/chains.ts `watcher`, one per chain): every address of every
 * wallet on a blockchain (`addresses`), and the token contracts of the blockchain's assets
 * (`assets`, synced from the directory).
 */
import type { Db } from '../db/db.js';

/** Dependencies of {@link WatchList}. */
export interface WatchListComponents {
  readonly db: Db;
}

/** Addresses and token contracts per blockchain key (directory key, e.g. `ethereum-local`). */
export class WatchList {
  constructor(private readonly c: WatchListComponents) {}

  /** Every address of the blockchain `chain`, as stored (chain-specific text form). */
  async addresses(chain: string): Promise<string[]> {
    const rows = await this.c.db.query<{ address: string }>(
      'SELECT a.address FROM addresses a JOIN blockchains b USING (blockchain_id) WHERE b.key = $1',
      [chain],
    );
    return rows.map((r) => r.address);
  }

  /** Contract addresses of the token assets of the blockchain `chain`. */
  async tokenContracts(chain: string): Promise<string[]> {
    const rows = await this.c.db.query<{ contract_address: string }>(
      `SELECT a.contract_address FROM assets a JOIN blockchains b USING (blockchain_id)
       WHERE b.key = $1 AND a.contract_address IS NOT NULL`,
      [chain],
    );
    return rows.map((r) => r.contract_address);
  }
}
