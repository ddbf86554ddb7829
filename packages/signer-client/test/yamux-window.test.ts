/**
 * The patched yamux flow control (patches/@chainsafe__libp2p-yamux@8.0.1.patch): a receiver
 * credits the sender once at least half of its receive window has been consumed, not after every
 * data frame. Two hosts over real TCP on 127.0.0.1: many small frames send (almost) no
 * WINDOW_UPDATE back, and a transfer of several windows still completes, in order, with updates.
 */

import { YamuxStream } from '@chainsafe/libp2p-yamux/stream';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import '../src/polyfills.js';
import { freePort, waitFor } from '../../signer/test/cluster.js';
import { createHost, type Host } from '../src/index.js';

/** js-yamux's initial stream receive window (256 KiB). */
const INITIAL_WINDOW = 256 * 1024;

let a: Host;
let b: Host;
const received: Uint8Array[] = [];

beforeAll(async () => {
  const [ka, kb] = await Promise.all([generateKeyPair('Ed25519'), generateKeyPair('Ed25519')]);
  const [pa, pb] = [peerIdFromPrivateKey(ka).toString(), peerIdFromPrivateKey(kb).toString()];
  const [portA, portB] = [await freePort(), await freePort()];
  const log = pino({ level: 'silent' });
  a = await createHost({
    privateKey: ka,
    listen: [`/ip4/127.0.0.1/tcp/${portA}`],
    peers: new Map([[pb, [`/ip4/127.0.0.1/tcp/${portB}`]]]),
    maxFrameBytes: 1024 * 1024,
    log,
  });
  b = await createHost({
    privateKey: kb,
    listen: [`/ip4/127.0.0.1/tcp/${portB}`],
    peers: new Map([[pa, [`/ip4/127.0.0.1/tcp/${portA}`]]]),
    maxFrameBytes: 1024 * 1024,
    log,
    onMpc: (_from, bytes) => received.push(bytes),
  });
}, 30_000);

afterAll(async () => {
  vi.restoreAllMocks();
  await Promise.all([a?.stop(), b?.stop()]);
});

/** A frame whose bytes say its index and length (so order and integrity can be checked). */
function frame(i: number, size: number): Uint8Array {
  const f = new Uint8Array(size).fill(i & 0xff);
  new DataView(f.buffer).setUint32(0, i);
  return f;
}

describe('yamux flow control (patched: credit at half the window)', () => {
  it('small frames: the receiver sends no WINDOW_UPDATE per frame; a multi-window transfer completes in order', async () => {
    // count the WINDOW_UPDATE frames that credit the sender: sendWindowUpdate restores the receive
    // capacity exactly when it sends one (the stream's SYN / ACK frames carry no credit)
    type Window = { recvWindowCapacity: number; sendWindowUpdate(): void };
    const proto = YamuxStream.prototype as unknown as Window;
    const original = proto.sendWindowUpdate;
    let credited = 0;
    vi.spyOn(proto, 'sendWindowUpdate').mockImplementation(function (this: Window) {
      const before = this.recvWindowCapacity;
      original.call(this);
      if (this.recvWindowCapacity > before) credited++;
    });
    const updates = () => credited;
    const peerB = b.peerId;
    // open the stream (its SYN / ACK exchange is flagged and always sent)
    await a.sendMpc(peerB, frame(0, 64));
    await waitFor(() => received.length === 1, 10_000, 'the first frame');
    const before = updates();
    // 200 small frames (~ 40 KB in all, far below half a window)
    for (let i = 1; i <= 200; i++) await a.sendMpc(peerB, frame(i, 200));
    await waitFor(() => received.length === 201, 10_000, 'the small frames');
    // unpatched, every one of the 200 frames was answered with a WINDOW_UPDATE
    expect(updates() - before).toBe(0);
    // 4 windows' worth in 64 KiB frames: the sender runs out of credit unless the receiver
    // credits it at half the window, so completing proves the updates still flow
    const big = 64 * 1024;
    const n = (4 * INITIAL_WINDOW) / big;
    for (let i = 0; i < n; i++) await a.sendMpc(peerB, frame(1000 + i, big));
    await waitFor(() => received.length === 201 + n, 20_000, 'the multi-window transfer');
    expect(updates() - before).toBeGreaterThan(0);
    const index = (f: Uint8Array) => new DataView(f.buffer, f.byteOffset, f.byteLength).getUint32(0);
    for (let i = 0; i <= 200; i++) expect(index(received[i] as Uint8Array)).toBe(i);
    for (let i = 0; i < n; i++) {
      const got = received[201 + i] as Uint8Array;
      expect(got.length).toBe(big);
      expect(index(got)).toBe(1000 + i);
      expect(got[big - 1]).toBe((1000 + i) & 0xff);
    }
  }, 60_000);
});
