/**
 * Links kept up to pinned peers: the coordinator's host dials every registered server signer (the
 * signers listen; the coordinator is dial-only, so it is the side that reconnects) and keeps a
 * libp2p connection to each, so an operator sees at once in the coordinator's log that a signer
 * went away and when it is back, and the next ceremony finds the connection open.
 *
 * A link that cannot be dialled, or whose connection drops, is retried forever with a capped,
 * jittered exponential backoff ({@link Backoff}), reset once a dial succeeds. Log lines (pino,
 * field `signer` = the peer id): `server signer <peer> unreachable (<error>); reconnecting in N ms
 * (attempt k)`, `disconnected from server signer <peer>; reconnecting in N ms (attempt 1)` (warn),
 * `connected to server signer <peer>` (info, first link) and `reconnected to server signer <peer>`
 * (warn, after an outage: it pairs with the warnings before it).
 */
import type { PeerId } from '@libp2p/interface';
import { multiaddr } from '@multiformats/multiaddr';
import type { Logger } from 'pino';
import { Backoff } from './backoff.js';
import type { Host } from './host.js';

/** Options of {@link PeerLinks}. */
export interface PeerLinksOptions {
  /** Base of the first retry delay, ms (default 1000). */
  readonly initialMs?: number;
  /** Cap of the retry delay, ms (default 30 000). */
  readonly maxMs?: number;
  /** Timeout of one dial, ms (default 5000). */
  readonly dialTimeoutMs?: number;
  readonly log: Logger;
}

interface Link {
  readonly backoff: Backoff;
  timer: NodeJS.Timeout | undefined;
  dialing: boolean;
  /** Was this link up before (the next success is a reconnection)? */
  everUp: boolean;
  /** Has it been down since it was last up? */
  down: boolean;
}

/**
 * Keep links from `host` to the peers of `peers()` (peer id → dial addresses, read at every
 * attempt). Call {@link PeerLinks.sync} after the list changes; {@link PeerLinks.stop} at shutdown.
 */
export class PeerLinks {
  private readonly links = new Map<string, Link>();
  private stopped = false;
  private readonly onDisconnect = (e: CustomEvent<PeerId>) => this.disconnected(e.detail.toString());

  constructor(
    private readonly host: Host,
    private readonly peers: () => ReadonlyMap<string, readonly string[]>,
    private readonly opts: PeerLinksOptions,
  ) {
    host.node.addEventListener('peer:disconnect', this.onDisconnect);
  }

  /** Peer ids linked now. */
  up(): string[] {
    const connected = new Set(this.host.connectedPeers());
    return [...this.links.keys()].filter((p) => connected.has(p));
  }

  /** Start links to peers new in `peers()`, drop links to peers no longer there. */
  sync(): void {
    if (this.stopped) return;
    const want = this.peers();
    for (const [peer, link] of this.links) {
      if (want.has(peer)) continue;
      if (link.timer) clearTimeout(link.timer);
      this.links.delete(peer);
    }
    for (const [peer, addrs] of want) {
      if (this.links.has(peer) || addrs.length === 0) continue;
      const link: Link = {
        backoff: new Backoff({ initialMs: this.opts.initialMs ?? 1000, maxMs: this.opts.maxMs ?? 30_000 }),
        timer: undefined,
        dialing: false,
        everUp: false,
        down: false,
      };
      this.links.set(peer, link);
      void this.dial(peer, link);
    }
  }

  /** Stop every link's retries (connections close with the host). Idempotent. */
  stop(): void {
    this.stopped = true;
    this.host.node.removeEventListener('peer:disconnect', this.onDisconnect);
    for (const link of this.links.values()) if (link.timer) clearTimeout(link.timer);
    this.links.clear();
  }

  private connected(peer: string): boolean {
    return this.host.node.getConnections().some((c) => c.remotePeer.toString() === peer && c.status === 'open');
  }

  private disconnected(peer: string): void {
    const link = this.links.get(peer);
    if (!link || this.stopped || link.timer || link.dialing) return;
    link.down = true;
    link.backoff.reset();
    const { attempt, delayMs } = link.backoff.next();
    this.opts.log.warn(
      { signer: peer, attempt, delayMs },
      `disconnected from server signer ${peer}; reconnecting in ${delayMs} ms (attempt ${attempt})`,
    );
    this.schedule(peer, link, delayMs);
  }

  private schedule(peer: string, link: Link, delayMs: number): void {
    link.timer = setTimeout(() => {
      link.timer = undefined;
      void this.dial(peer, link);
    }, delayMs);
    // the links never keep a process alive by themselves (the coordinator's server does)
    link.timer.unref();
  }

  private async dial(peer: string, link: Link): Promise<void> {
    if (this.stopped || this.links.get(peer) !== link || link.dialing) return;
    const addrs = this.peers().get(peer) ?? [];
    if (addrs.length === 0) {
      this.links.delete(peer);
      return;
    }
    link.dialing = true;
    try {
      if (!this.connected(peer)) {
        await this.host.node.dial(
          addrs.map((a) => multiaddr(`${a}/p2p/${peer}`)),
          { signal: AbortSignal.timeout(this.opts.dialTimeoutMs ?? 5000) },
        );
      }
      link.dialing = false;
      if (this.stopped || this.links.get(peer) !== link) return;
      const after = link.backoff.attempt;
      link.backoff.reset();
      if (link.down && link.everUp)
        this.opts.log.warn({ signer: peer, attempts: after }, `reconnected to server signer ${peer}`);
      else if (!link.everUp) this.opts.log.info({ signer: peer }, `connected to server signer ${peer}`);
      link.everUp = true;
      link.down = false;
      // the connection may have dropped meanwhile (no disconnect event seen while dialling)
      if (!this.connected(peer)) this.disconnected(peer);
    } catch (e) {
      link.dialing = false;
      if (this.stopped || this.links.get(peer) !== link) return;
      link.down = true;
      const { attempt, delayMs } = link.backoff.next();
      const err = e instanceof Error ? e.message : String(e);
      this.opts.log.warn(
        { signer: peer, attempt, delayMs, err },
        `server signer ${peer} unreachable (${err}); reconnecting in ${delayMs} ms (attempt ${attempt})`,
      );
      this.schedule(peer, link, delayMs);
    }
  }
}
