/**
 * Issue #25 [ha]: coordinator replicas share one coordinator key, and Ed25519 is deterministic, so
 * two replicas signing the same body in the same millisecond used to produce byte-identical
 * SignedControl bytes (a signer refuses the second as a replay). `ControlRequest.nonce` (field 10,
 * 16 random bytes per signature) makes every signed request distinct; these tests pin the wire side:
 * - the same request signed twice gives two distinct SignedControls, each with a 16-byte nonce;
 * - a decoder without the field (a signer of an older release) reads a request with a nonce (unknown
 *   fields are skipped), and this decoder reads a request without one (an older coordinator);
 * - the replay key is the digest of the signed request bytes: a SignedControl re-encoded around the
 *   same request and signature (fields reordered, an unknown field added) has the same key.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import {
  CONTROL_VERSION,
  type ControlRequest,
  controlRequestDigest,
  messageType,
  openControlRequest,
  signControlRequest,
} from '../src/index.js';
import { schemaRoot } from '../src/schema.js';

const secret = ed25519.utils.randomSecretKey();
const pub = ed25519.getPublicKey(secret);
const ISSUED = 1_700_000_000_000;
const SignedControl = messageType('custodian.v1.SignedControl');

/** The `request` bytes inside a SignedControl. */
function requestBytes(signed: Uint8Array): Uint8Array {
  return (SignedControl.decode(signed) as unknown as { request: Uint8Array }).request;
}

/** `custodian.v1.ControlRequest` as a release before the nonce declared it (no field 10). */
function controlRequestWithoutNonce(): protobuf.Type {
  const root = protobuf.Root.fromJSON(schemaRoot.toJSON());
  const type = root.lookupType('custodian.v1.ControlRequest');
  const nonce = type.fields.nonce;
  if (nonce) type.remove(nonce);
  root.resolveAll();
  return type;
}

describe('control request nonce', () => {
  it('the same body signed twice in the same millisecond gives two distinct signed requests', () => {
    const req: ControlRequest = { version: CONTROL_VERSION, issuedUnixMs: ISSUED, status: {} };
    const a = signControlRequest(req, secret);
    const b = signControlRequest(req, secret);
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(false);
    const oa = openControlRequest(a, pub);
    const ob = openControlRequest(b, pub);
    expect(oa.ok && ob.ok).toBe(true);
    if (!oa.ok || !ob.ok) return;
    expect(oa.value.nonce?.length).toBe(16);
    expect(ob.value.nonce?.length).toBe(16);
    expect(Buffer.from(oa.value.nonce as Uint8Array).equals(Buffer.from(ob.value.nonce as Uint8Array))).toBe(false);
    expect(oa.value.issuedUnixMs).toBe(ISSUED);
    expect(oa.value.status).toBeDefined();
    expect(controlRequestDigest(a)).not.toBe(controlRequestDigest(b));
    // the caller's object is not changed (a retry signs a fresh nonce)
    expect(req.nonce).toBeUndefined();
  });

  it('a decoder without the nonce field (an older signer) reads a request that has one', () => {
    const signed = signControlRequest(
      { version: CONTROL_VERSION, issuedUnixMs: ISSUED, revokeApprover: { deviceId: 'd1' } },
      secret,
    );
    const old = controlRequestWithoutNonce();
    expect(old.fields.nonce).toBeUndefined();
    const decoded = old.toObject(old.decode(requestBytes(signed)), { longs: Number, defaults: true }) as Record<
      string,
      unknown
    >;
    expect(decoded.version).toBe(CONTROL_VERSION);
    expect(decoded.issuedUnixMs).toBe(ISSUED);
    expect((decoded.revokeApprover as { deviceId: string }).deviceId).toBe('d1');
    expect(decoded.nonce).toBeUndefined();
  });

  it('a request without a nonce (an older coordinator) opens, and encodes as before the field', () => {
    const old = controlRequestWithoutNonce();
    const body = { version: CONTROL_VERSION, issuedUnixMs: ISSUED, status: {} };
    const legacy = signControlRequest({ ...body, nonce: new Uint8Array(0) }, secret);
    // byte for byte what a coordinator without the field signs
    expect(Buffer.from(requestBytes(legacy)).equals(Buffer.from(old.encode(old.create(body)).finish()))).toBe(true);
    const opened = openControlRequest(legacy, pub);
    expect(opened.ok).toBe(true);
    if (!opened.ok) return;
    expect(opened.value.status).toBeDefined();
    expect(opened.value.nonce?.length ?? 0).toBe(0);
  });

  it('the replay key is the signed request: re-encoding the SignedControl around it does not change it', () => {
    const signed = signControlRequest({ version: CONTROL_VERSION, issuedUnixMs: ISSUED, status: {} }, secret);
    const { request, signature } = SignedControl.decode(signed) as unknown as {
      request: Uint8Array;
      signature: Uint8Array;
    };
    // signature (field 2) before request (field 1), and an unknown varint field 15 appended
    const w = protobuf.Writer.create();
    w.uint32((2 << 3) | 2).bytes(signature);
    w.uint32((1 << 3) | 2).bytes(request);
    w.uint32(15 << 3).uint32(1);
    const rewrapped = w.finish();
    expect(Buffer.from(rewrapped).equals(Buffer.from(signed))).toBe(false);
    expect(openControlRequest(rewrapped, pub).ok).toBe(true);
    expect(controlRequestDigest(rewrapped)).toBe(controlRequestDigest(signed));
    expect(controlRequestDigest(signed)).toMatch(/^[0-9a-f]{64}$/);
    expect(controlRequestDigest(Uint8Array.of(0xff, 0xff))).toBeUndefined();
  });
});
