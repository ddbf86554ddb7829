/**
 * Attack (issue #21, refusal codes as typed fields): the gateway used to take a refusal's code from
 * the leading UPPER_SNAKE word of the signer's free text (`refusalCode()`), so the text decided
 * whether a refusal was definitive or transient. A POLICY_DELETED refusal whose text started with
 * "SIGNING_IN_PROGRESS" was read as transient (the transfer waited instead of being REJECTED); a
 * SIGNING_IN_PROGRESS refusal worded without the prefix was read as definitive (the transfer was
 * REJECTED with its sentence as sub_status); and any text starting with an upper-case word ("ECDSA
 * requested but …") became the "code" ECDSA. Before this change all three cases below failed
 * (received UNAVAILABLE, REFUSED, and refusal "ECDSA"). Now the code is the typed
 * `CeremonyResult.refusal` and the text is never read for it; each result goes through the real
 * codec (encodeControlResponse → decodeControlResponse) as it would from a signer.
 */
import {
  type CeremonyResult,
  decodeControlResponse,
  encodeControlResponse,
  Outcome,
  type RefusalCode,
  refusalValue,
} from '@custodian/wire';
import { describe, expect, it } from 'vitest';
import { mapSignResults, type SignParty } from '../src/signing/gateway.js';

const s0: SignParty = { kind: 'server', id: 's0' };
const targets = [{ party: s0, peerId: 'P0' }];
const cid = new Uint8Array(24).fill(1);
const req = { algorithm: 'SECP256K1_ECDSA' as const, digests: [new Uint8Array(32)] };

/** A REFUSED result as a signer sends it, decoded by the coordinator's codec. */
function overTheWire(result: CeremonyResult): CeremonyResult {
  const decoded = decodeControlResponse(encodeControlResponse({ version: 1, result }));
  if (!decoded.ok || !decoded.value.result) throw new Error('did not decode');
  return decoded.value.result;
}

function refused(code: RefusalCode, error: string): CeremonyResult {
  return overTheWire({ ceremonyId: cid, outcome: Outcome.REFUSED, refusal: refusalValue(code), error });
}

describe('a refusal is read from its typed code, never from its text', () => {
  it('a definitive refusal whose text starts with a transient code stays definitive', () => {
    const result = refused('POLICY_DELETED', 'SIGNING_IN_PROGRESS policy p was deleted (signed tombstone)');
    expect(mapSignResults(req, targets, [{ party: s0, result, unreachable: false }])).toEqual({
      ok: false,
      reason: 'REFUSED',
      refusal: 'POLICY_DELETED',
      by: s0,
    });
  });

  it('a transient refusal whose text names no code (or another one) stays transient', () => {
    for (const text of ['a signature of this transfer is already in progress', 'TRANSFER_ALREADY_SIGNED? no: busy']) {
      const result = refused('SIGNING_IN_PROGRESS', text);
      expect(mapSignResults(req, targets, [{ party: s0, result, unreachable: false }])).toEqual({
        ok: false,
        reason: 'UNAVAILABLE',
        unavailable: [{ party: s0, error: text }],
        message: `server s0: ${text}`,
      });
    }
  });

  it('a text starting with an upper-case word that is no code does not become the code', () => {
    const result = refused('PRIME_POOL_NOT_CONFIGURED', 'ECDSA requested but this signer has no prime pool configured');
    expect(mapSignResults(req, targets, [{ party: s0, result, unreachable: false }])).toMatchObject({
      reason: 'REFUSED',
      refusal: 'PRIME_POOL_NOT_CONFIGURED',
    });
  });

  it('a refusal without a code, or with a value this build does not know, is a definitive UNKNOWN', () => {
    const none = overTheWire({ ceremonyId: cid, outcome: Outcome.REFUSED, error: 'SIGNING_IN_PROGRESS: old signer' });
    expect(mapSignResults(req, targets, [{ party: s0, result: none, unreachable: false }])).toEqual({
      ok: false,
      reason: 'REFUSED',
      refusal: 'UNKNOWN',
      by: s0,
    });
    // a newer signer's value (proto3 enums are open: it decodes as the number)
    const newer = overTheWire({ ceremonyId: cid, outcome: Outcome.REFUSED, refusal: 4242, error: 'new reason' });
    expect(newer.refusal).toBe(4242);
    expect(mapSignResults(req, targets, [{ party: s0, result: newer, unreachable: false }])).toEqual({
      ok: false,
      reason: 'REFUSED',
      refusal: 'UNKNOWN',
      by: s0,
    });
  });
});
