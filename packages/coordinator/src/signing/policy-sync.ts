/**
 * Policy versions pushed to the server signers (issue #26 item 3; control.proto `PolicySync`,
 * `@custodian/ceremony` enforce/policies.ts `learnSignedPolicies`). Signers refuse a policy version older than
 * the highest they know, and every version of a policy whose signed tombstone they hold — so they
 * must learn each signed version and tombstone as it takes effect, not only those they sign under:
 *
 * - when a version becomes ACTIVE or a tombstone takes effect (PolicyServiceOptions `activations`), it is
 *   pushed to every registered server signer at once ({@link PolicySync.activated});
 * - before a ceremony, and at start, every signer not yet synced since it last connected gets the
 *   highest signed version of every policy ({@link PolicySync.ensure}); a signer is "synced" until
 *   its connection drops or a push to it fails — so a signer offline at an activation catches up
 *   before it next takes part in a ceremony.
 *
 * Pushes are best effort (a signer that cannot be reached is logged and retried at its next sync):
 * they carry nothing secret, and a signer checks every version against its own pinned Admin device
 * keys, so a push can only RAISE what it refuses, never make it sign. The limit: a coordinator
 * compromised before an activation can withhold that push; the signer then knows only the versions
 * it signed under or was pushed earlier.
 */
import type { ControlClient } from '@custodian/signer-client';
import type { SignedPolicy } from '@custodian/wire';

/** Largest JSON (characters) of one PolicySync request: well below the 4 MiB control message limit. */
export const POLICY_SYNC_BATCH_CHARS = 1024 * 1024;

/** Components of {@link PolicySync}. */
export interface PolicySyncInit {
  control: ControlClient;
  /** Peer ids of the registered (not removed) server signers. */
  signers(): Promise<readonly string[]>;
  /** The highest signed version of every policy (PolicyService `signedVersions`). */
  source(): Promise<readonly SignedPolicy[]>;
  log?(level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>): void;
  /** Per exchange, ms. Default 10 000. */
  timeoutMs?: number;
}

/** Group signed versions into requests of at most {@link POLICY_SYNC_BATCH_CHARS} of JSON (one alone if larger). */
export function policySyncBatches(signed: readonly SignedPolicy[], limit = POLICY_SYNC_BATCH_CHARS): SignedPolicy[][] {
  const out: SignedPolicy[][] = [];
  let cur: SignedPolicy[] = [];
  let size = 0;
  for (const s of signed) {
    const n = JSON.stringify(s).length;
    if (cur.length > 0 && size + n > limit) {
      out.push(cur);
      cur = [];
      size = 0;
    }
    cur.push(s);
    size += n;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** Pushes signed policy versions to the server signers (see the module comment). */
export class PolicySync {
  private readonly synced = new Set<string>();
  private readonly running = new Map<string, Promise<void>>();

  constructor(private readonly init: PolicySyncInit) {
    init.control.host.node.addEventListener('peer:disconnect', (e) => {
      this.synced.delete(e.detail.toString());
    });
  }

  /** Push one newly ACTIVE version or signed tombstone to every registered server signer. Never rejects. */
  async activated(signed: SignedPolicy): Promise<void> {
    const peers = await this.init.signers();
    await Promise.all(peers.map((p) => this.push(p, [signed])));
  }

  /**
   * Make sure each of `peerIds` holds the highest signed version of every policy: a full sync of
   * those not synced since they last connected (concurrent calls share one sync). Never rejects.
   */
  async ensure(peerIds: readonly string[]): Promise<void> {
    await Promise.all(
      peerIds.map((p) => {
        if (this.synced.has(p)) return Promise.resolve();
        let run = this.running.get(p);
        if (!run) {
          run = this.fullSync(p).finally(() => this.running.delete(p));
          this.running.set(p, run);
        }
        return run;
      }),
    );
  }

  /** Full sync of every registered server signer (at start). Never rejects. */
  async ensureAll(): Promise<void> {
    try {
      await this.ensure(await this.init.signers());
    } catch (e) {
      this.init.log?.('warn', 'policy sync: server signers not read', { err: errText(e) });
    }
  }

  private async fullSync(peerId: string): Promise<void> {
    let all: readonly SignedPolicy[];
    try {
      all = await this.init.source();
    } catch (e) {
      this.init.log?.('warn', 'policy sync: signed versions not read', { err: errText(e) });
      return;
    }
    let ok = true;
    for (const batch of policySyncBatches(all)) ok = (await this.push(peerId, batch)) && ok;
    if (ok) this.synced.add(peerId);
  }

  /** One PolicySync exchange; false (logged, the signer marked unsynced) when it failed. */
  private async push(peerId: string, signed: SignedPolicy[]): Promise<boolean> {
    if (signed.length === 0) return true;
    try {
      const items = await this.init.control.syncPolicies(peerId, signed, this.init.timeoutMs ?? 10_000);
      const refused = items.filter((i) => i.outcome !== 'STORED' && i.outcome !== 'KNOWN');
      if (refused.length > 0) {
        // e.g. a signer whose trustedAdminDevices do not list the device that signed: it will
        // refuse transfers under that policy too — the operator must fix its configuration
        this.init.log?.('warn', 'policy sync: a signer refused policy versions', {
          peer: peerId,
          refused: refused.map((i) => ({ policy_id: i.policyId, version: i.version, outcome: i.outcome })),
        });
      }
      return true;
    } catch (e) {
      this.synced.delete(peerId);
      this.init.log?.('warn', 'policy sync: push to a signer failed (retried at its next sync)', {
        peer: peerId,
        err: errText(e),
      });
      return false;
    }
  }
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
