/**
 * The commit evidence of a reshare (keys/outcome.ts `pendingAttestations`): every new party's
 * 64-byte Ed25519 attestation over `reshareAttestationMessage(keyId, reshareCeremonyId)` under its
 * libp2p identity key, returned in the document's `new_parties` order. Attack: a new party that
 * answers the RESHARE without one, with one of another length, with another party's, or with one
 * over another reshare is named and the change fails (the service records FAILED; nothing commits).
 */
import { randomBytes } from 'node:crypto';
import { CeremonyKind, type CeremonyResult, Outcome, reshareAttestationMessage } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/curves/utils.js';
import { describe, expect, it } from 'vitest';
import { CulpritError, pendingAttestations } from '../src/keys/outcome.js';
import type { PartyResult } from '../src/signing/sign-results.js';

const keyId = bytesToHex(randomBytes(16));
const ceremonyId = new Uint8Array(randomBytes(16));

async function party(id: string) {
  const key = await generateKeyPair('Ed25519');
  const peer = peerIdFromPrivateKey(key).toString();
  const sign = (m: Uint8Array) => ed25519.sign(m, key.raw.subarray(0, 32));
  return { id, peer, name: `server:${id}`, sign };
}

const result = (id: string, pendingAttestation?: Uint8Array): PartyResult => ({
  party: { kind: 'server', id },
  unreachable: false,
  result: {
    ceremonyId,
    kind: CeremonyKind.RESHARE,
    outcome: Outcome.OK,
    ...(pendingAttestation ? { pendingAttestation } : {}),
  } as CeremonyResult,
});

describe('reshare commit evidence: every new party attests its pending shares', () => {
  it('returns each new party’s attestation in new_parties order', async () => {
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map(party));
    const msg = reshareAttestationMessage(keyId, ceremonyId);
    const names = new Map([a!, b!, c!].map((p) => [p.peer, p.name]));
    // c is an old party leaving: it deals and attests nothing
    const results = [result('c'), result('b', b!.sign(msg)), result('a', a!.sign(msg))];
    const out = pendingAttestations([a!.peer, b!.peer], results, names, keyId, ceremonyId);
    expect(out).toEqual([bytesToHex(a!.sign(msg)), bytesToHex(b!.sign(msg))]);
  });

  it('attack: a missing, short, borrowed or other-reshare attestation names the new party and fails', async () => {
    const [a, b] = await Promise.all(['a', 'b'].map(party));
    const msg = reshareAttestationMessage(keyId, ceremonyId);
    const names = new Map([a!, b!].map((p) => [p.peer, p.name]));
    const other = reshareAttestationMessage(keyId, new Uint8Array(randomBytes(16)));
    for (const [what, bad] of [
      ['missing', undefined],
      ['empty', new Uint8Array(0)],
      ['63 bytes', a!.sign(msg).subarray(0, 63)],
      ["another party's", a!.sign(msg)],
      ['over another reshare', b!.sign(other)],
    ] as [string, Uint8Array | undefined][]) {
      let err: unknown;
      try {
        pendingAttestations(
          [a!.peer, b!.peer],
          [result('a', a!.sign(msg)), result('b', bad)],
          names,
          keyId,
          ceremonyId,
        );
      } catch (e) {
        err = e;
      }
      expect(err, what).toBeInstanceOf(CulpritError);
      expect((err as CulpritError).culprits, what).toEqual([b!.name]);
    }
  });
});
