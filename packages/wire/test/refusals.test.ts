/**
 * The refusal catalogue (src/refusals.ts) against control.proto `RefusalCode`, and the typed
 * `CeremonyResult.refusal` on the wire: the code travels as an enum, the text is never read for it,
 * and a value the receiver does not know decodes as UNKNOWN (never a crash).
 */
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import {
  decodeControlResponse,
  encodeControlResponse,
  isRefusalCode,
  isTransientRefusal,
  Outcome,
  protoRefusalCodes,
  REFUSALS,
  type RefusalCode,
  refusalOf,
  refusalValue,
  UNKNOWN_REFUSAL,
} from '../src/index.js';

const cid = new Uint8Array(24).fill(3);

describe('refusal catalogue', () => {
  it('lists exactly the codes of control.proto RefusalCode, each with a distinct non-zero value', () => {
    expect(Object.keys(REFUSALS).sort()).toEqual(protoRefusalCodes().sort());
    const values = Object.keys(REFUSALS).map((c) => refusalValue(c as RefusalCode));
    expect(values.every((v) => v > 0)).toBe(true);
    expect(new Set(values).size).toBe(values.length);
  });

  it('every code has a one-line meaning; SIGNING_IN_PROGRESS is transient, a definitive code is not', () => {
    for (const [code, info] of Object.entries(REFUSALS)) {
      expect(info.meaning.length, code).toBeGreaterThan(10);
      expect(info.meaning.includes('\n'), code).toBe(false);
    }
    expect(isTransientRefusal('SIGNING_IN_PROGRESS')).toBe(true);
    expect(isTransientRefusal('POLICY_DELETED')).toBe(false);
    expect(isTransientRefusal(UNKNOWN_REFUSAL)).toBe(false);
    expect(isRefusalCode('DIGEST_MISMATCH')).toBe(true);
    expect(isRefusalCode('UNKNOWN')).toBe(false);
    expect(isRefusalCode('toString')).toBe(false);
  });

  it('a refusal round-trips as its enum value; the text does not decide the code', () => {
    const bytes = encodeControlResponse({
      version: 1,
      result: {
        ceremonyId: cid,
        outcome: Outcome.REFUSED,
        refusal: refusalValue('POLICY_DELETED'),
        error: 'SIGNING_IN_PROGRESS: a text that names another code',
      },
    });
    const decoded = decodeControlResponse(bytes);
    expect(decoded.ok).toBe(true);
    if (!decoded.ok) return;
    expect(refusalOf(decoded.value.result?.refusal)).toBe('POLICY_DELETED');
    expect(decoded.value.result?.error).toBe('SIGNING_IN_PROGRESS: a text that names another code');
  });

  it('unset, UNSPECIFIED and unknown values read as UNKNOWN (proto3 enums are open: the value decodes as a number)', () => {
    expect(refusalOf(undefined)).toBe(UNKNOWN_REFUSAL);
    expect(refusalOf(0)).toBe(UNKNOWN_REFUSAL);
    expect(refusalOf('POLICY_DELETED')).toBe(UNKNOWN_REFUSAL);
    // a newer signer's value: CeremonyResult { outcome = 4, refusal (field 10) = 999 } inside ControlResponse.result (field 2)
    const inner = protobuf.Writer.create().uint32(10).bytes(cid).uint32(16).int32(4).uint32(80).int32(999).finish();
    const outer = protobuf.Writer.create().uint32(8).uint32(1).uint32(18).bytes(inner).finish();
    const decoded = decodeControlResponse(outer);
    expect(decoded.ok).toBe(true);
    if (!decoded.ok) return;
    expect(decoded.value.result?.outcome).toBe(Outcome.REFUSED);
    expect(refusalOf(decoded.value.result?.refusal)).toBe(UNKNOWN_REFUSAL);
  });
});
