/**
 * libp2p host of a signer and of the coordinator (its control client): TCP + Noise + Yamux, peers
 * pinned by peer id (a connection gater refuses every peer that is not configured), and two
 * protocols carrying length-prefixed (unsigned varint) frames:
 * - `/custodian/mpc/1`: SignedEnvelope frames between signers (one long-lived stream per peer and
 *   direction, re-dialled when it fails; frames to a peer are written in order);
 * - `/custodian/control/2`: one long-lived stream from the coordinator to each signer carrying
 *   ControlFrame exchanges (a SignedControl request, a ControlResponse back, paired by the frame id;
 *   responses in any order, since ceremonies run concurrently; frames with `interim` set come
 *   before an exchange's response, e.g. ECDSA signature shares for the coordinator). No stream is set up per request:
 *   opening one costs ≈ 1–5 ms in libp2p (peer-store updates on both sides).
 *
 * Both ends build the same host: what a signer does with the frames it receives is its own
 * (`onMpc`, `onControl`, given by the `@custodian/signer` daemon), so the host holds no daemon logic.
 * Longer than 400 lines because both ends of the control stream share its framing and limits here.
 */
import { setMaxListeners } from 'node:events';
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { DEFAULT_LIMITS, decodeControlFrame, encodeControlFrame } from '@custodian/wire';
import type { Connection, Libp2p, PeerId, PrivateKey, Stream } from '@libp2p/interface';
import { tcp } from '@libp2p/tcp';
import { lpStream } from '@libp2p/utils';
import { multiaddr } from '@multiformats/multiaddr';
import { createLibp2p } from 'libp2p';
import type { Logger } from 'pino';

export const MPC_PROTOCOL = '/custodian/mpc/1';
export const CONTROL_PROTOCOL = '/custodian/control/2';

/** How long a frame may wait for a stream's send buffer to drain before the write fails. */
export const WRITE_TIMEOUT_MS = 30_000;
let sharedDeadline: { signal: AbortSignal; until: number } | undefined;

/**
 * The signal for a frame write: it aborts {@link WRITE_TIMEOUT_MS} to 1 s more after the write, and
 * is shared by the writes of one second. A write consults it only when the stream's buffer is full
 * (it then waits for 'drain', adding a listener that the signal keeps until it fires): one timer a
 * second, not one per frame (`AbortSignal.timeout` per write was ≈ 0.3 ms of each signer's CPU per
 * signature).
 */
export function writeDeadline(): AbortSignal {
  const now = Date.now();
  if (!sharedDeadline || sharedDeadline.until <= now) {
    const signal = AbortSignal.timeout(WRITE_TIMEOUT_MS + 1000);
    setMaxListeners(0, signal); // many writes may wait on it at once: not a leak
    sharedDeadline = { signal, until: now + 1000 };
  }
  return sharedDeadline.signal;
}

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
  /**
   * Control request from a pinned peer; returns the response frame. `interim` sends a frame of this
   * exchange ahead of the response (ControlResponse bytes with ControlFrame.interim set); calls
   * after the response are ignored. `closed` aborts when the control stream ends (closed, reset,
   * the connection dropped: the coordinator is gone) before this exchange's response was written:
   * nobody will read it.
   */
  readonly onControl?: (
    from: string,
    bytes: Uint8Array,
    interim: (body: Uint8Array) => void,
    closed: AbortSignal,
  ) => Promise<Uint8Array>;
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
  /**
   * Send one control request (SignedControl bytes) on the long-lived control stream to `peerId`
   * and wait for its response (ControlResponse bytes); interim frames of the exchange go to
   * `onInterim` as they arrive.
   * @throws Error when the stream cannot be opened or written (retried once on a fresh stream),
   *   when it closes before the response, or after `timeoutMs`
   */
  request(
    peerId: string,
    bytes: Uint8Array,
    timeoutMs: number,
    onInterim?: (body: Uint8Array) => void,
  ): Promise<Uint8Array>;
  connectedPeers(): string[];
  stop(): Promise<void>;
}

/**
 * Open a stream for `protocol` to a pinned peer: on an open connection when there is one (libp2p's
 * `dialProtocol` goes through the dial queue and the peer store first, ≈ 1–5 ms here), else by
 * dialling. The protocol name goes with the first frame (multistream-select's optimistic mode).
 */
async function openStream(
  node: Libp2p,
  peers: ReadonlyMap<string, readonly string[]>,
  peerId: string,
  protocol: string,
  signal: AbortSignal,
): Promise<Stream> {
  const conn = node
    .getConnections()
    .find((c) => c.remotePeer.toString() === peerId && c.status === 'open' && c.limits === undefined);
  if (conn) {
    try {
      return await conn.newStream(protocol, { signal, negotiateFully: false });
    } catch {
      // the connection went away: dial afresh below
    }
  }
  return node.dialProtocol(dialAddr(peers, peerId), protocol, { signal, negotiateFully: false });
}

/** Is `e` what a libp2p stream read throws when the stream has ended (closed, reset, EOF)? */
export function isStreamEnd(e: unknown): boolean {
  const name = e instanceof Error ? e.name : '';
  return name === 'UnexpectedEOFError' || name === 'StreamClosedError' || name === 'StreamStateError';
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
      if (isStreamEnd(e)) return;
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
  /** Frame overhead of a ControlFrame around its body (id and field tags): generous. */
  const FRAME_OVERHEAD = 64;
  const frameLimits = { ...DEFAULT_LIMITS, maxMessageBytes: opts.maxFrameBytes + FRAME_OVERHEAD };
  const handleControl = async (stream: Stream, connection: Connection) => {
    const from = connection.remotePeer.toString();
    if (!opts.controlPeers?.has(from) || !opts.onControl) {
      log.warn({ peer: from, code: 'not-coordinator' }, 'control stream refused: peer is not the coordinator');
      stream.abort(new Error('not the coordinator'));
      return;
    }
    const onControl = opts.onControl;
    const lp = lpStream(stream, { maxDataLength: opts.maxFrameBytes + FRAME_OVERHEAD });
    let writes: Promise<void> = Promise.resolve();
    const inflight = new Set<Promise<void>>();
    // aborted when the stream ends: the coordinator never half-closes a control stream, so its end
    // (or a reset, or the connection's loss) means no response of it will be read
    const ended = new AbortController();
    const end = () => ended.abort(new Error('control stream closed'));
    stream.addEventListener('close', end, { once: true });
    try {
      for (;;) {
        let raw: Uint8Array;
        try {
          raw = (await lp.read()).subarray();
        } catch (e) {
          if (isStreamEnd(e)) break;
          throw e;
        }
        const frame = decodeControlFrame(raw, frameLimits);
        if (!frame.ok) throw new Error(frame.rejection.reason);
        const { id } = frame.value;
        // exchanges run concurrently; frames are written one at a time, in the order they are ready
        let answered = false;
        const closed = new AbortController();
        const onEnd = () => {
          if (!answered) closed.abort(ended.signal.reason);
        };
        if (ended.signal.aborted) onEnd();
        else ended.signal.addEventListener('abort', onEnd, { once: true });
        const interim = (body: Uint8Array) => {
          if (answered) return;
          writes = writes.then(() =>
            lp.write(encodeControlFrame({ id, body, interim: true }), { signal: writeDeadline() }),
          );
          writes.catch((e: unknown) =>
            log.warn({ peer: from, err: e instanceof Error ? e.message : String(e) }, 'interim control frame not sent'),
          );
        };
        const p = onControl(from, frame.value.body, interim, closed.signal).then((res) => {
          answered = true;
          ended.signal.removeEventListener('abort', onEnd);
          writes = writes.then(() => lp.write(encodeControlFrame({ id, body: res }), { signal: writeDeadline() }));
          return writes;
        });
        const tracked = p
          .catch((e: unknown) =>
            log.warn({ peer: from, err: e instanceof Error ? e.message : String(e) }, 'control response not sent'),
          )
          .finally(() => ended.signal.removeEventListener('abort', onEnd));
        inflight.add(tracked);
        void tracked.finally(() => inflight.delete(tracked));
      }
      end();
      await Promise.all(inflight);
      await stream.close().catch(() => undefined);
    } catch (e) {
      end();
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
      const stream = await openStream(node, opts.peers, peerId, MPC_PROTOCOL, AbortSignal.timeout(5000));
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

  /** The coordinator side of a control stream to one signer. */
  interface ControlMux {
    readonly entry: { readonly ready: Promise<ControlMux> };
    readonly stream: Stream;
    readonly lp: ReturnType<typeof lpStream>;
    readonly pending: Map<
      number,
      { resolve: (b: Uint8Array) => void; reject: (e: Error) => void; interim?: (b: Uint8Array) => void }
    >;
    nextId: number;
    writes: Promise<void>;
  }
  const muxes = new Map<string, { readonly ready: Promise<ControlMux> }>();
  /** Fail every pending exchange of `mux` and forget it (the next request opens a new stream). */
  const closeMux = (peerId: string, mux: ControlMux, why: unknown) => {
    if (muxes.get(peerId) === mux.entry) muxes.delete(peerId);
    const err = why instanceof Error ? why : new Error(`control stream to ${peerId} closed`);
    for (const p of mux.pending.values()) p.reject(err);
    mux.pending.clear();
    mux.stream.abort(err);
  };
  const controlMux = (peerId: string): Promise<ControlMux> => {
    const existing = muxes.get(peerId);
    if (existing) return existing.ready;
    const entry: { ready: Promise<ControlMux> } = { ready: Promise.resolve() as never };
    entry.ready = (async () => {
      const stream = await openStream(node, opts.peers, peerId, CONTROL_PROTOCOL, AbortSignal.timeout(5000));
      const mux: ControlMux = {
        entry,
        stream,
        lp: lpStream(stream, { maxDataLength: opts.maxFrameBytes + FRAME_OVERHEAD }),
        pending: new Map(),
        nextId: 1,
        writes: Promise.resolve(),
      };
      void (async () => {
        try {
          for (;;) {
            const frame = decodeControlFrame((await mux.lp.read()).subarray(), frameLimits);
            if (!frame.ok) throw new Error(`control stream to ${peerId}: ${frame.rejection.reason}`);
            const waiter = mux.pending.get(frame.value.id);
            if (frame.value.interim) {
              try {
                waiter?.interim?.(frame.value.body);
              } catch (e) {
                log.warn(
                  { peer: peerId, err: e instanceof Error ? e.message : String(e) },
                  'interim frame handler failed',
                );
              }
              continue;
            }
            mux.pending.delete(frame.value.id);
            waiter?.resolve(frame.value.body);
          }
        } catch (e) {
          closeMux(peerId, mux, isStreamEnd(e) ? new Error(`control stream to ${peerId} closed`) : e);
        }
      })();
      return mux;
    })();
    muxes.set(peerId, entry);
    entry.ready.catch(() => {
      if (muxes.get(peerId) === entry) muxes.delete(peerId);
    });
    return entry.ready;
  };

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
            await out.lp.write(bytes, { signal: writeDeadline() });
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
    async request(peerId, bytes, timeoutMs, onInterim) {
      // one deadline for the whole exchange: opening the stream, writing, and the response
      const signal = AbortSignal.timeout(timeoutMs);
      const expired = () => new Error(`control request to ${peerId} timed out after ${timeoutMs} ms`);
      for (let attempt = 0; ; attempt++) {
        const mux = await controlMux(peerId);
        const id = mux.nextId++;
        const response = new Promise<Uint8Array>((resolve, reject) =>
          mux.pending.set(id, { resolve, reject, ...(onInterim ? { interim: onInterim } : {}) }),
        );
        response.catch(() => undefined);
        try {
          mux.writes = mux.writes.then(() => mux.lp.write(encodeControlFrame({ id, body: bytes }), { signal }));
          await mux.writes;
        } catch (e) {
          mux.pending.delete(id);
          closeMux(peerId, mux, e);
          if (signal.aborted) throw expired();
          if (attempt === 0) continue; // a stale stream (the signer restarted): once more on a new one
          throw e instanceof Error ? e : new Error('control request not sent');
        }
        const onAbort = () => {
          const waiter = mux.pending.get(id);
          mux.pending.delete(id);
          waiter?.reject(expired());
        };
        if (signal.aborted) onAbort();
        signal.addEventListener('abort', onAbort, { once: true });
        try {
          return await response;
        } finally {
          signal.removeEventListener('abort', onAbort);
        }
      }
    },
    connectedPeers: () => [...new Set(node.getConnections().map((c) => c.remotePeer.toString()))],
    async stop() {
      await node.stop();
    },
  };
}
