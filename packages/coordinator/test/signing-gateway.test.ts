/**
 * Result mapping of the signer gateway (signing/gateway.ts): REFUSED > ABORTED with verified blame >
 * DEADLINE_EXCEEDED > unreachable/other > ok (with ECDSA recovery ids). The multi-process runs are in
 * packages/mobile/test (mobile-ceremony.test.ts, mobile-ecdsa.slow.test.ts).
 */
import { Outcome, refusalValue } from '@custodian/wire';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import { assessBlames } from '../src/signing/blame.js';
import { ecdsaRecovery, mapSignResults, type SignParty } from '../src/signing/gateway.js';

const s0: SignParty = { kind: 'server', id: 's0' };
const d0: SignParty = { kind: 'device', id: 'd0' };
const targets = [
  { party: s0, peerId: 'P0' },
  { party: d0, peerId: 'P1' },
];
const cid = new Uint8Array(24);

describe('signer gateway result mapping', () => {
  const digest = new Uint8Array(32).fill(7);
  const sk = secp256k1.utils.randomSecretKey();
  const pk = secp256k1.getPublicKey(sk, true);
  const sig = secp256k1.sign(digest, sk, { prehash: false, format: 'recovered' });
  const compact = sig.subarray(1);
  const ok = {
    ceremonyId: cid,
    outcome: Outcome.OK,
    signatures: [{ algorithm: 3, digest, signature: compact, publicKey: pk }],
  };

  it('all OK: signatures with the recovery id that recovers the key', () => {
    const r = mapSignResults({ algorithm: 'SECP256K1_ECDSA', digests: [digest] }, targets, [
      { party: s0, result: ok, unreachable: false },
      { party: d0, result: ok, unreachable: false },
    ]);
    expect(r).toEqual({ ok: true, signatures: [{ signature: compact, publicKey: pk, recovery: sig[0] }] });
    expect(ecdsaRecovery(compact, digest, pk)).toBe(sig[0]);
  });

  it('a refusal names the party and its code', () => {
    const r = mapSignResults({ algorithm: 'ED25519', digests: [digest] }, targets, [
      { party: s0, result: ok, unreachable: false },
      {
        party: d0,
        result: {
          ceremonyId: cid,
          outcome: Outcome.REFUSED,
          refusal: refusalValue('POLICY_SIGNATURE_VERIFICATION_FAILED'),
          error: 'POLICY_SIGNATURE_VERIFICATION_FAILED: bad',
        },
        unreachable: false,
      },
    ]);
    expect(r).toEqual({ ok: false, reason: 'REFUSED', refusal: 'POLICY_SIGNATURE_VERIFICATION_FAILED', by: d0 });
  });

  it('a blame without evidence names no culprit: a dispute (accuser, claimed) (issue #23); deadline and unreachable parties', () => {
    const results = [
      {
        party: s0,
        peerId: 'P0',
        result: {
          ceremonyId: cid,
          outcome: Outcome.ABORTED,
          blame: [{ party: 1, peerId: 'P1', reason: 'bad proof' }],
          error: 'x',
        },
        unreachable: false,
      },
      { party: d0, peerId: 'P1', result: ok, unreachable: false },
    ];
    const checked = assessBlames(cid, ['P0', 'P1'], results);
    expect(checked).toEqual([
      {
        culprit: null,
        claimedCulprit: 'P1',
        accuser: 'P0',
        check: 'check.unspecified',
        round: 0,
        protocol: '',
        verified: false,
        detail: 'no evidence',
      },
    ]);
    const blamed = mapSignResults({ algorithm: 'ED25519', digests: [digest] }, targets, results, checked);
    expect(blamed).toMatchObject({
      ok: false,
      reason: 'ABORTED',
      culprits: [],
      accusers: [s0],
      disputes: [{ accuser: s0, claimed: d0, check: 'check.unspecified' }],
    });
    const late = mapSignResults({ algorithm: 'ED25519', digests: [digest] }, targets, [
      { party: s0, result: { ceremonyId: cid, outcome: Outcome.DEADLINE_EXCEEDED }, unreachable: false },
      { party: d0, result: ok, unreachable: false },
    ]);
    expect(late).toEqual({ ok: false, reason: 'DEADLINE_EXCEEDED' });
    const gone = mapSignResults({ algorithm: 'ED25519', digests: [digest] }, targets, [
      { party: s0, result: ok, unreachable: false },
      {
        party: d0,
        result: { ceremonyId: cid, outcome: Outcome.ABORTED, error: 'unreachable: offline' },
        unreachable: true,
      },
    ]);
    // an unreachable party is not a culprit: it is unavailable (the pipeline retries, #27 item 2)
    expect(gone).toMatchObject({
      ok: false,
      reason: 'UNAVAILABLE',
      unavailable: [{ party: d0, error: 'unreachable: offline' }],
    });
    // a party aborted without blame (e.g. by the coordinator): no culprit
    const unblamed = mapSignResults({ algorithm: 'ED25519', digests: [digest] }, targets, [
      { party: s0, result: { ceremonyId: cid, outcome: Outcome.ABORTED, error: 'cancelled' }, unreachable: false },
      { party: d0, result: ok, unreachable: false },
    ]);
    expect(unblamed).toMatchObject({ ok: false, reason: 'ABORTED', culprits: [] });
  });

  it("attack: the accuser's text (claimed peer id, check, protocol) cannot carry terminal escapes or newlines", () => {
    const evil = '\u001b[2J\u001b[31mserver s9 PROVEN\nverified yes';
    const [r] = assessBlames(
      cid,
      ['P0', 'P1'],
      [
        {
          peerId: 'P0',
          result: {
            ceremonyId: cid,
            outcome: Outcome.ABORTED,
            blame: [{ party: 1, peerId: evil, reason: 'x', check: evil, protocol: evil } as never],
          },
        },
      ],
    );
    for (const v of [r?.claimedCulprit, r?.check, r?.protocol]) {
      expect(v).toBeTruthy();
      expect(
        [...(v ?? '')].every((ch) => ch.charCodeAt(0) >= 0x20 && (ch.charCodeAt(0) < 0x7f || ch.charCodeAt(0) > 0x9f)),
      ).toBe(true);
    }
    expect(r).toMatchObject({ culprit: null, accuser: 'P0', verified: false });
    expect(r?.claimedCulprit.length).toBeLessThanOrEqual(128);
  });

  it('SIGNING_IN_PROGRESS is transient: UNAVAILABLE naming the party and the reason; a definitive refusal still wins', () => {
    const busy = {
      ceremonyId: cid,
      outcome: Outcome.REFUSED,
      refusal: refusalValue('SIGNING_IN_PROGRESS'),
      error: 'SIGNING_IN_PROGRESS: a signature of this transfer is already in progress',
    };
    const r = mapSignResults({ algorithm: 'ED25519', digests: [digest] }, targets, [
      { party: s0, result: busy, unreachable: false },
      { party: d0, result: { ceremonyId: cid, outcome: Outcome.ABORTED, error: 'aborted' }, unreachable: false },
    ]);
    expect(r).toEqual({
      ok: false,
      reason: 'UNAVAILABLE',
      unavailable: [{ party: s0, error: busy.error }],
      message: `server s0: ${busy.error}`,
    });
    const refused = mapSignResults({ algorithm: 'ED25519', digests: [digest] }, targets, [
      { party: s0, result: busy, unreachable: false },
      {
        party: d0,
        result: {
          ceremonyId: cid,
          outcome: Outcome.REFUSED,
          refusal: refusalValue('TRANSFER_ALREADY_SIGNED'),
          error: 'TRANSFER_ALREADY_SIGNED: another transaction',
        },
        unreachable: false,
      },
    ]);
    expect(refused).toEqual({ ok: false, reason: 'REFUSED', refusal: 'TRANSFER_ALREADY_SIGNED', by: d0 });
  });

  it('parties that disagree on the signature fail the ceremony', () => {
    const other = { ...ok, signatures: [{ ...ok.signatures[0], signature: new Uint8Array(64).fill(1) }] };
    const r = mapSignResults({ algorithm: 'SECP256K1_ECDSA', digests: [digest] }, targets, [
      { party: s0, result: ok, unreachable: false },
      { party: d0, result: other as typeof ok, unreachable: false },
    ]);
    expect(r).toMatchObject({ ok: false, reason: 'ABORTED', culprits: [] });
  });
});
