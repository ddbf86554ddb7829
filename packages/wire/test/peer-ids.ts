/**
 * Test-only: the libp2p peer id (base58btc text) of an Ed25519 public key, as `@libp2p/peer-id`
 * parses it: identity multihash (0x00, length 0x24) of the protobuf PublicKey {Type: Ed25519 (1),
 * Data: 32 bytes} (0x08 0x01 0x12 0x20 ‖ key). Shared by the blame tests.
 */
import { concatBytes } from '@noble/hashes/utils.js';

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

function base58(bytes: Uint8Array): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let s = '';
  while (n > 0n) {
    s = B58[Number(n % 58n)] + s;
    n /= 58n;
  }
  for (const b of bytes) {
    if (b !== 0) break;
    s = `1${s}`;
  }
  return s;
}

/** Peer id text of a 32-byte Ed25519 public key. */
export const peerIdOf = (pub: Uint8Array): string =>
  base58(concatBytes(Uint8Array.of(0x00, 0x24, 0x08, 0x01, 0x12, 0x20), pub));
