/**
 * The device hub's upgrade gate (issue #26 item 11): before its hello, a socket may send one frame
 * of at most {@link DEVICE_HELLO_MAX_FRAME_BYTES} (else close 1009) and at most that many bytes in
 * all. At most `preHelloPerAddress` sockets per client address (IPv6: per /64; behind a trusted
 * proxy, the forwarded address) and `preHelloTotal` in all wait for their hello at once; a further
 * upgrade is answered HTTP 429 (503 for the total) and never becomes a WebSocket.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { addressBucket } from '../server.js';
import { DEVICE_HELLO_MAX_FRAME_BYTES, type DeviceHubLimits, type HubLog } from './hub-types.js';

/** WebSocket framing allowance on top of the hello frame (header, mask key, a close frame). */
const PRE_HELLO_FRAMING_BYTES = 64;

/**
 * Opens the WebSocket of an admitted upgrade: `authenticated` is to be called once its hello is
 * accepted (it stops the metering and frees its place), `opened` with the socket once it exists.
 */
export type GatedUpgrade = (authenticated: () => void, opened: (ws: WebSocket) => void) => void;

/** Counts sockets waiting for their hello and the bytes they send (see the module comment). */
export class PreHelloGate {
  /** Sockets waiting for their hello, per client address bucket. */
  readonly #waiting = new Map<string, number>();
  #total = 0;

  constructor(
    private readonly limits: DeviceHubLimits,
    private readonly addressOf: (req: IncomingMessage) => string = defaultAddress,
    private readonly log: HubLog = () => {},
  ) {}

  /** Admit an upgrade request under the caps (then `upgrade` opens the WebSocket) or refuse it (429 / 503). */
  admit(req: IncomingMessage, socket: Duplex, head: Buffer, upgrade: GatedUpgrade): void {
    let address: string;
    try {
      address = this.addressOf(req);
    } catch {
      address = defaultAddress(req);
    }
    const mine = this.#waiting.get(address) ?? 0;
    if (mine >= this.limits.preHelloPerAddress || this.#total >= this.limits.preHelloTotal) {
      const perAddress = mine >= this.limits.preHelloPerAddress;
      this.log('warn', 'device socket refused before hello: too many waiting', { perAddress });
      refuseUpgrade(socket, perAddress ? 429 : 503, perAddress ? 'Too Many Requests' : 'Service Unavailable');
      return;
    }
    // counted from the upgrade request until the hello is accepted or the socket closes
    this.#waiting.set(address, mine + 1);
    this.#total++;
    let counted = true;
    const release = () => {
      if (!counted) return;
      counted = false;
      this.#total--;
      const n = (this.#waiting.get(address) ?? 1) - 1;
      if (n <= 0) this.#waiting.delete(address);
      else this.#waiting.set(address, n);
    };
    socket.once('close', release);
    // every byte before the hello counts (frame headers included): a few KiB, not 4 MiB
    let received = head.length;
    let wsRef: WebSocket | undefined;
    const meter = (chunk: Buffer) => {
      received += chunk.length;
      if (received <= DEVICE_HELLO_MAX_FRAME_BYTES + PRE_HELLO_FRAMING_BYTES) return;
      socket.off('data', meter);
      socket.pause(); // read nothing more; the close frame still goes out
      this.log('warn', 'device socket sent too much before its hello');
      if (wsRef) wsRef.close(1009, 'too much data before hello');
      setTimeout(() => socket.destroy(), 1000).unref?.();
      if (!wsRef) socket.destroy();
    };
    socket.on('data', meter);
    const authenticated = () => {
      socket.off('data', meter);
      release();
    };
    upgrade(authenticated, (ws) => {
      wsRef = ws;
    });
  }
}

/** Client address bucket of an upgrade request without a proxy: the socket peer, IPv6 by /64. */
function defaultAddress(req: IncomingMessage): string {
  return addressBucket(req.socket.remoteAddress ?? 'unknown');
}

/** Answer an upgrade request with a plain HTTP error and close the socket (no WebSocket). */
function refuseUpgrade(socket: Duplex, status: number, reason: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, () => socket.destroy());
  setTimeout(() => socket.destroy(), 1000).unref?.();
}
