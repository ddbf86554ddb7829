import { bytesToHex } from '@custodian/crypto';
import type { CeremonyStore, StoreOp } from './storage.js';

/**
 * Durable record of every protocol session this party has started, so that it never runs one
 * session twice. A second run of a session (same protocol tag, same session id) would make this
 * party sign a second, different broadcast statement for the same (protocol, session, round): a
 * colluding peer could then present both as verifiable equivocation (and a reused CGGMP21/FROST
 * session could leak more). The coordinator is not trusted to prevent that (a StartCeremony re-sent
 * with a new `issuedUnixMs` has a new request digest), so the runner claims the session here before
 * its first message is computed ({@link CeremonyRunner}, `SessionParams`).
 */
export interface SessionLedger {
  /**
   * Claim (protocol, session id) for a run, durably.
   * @param protocol the run's protocol tag (`ProtocolSpec.name`, e.g. `custodian.cggmp.presign.v1`)
   * @param sessionId the caller's 32-byte session id (`ceremonies/context.ts` `sessionId(ceremonyId, label)`)
   * @returns true if it was never claimed before (the claim is durable when this resolves), false if
   *   it was (the session must not run)
   * @throws (rejects) when the claim cannot be written; the session must then not run either
   */
  claim(protocol: string, sessionId: Uint8Array): Promise<boolean>;
}

/**
 * {@link SessionLedger} in the encrypted store: sublevel `sessions`, key `<protocol>/<session id
 * hex>`, empty value, one key per session started, kept forever (≈ 100 bytes per session on disk:
 * the key, the sealed empty value with its nonce and tag, LevelDB overhead). Claims made in one turn
 * of the event loop (the sessions of one ceremony, e.g. 64 presignatures) share one synced batch.
 * Used by the server signer (signer daemon.ts) and the phone (mobile device.ts), both on `SecureStore`.
 */
export class StoredSessionLedger implements SessionLedger {
  /** Claims waiting for the next batch, and claims whose batch is being written (key → result). */
  private readonly inflight = new Map<string, Promise<boolean>>();
  private queue: { key: string; done: (e?: unknown) => void }[] = [];
  constructor(private readonly store: CeremonyStore) {}

  claim(protocol: string, sessionId: Uint8Array): Promise<boolean> {
    const key = `${protocol}/${bytesToHex(sessionId)}`;
    // a concurrent claim of the same session: whichever came first wins, this one is refused
    if (this.inflight.has(key)) return Promise.resolve(false);
    const p = this.store.get('sessions', key).then(async (found) => {
      if (found !== undefined) return false;
      await this.enqueue(key);
      return true;
    });
    this.inflight.set(key, p);
    const drop = () => this.inflight.delete(key);
    p.then(drop, drop);
    return p;
  }

  private enqueue(key: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ key, done: (e) => (e === undefined ? resolve() : reject(e)) });
      if (this.queue.length > 1) return;
      setImmediate(() => {
        const items = this.queue;
        this.queue = [];
        const ops = items.map(
          (i): StoreOp => ({ type: 'put', sublevel: 'sessions', key: i.key, value: new Uint8Array(0) }),
        );
        this.store.batch(ops).then(
          () => {
            for (const i of items) i.done();
          },
          (e: unknown) => {
            for (const i of items) i.done(e ?? new Error('session ledger write failed'));
          },
        );
      });
    });
  }
}
