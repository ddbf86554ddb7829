/**
 * The signer's end of the relay of MPC envelopes for device parties (`/custodian/relay/1`; the
 * protocol, its frames and the coordinator's end are in `@custodian/signer-client` relay.ts): the
 * coordinator opens the streams, the signer accepts them from the configured coordinator only.
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
  /** Send an envelope to a device party through the coordinator. Rejects when the coordinator has no relay stream open. */
  send(devicePeerId: string, envelope: Uint8Array): Promise<void>;
}

/**
 * Accept relay streams from the configured coordinator on a signer's host. Frames received are
 * handed to `onEnvelope` (then to `CeremonyRunner.deliver(undefined, …)`); frames to devices go out
 * on the most recent stream the coordinator opened, in order.
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
  let current: { lp: ReturnType<typeof lpStream>; stream: Stream } | undefined;
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
      const mine = { lp, stream };
      current = mine;
      opts.log.info({ peer: from }, 'relay stream from the coordinator opened');
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
        if (current === mine) current = undefined;
      }
    },
    { maxInboundStreams: 8 },
  );
  return {
    send(devicePeerId, envelope) {
      const next = chain.then(async () => {
        const c = current;
        if (!c) throw new Error('no relay stream from the coordinator');
        await c.lp.write(encodeRelayFrame({ peerId: devicePeerId, envelope }), { signal: writeDeadline() });
      });
      chain = next.catch(() => undefined);
      return next;
    },
  };
}
