/**
 * libp2p host of a signer (and of a coordinator's control client): TCP + Noise + Yamux, peers
 * pinned by peer id (a connection gater refuses every peer that is not configured), and two
 * protocols carrying length-prefixed (unsigned varint) frames:
 * - `/custodian/mpc/1`: SignedEnvelope frames between signers (one long-lived stream per peer and
 *   direction, re-dialled when it fails; frames to a peer are written in order);
 * - `/custodian/control/1`: one SignedControl request from the coordinator, one ControlResponse back.
 */
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import type { Connection, Libp2p, PeerId, PrivateKey, Stream } from '@libp2p/interface';
import { tcp } from '@libp2p/tcp';
import { lpStream } from '@libp2p/utils';
import { multiaddr } from '@multiformats/multiaddr';
import { createLibp2p } from 'libp2p';
import type { Logger } from 'pino';

export const MPC_PROTOCOL = '/custodian/mpc/1';
export const CONTROL_PROTOCOL = '/custodian/control/1';

/** Host options. */
export interface HostOptions {
  readonly privateKey: PrivateKey;
  /** Listen multiaddrs (empty: dial only). */
  readonly listen: readonly string[];
  /** Pinned peers: peer id → dial addresses. Every other peer is refused. */
  readonly peers: ReadonlyMap<string, readonly string[]>;
  /** Largest frame accepted, bytes. */
  readonly maxFrameBytes: number;
  readonly log: Logger;
  /** MPC frames received from a pinned peer. */
  readonly onMpc?: (from: string, bytes: Uint8Array) => void;
  /** Control request from a pinned peer; returns the response frame. */
  readonly onControl?: (from: string, bytes: Uint8Array) => Promise<Uint8Array>;
  /** Which peers may use the control protocol (default: none). */
  readonly controlPeers?: ReadonlySet<string>;
}

/** A running host. */
export interface Host {
  readonly node: Libp2p;
  readonly peerId: string;
  /** Actual listen addresses (with the OS-chosen port). */
  addrs(): string[];
  /** Send one MPC frame to a pinned peer (retries briefly on dial failure). */
  sendMpc(peerId: string, bytes: Uint8Array): Promise<void>;
  /** Send one control request and wait for the response frame. */
  request(peerId: string, bytes: Uint8Array, timeoutMs: number): Promise<Uint8Array>;
  connectedPeers(): string[];
  stop(): Promise<void>;
}

function dialAddr(peers: ReadonlyMap<string, readonly string[]>, peerId: string) {
  const addrs = peers.get(peerId);
  if (!addrs || addrs.length === 0) throw new Error(`peer ${peerId} has no configured address`);
  return addrs.map((a) => multiaddr(`${a}/p2p/${peerId}`));
}

async function readAll(stream: Stream, max: number, onFrame: (b: Uint8Array) => void): Promise<void> {
  const lp = lpStream(stream, { maxDataLength: max });
  for (;;) {
    let frame: Uint8Array;
    try {
      frame = (await lp.read()).subarray();
    } catch (e) {
      // end of stream, or a frame above the limit / malformed length prefix
      const msg = e instanceof Error ? e.name : '';
      if (msg === 'UnexpectedEOFError' || msg === 'StreamClosedError' || msg === 'StreamStateError') return;
      throw e;
    }
    onFrame(frame);
  }
}

/** Create and start a host. */
export async function createHost(opts: HostOptions): Promise<Host> {
  const log = opts.log;
  const allowed = (p: PeerId) => opts.peers.has(p.toString());
  const node = await createLibp2p({
    privateKey: opts.privateKey,
    addresses: { listen: [...opts.listen] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    // Protocol rounds (CGGMP21 aux-info proofs) can keep a signer's event loop busy for seconds:
    // a missed ping must not tear down the connection (ceremony deadlines handle dead peers).
    connectionMonitor: { abortConnectionOnPingFailure: false },
    connectionGater: {
      denyDialPeer: (p) => !allowed(p),
      denyInboundEncryptedConnection: (p) => {
        if (allowed(p)) return false;
        log.warn({ peer: p.toString(), code: 'unknown-peer' }, 'connection refused: peer not configured');
        return true;
      },
      denyOutboundEncryptedConnection: (p) => !allowed(p),
    },
  });
  const handleMpc = async (stream: Stream, connection: Connection) => {
    const from = connection.remotePeer.toString();
    try {
      await readAll(stream, opts.maxFrameBytes, (b) => {
        log.debug({ peer: from, size: b.length }, 'mpc frame received');
        opts.onMpc?.(from, b);
      });
      await stream.close().catch(() => undefined);
    } catch (e) {
      log.warn({ peer: from, code: 'frame', err: e instanceof Error ? e.message : String(e) }, 'mpc stream rejected');
      stream.abort(e instanceof Error ? e : new Error('rejected'));
    }
  };
  const handleControl = async (stream: Stream, connection: Connection) => {
    const from = connection.remotePeer.toString();
    try {
      if (!opts.controlPeers?.has(from) || !opts.onControl) {
        log.warn({ peer: from, code: 'not-coordinator' }, 'control stream refused: peer is not the coordinator');
        stream.abort(new Error('not the coordinator'));
        return;
      }
      const lp = lpStream(stream, { maxDataLength: opts.maxFrameBytes });
      const req = (await lp.read()).subarray();
      const res = await opts.onControl(from, req);
      await lp.write(res);
      await stream.close().catch(() => undefined);
    } catch (e) {
      log.warn({ peer: from, code: 'frame', err: e instanceof Error ? e.message : String(e) }, 'control stream failed');
      stream.abort(e instanceof Error ? e : new Error('failed'));
    }
  };
  await node.handle(MPC_PROTOCOL, handleMpc, { maxInboundStreams: 1024 });

  interface Outbound {
    readonly stream: Stream;
    readonly lp: ReturnType<typeof lpStream>;
  }
  const outStreams = new Map<string, Promise<Outbound>>();
  const chains = new Map<string, Promise<void>>();
  const outbound = (peerId: string): Promise<Outbound> => {
    const existing = outStreams.get(peerId);
    if (existing) return existing;
    const p = (async () => {
      const stream = await node.dialProtocol(dialAddr(opts.peers, peerId), MPC_PROTOCOL, {
        signal: AbortSignal.timeout(5000),
      });
      stream.addEventListener('close', () => {
        if (outStreams.get(peerId) === p) outStreams.delete(peerId);
      });
      return { stream, lp: lpStream(stream, { maxDataLength: opts.maxFrameBytes }) };
    })();
    outStreams.set(peerId, p);
    p.catch(() => {
      if (outStreams.get(peerId) === p) outStreams.delete(peerId);
    });
    return p;
  };
  await node.handle(CONTROL_PROTOCOL, handleControl, { maxInboundStreams: 64 });

  return {
    node,
    peerId: node.peerId.toString(),
    addrs: () => node.getMultiaddrs().map((a) => a.toString()),
    sendMpc(peerId, bytes) {
      // Frames to one peer go, in order, over one long-lived stream (re-dialled on failure).
      const prev = chains.get(peerId) ?? Promise.resolve();
      const next = prev.then(async () => {
        let last: unknown;
        for (let attempt = 0; attempt < 4; attempt++) {
          let out: Outbound | undefined;
          try {
            out = await outbound(peerId);
            await out.lp.write(bytes, { signal: AbortSignal.timeout(30_000) });
            log.debug({ peer: peerId, size: bytes.length }, 'mpc frame sent');
            return;
          } catch (e) {
            last = e;
            if (out) {
              outStreams.delete(peerId);
              out.stream.abort(e instanceof Error ? e : new Error('send failed'));
            }
            log.debug(
              { peer: peerId, attempt, err: e instanceof Error ? e.message : String(e) },
              'mpc send attempt failed',
            );
            await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
          }
        }
        throw last instanceof Error ? last : new Error('send failed');
      });
      const settled = next.catch(() => undefined);
      chains.set(peerId, settled);
      void settled.then(() => {
        if (chains.get(peerId) === settled) chains.delete(peerId);
      });
      return next;
    },
    async request(peerId, bytes, timeoutMs) {
      const signal = AbortSignal.timeout(timeoutMs);
      const stream = await node.dialProtocol(dialAddr(opts.peers, peerId), CONTROL_PROTOCOL, { signal });
      const lp = lpStream(stream, { maxDataLength: opts.maxFrameBytes });
      await lp.write(bytes, { signal });
      const res = (await lp.read({ signal })).subarray();
      await stream.close().catch(() => undefined);
      return res;
    },
    connectedPeers: () => [...new Set(node.getConnections().map((c) => c.remotePeer.toString()))],
    async stop() {
      await node.stop();
    },
  };
}
