/**
 * The signer's end of the relay of MPC envelopes for device parties (`/custodian/relay/1`; the
 * protocol, its frames and the coordinator's end are in `@custodian/signer-client` relay.ts): the
 * coordinator opens the streams, the signer accepts them from the configured coordinator only.
 *
 * Several coordinator replicas share one libp2p identity (issue #25) and each opens its own relay
 * stream, so the signer may hold several streams of the coordinator peer id at once: it keeps every
 * open one and sends on the newest; when a write fails (the replica died, the stream was reset) that
 * stream is dropped and the frame goes out on the next newest, so frames stay in order.
 */

import {
  decodeRelayFrame,
  encodeRelayFrame,
  type Host,
  isStreamEnd,
  RELAY_PROTOCOL,
  writeDeadline,
} from '@custodian/signer-client';
import { DEFAULT_LIMITS } from '@custodian/wire';
import type { Connection, Stream } from '@libp2p/interface';
import { lpStream } from '@libp2p/utils';
import type { Logger } from 'pino';

/** Signer side of the relay. */
export interface SignerRelay {
  /**
   * Send an envelope to a device party through the coordinator, on the newest open relay stream
   * (falling back to older ones of the same coordinator identity when a write fails). Sends are
   * written one at a time, in call order.
   * @throws Error when no relay stream of the coordinator is open, or every open one failed
   */
  send(devicePeerId: string, envelope: Uint8Array): Promise<void>;
  /** Relay streams of the coordinator open now (one per replica that opened one). */
  openStreams(): number;
}

/**
 * Accept relay streams from the configured coordinator on a signer's host. Frames received (on
 * any of its streams) are handed to `onEnvelope` (then to `CeremonyRunner.deliver(undefined, …)`);
 * frames to devices go out on the most recent stream still open, in order.
 */
export async function attachSignerRelay(
  host: Host,
  opts: {
    coordinatorPeerId: string;
    maxFrameBytes: number;
    log: Logger;
    onEnvelope: (fromDevicePeerId: string, envelope: Uint8Array) => void;
  },
): Promise<SignerRelay> {
  type Open = { lp: ReturnType<typeof lpStream>; stream: Stream };
  /** Open relay streams of the coordinator, oldest first. */
  const open: Open[] = [];
  const drop = (s: Open) => {
    const i = open.indexOf(s);
    if (i >= 0) open.splice(i, 1);
  };
  let chain = Promise.resolve();
  await host.node.handle(
    RELAY_PROTOCOL,
    async (stream: Stream, connection: Connection) => {
      const from = connection.remotePeer.toString();
      if (from !== opts.coordinatorPeerId) {
        opts.log.warn({ peer: from, code: 'not-coordinator' }, 'relay stream refused: peer is not the coordinator');
        stream.abort(new Error('not the coordinator'));
        return;
      }
      const lp = lpStream(stream, { maxDataLength: opts.maxFrameBytes });
      const mine: Open = { lp, stream };
      open.push(mine);
      opts.log.info({ peer: from, streams: open.length }, 'relay stream from the coordinator opened');
      try {
        for (;;) {
          const bytes = (await lp.read()).subarray();
          const f = decodeRelayFrame(bytes, { ...DEFAULT_LIMITS, maxMessageBytes: opts.maxFrameBytes });
          if (!f) {
            opts.log.warn({ peer: from, code: 'malformed', size: bytes.length }, 'relay frame rejected');
            continue;
          }
          opts.onEnvelope(f.peerId, f.envelope);
        }
      } catch (e) {
        if (!isStreamEnd(e))
          opts.log.warn({ peer: from, err: e instanceof Error ? e.message : String(e) }, 'relay stream failed');
      } finally {
        drop(mine);
      }
    },
    { maxInboundStreams: 8 },
  );
  return {
    send(devicePeerId, envelope) {
      const next = chain.then(async () => {
        const bytes = encodeRelayFrame({ peerId: devicePeerId, envelope });
        for (;;) {
          const c = open.at(-1);
          if (!c) throw new Error('no relay stream from the coordinator');
          if (c.stream.status !== 'open' || c.stream.writeStatus !== 'writable') {
            drop(c);
            continue;
          }
          try {
            await c.lp.write(bytes, { signal: writeDeadline() });
            return;
          } catch (e) {
            // this replica's stream is gone: the next newest one carries the frame
            drop(c);
            c.stream.abort(e instanceof Error ? e : new Error('relay write failed'));
            opts.log.warn(
              { err: e instanceof Error ? e.message : String(e), streams: open.length },
              'relay stream to the coordinator failed: trying the next one',
            );
          }
        }
      });
      chain = next.catch(() => undefined);
      return next;
    },
    openStreams: () => open.length,
  };
}
