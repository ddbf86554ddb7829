/**
 * The presignature reconciliation messages of control.proto (issue #27 [faults] item 7):
 * `PresignatureInventory` / `DeletePresignatures` requests (signed like every control request) and
 * their answers round-trip through the real codec; a request with two bodies is not encoded.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import {
  CONTROL_VERSION,
  decodeControlResponse,
  encodeControlResponse,
  openControlRequest,
  signControlRequest,
} from '../src/index.js';

const secret = ed25519.utils.randomSecretKey();
const pub = ed25519.getPublicKey(secret);
const parties = [{ peerId: '12D3KooWA' }, { peerId: '12D3KooWB' }];
const ids = [`${'ab'.repeat(24)}.0`, `${'ab'.repeat(24)}.1`];

describe('presignature inventory and deletion messages', () => {
  it('an inventory request and its answer (ids with their ages) round-trip', () => {
    const opened = openControlRequest(
      signControlRequest(
        { version: CONTROL_VERSION, issuedUnixMs: 1_700_000_000_000, presignatureInventory: { keyId: 'k1', parties } },
        secret,
      ),
      pub,
    );
    expect(opened.ok).toBe(true);
    if (!opened.ok) return;
    expect(opened.value.presignatureInventory).toEqual({ keyId: 'k1', parties });
    const res = decodeControlResponse(
      encodeControlResponse({
        version: CONTROL_VERSION,
        presignatureInventory: {
          presignatures: [
            { id: ids[0] as string, ageMs: 0 },
            { id: ids[1] as string, ageMs: 900_000 },
          ],
        },
      }),
    );
    expect(res.ok).toBe(true);
    if (!res.ok) return;
    expect(res.value.presignatureInventory).toEqual({
      presignatures: [
        { id: ids[0], ageMs: 0 },
        { id: ids[1], ageMs: 900_000 },
      ],
    });
  });

  it('a deletion request and its answer (deleted count, ids in use) round-trip', () => {
    const opened = openControlRequest(
      signControlRequest(
        {
          version: CONTROL_VERSION,
          issuedUnixMs: 1_700_000_000_000,
          deletePresignatures: { keyId: 'k1', parties, ids },
        },
        secret,
      ),
      pub,
    );
    expect(opened.ok).toBe(true);
    if (!opened.ok) return;
    expect(opened.value.deletePresignatures).toEqual({ keyId: 'k1', parties, ids });
    const res = decodeControlResponse(
      encodeControlResponse({
        version: CONTROL_VERSION,
        deletePresignatures: { deleted: 1, inUse: [ids[1] as string] },
      }),
    );
    expect(res.ok).toBe(true);
    if (!res.ok) return;
    expect(res.value.deletePresignatures).toEqual({ deleted: 1, inUse: [ids[1]] });
  });

  it('a request carrying an inventory and a status at once cannot be encoded (one body per request)', () => {
    expect(() =>
      signControlRequest(
        {
          version: CONTROL_VERSION,
          issuedUnixMs: 1_700_000_000_000,
          status: {},
          presignatureInventory: { keyId: 'k1', parties },
        },
        secret,
      ),
    ).toThrow(/multiple values/);
  });
});
