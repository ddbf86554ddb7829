/**
 * Issue #28 on the coordinator's side: the signer gateway validates `GatewaySignRequest.digestKeys`
 * (one per digest, known algorithms, non-hardened paths, 32-byte secp256k1 digests), forwards them
 * as `SignRequest.digestKeys` (KeyAlgorithm values) in the StartCeremony, skips the ECDSA fast path
 * for keys other than the request's own, and checks each returned signature under its own digest's
 * algorithm (ECDSA: the recovery id recovers the key; Taproot: BIP340 under the returned key).
 * The real gateway and libp2p control client; the parties answer through its device port (the
 * control-protocol boundary: each answer is the CeremonyResult a signer sends).
 */
import { ControlClient } from '@custodian/signer-client';
import {
  type CeremonyResult,
  CONTROL_VERSION,
  KeyAlgorithm,
  Outcome,
  openControlRequest,
  type StartCeremony,
  signControlRequest,
  type TransferIntent,
} from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createSignerGateway,
  type GatewaySignRequest,
  hasOtherDigestKeys,
  type SignParty,
} from '../src/signing/gateway.js';

const A = [44, 1, 0, 0, 0];
const B = [44, 1, 0, 1, 4];

describe('signer gateway: per-digest keys', () => {
  let control: ControlClient;
  beforeAll(async () => {
    control = await ControlClient.create(await generateKeyPair('Ed25519'), new Map());
  }, 60_000);
  afterAll(async () => {
    await control?.host.node.stop();
  });

  const ecSk = secp256k1.utils.randomSecretKey();
  const ecPk = secp256k1.getPublicKey(ecSk, true);
  const trSk = schnorr.utils.randomSecretKey();
  const trPk = schnorr.getPublicKey(trSk);
  const d0 = crypto.getRandomValues(new Uint8Array(32));
  const d1 = crypto.getRandomValues(new Uint8Array(32));

  /** The gateway over device parties answering `answer(start)`; `seen` collects what was sent. */
  function gateway(answer: (start: StartCeremony) => CeremonyResult) {
    const seen: StartCeremony[] = [];
    const gw = createSignerGateway({
      control,
      directory: { peerIdOf: async (p: SignParty) => `peer-${p.id}` },
      devices: {
        async startCeremony(_id, start) {
          seen.push(start);
          return answer(start);
        },
        async abortCeremony() {},
      },
    });
    return { gw, seen };
  }

  const request = (over: Partial<GatewaySignRequest> = {}): GatewaySignRequest => ({
    keyId: 'k1',
    algorithm: 'SECP256K1_ECDSA',
    parties: ['a', 'b'].map((id) => ({ kind: 'device', id })),
    derivationPath: A,
    digests: [d0, d1],
    digestKeys: [
      { algorithm: 'SECP256K1_ECDSA', derivationPath: A },
      { algorithm: 'SECP256K1_TAPROOT', derivationPath: B },
    ],
    evidence: {
      intent: { transfer_id: crypto.randomUUID() } as unknown as TransferIntent,
      policy: null,
      approvals: [],
      chainContext: '{}',
    },
    deadline: new Date(Date.now() + 60_000),
    ...over,
  });

  const answers = (trSignature: Uint8Array) => (start: StartCeremony) => {
    const ec = secp256k1.sign(d0, ecSk, { prehash: false, format: 'recovered' });
    return {
      ceremonyId: start.ceremonyId,
      outcome: Outcome.OK,
      signatures: [
        { algorithm: KeyAlgorithm.SECP256K1_ECDSA, digest: d0, signature: ec.subarray(1), publicKey: ecPk },
        { algorithm: KeyAlgorithm.SECP256K1_TAPROOT, digest: d1, signature: trSignature, publicKey: trPk },
      ],
    };
  };

  it('forwards the digest keys and returns each signature checked under its own algorithm', async () => {
    const { gw, seen } = gateway(answers(schnorr.sign(d1, trSk)));
    const r = await gw.sign(request());
    expect(seen).toHaveLength(2);
    expect(seen[0]?.sign?.digestKeys).toEqual([
      { algorithm: KeyAlgorithm.SECP256K1_ECDSA, derivationPath: A },
      { algorithm: KeyAlgorithm.SECP256K1_TAPROOT, derivationPath: B },
    ]);
    expect(seen[0]?.sign?.algorithm).toBe(KeyAlgorithm.SECP256K1_ECDSA);
    // what a server signer receives: the signed control request, decoded by reflection (control.proto)
    const sk = ed25519.utils.randomSecretKey();
    const opened = openControlRequest(
      signControlRequest({ version: CONTROL_VERSION, issuedUnixMs: Date.now(), start: seen[0] as StartCeremony }, sk),
      ed25519.getPublicKey(sk),
    );
    if (!opened.ok) throw new Error(opened.rejection.reason);
    expect(opened.value.start?.sign?.digestKeys).toEqual(seen[0]?.sign?.digestKeys);
    expect(seen[0]?.sign?.derivationPath).toEqual(A);
    if (!r.ok) throw new Error(`expected ok, got ${JSON.stringify(r)}`);
    const ec = secp256k1.sign(d0, ecSk, { prehash: false, format: 'recovered' });
    expect(r.signatures[0]?.recovery).toBe(ec[0]);
    expect(r.signatures[1]?.recovery).toBeUndefined();
    expect(schnorr.verify(r.signatures[1]?.signature as Uint8Array, d1, r.signatures[1]?.publicKey as Uint8Array)).toBe(
      true,
    );
  });

  it('a Taproot signature that does not verify under its key fails the ceremony (ABORTED)', async () => {
    const { gw } = gateway(answers(schnorr.sign(d0, trSk)));
    expect(await gw.sign(request())).toMatchObject({ ok: false, reason: 'ABORTED', culprits: [] });
  });

  it('no digest keys: nothing forwarded, every digest signed with the request key as before', async () => {
    const { gw, seen } = gateway((start) => answers(schnorr.sign(d1, trSk))(start));
    const { digestKeys: _none, ...plain } = request();
    await gw.sign({ ...plain, digests: [d0] });
    expect(seen[0]?.sign?.digestKeys).toBeUndefined();
  });

  it('refuses malformed digest keys before any party is asked', async () => {
    const { gw, seen } = gateway(answers(schnorr.sign(d1, trSk)));
    const one = [{ algorithm: 'SECP256K1_ECDSA' as const, derivationPath: A }];
    await expect(gw.sign(request({ digestKeys: one }))).rejects.toThrow(RangeError);
    await expect(
      gw.sign(
        request({
          digestKeys: [
            { algorithm: 'SECP256K1_ECDSA', derivationPath: A },
            { algorithm: 'SECP256K1_TAPROOT', derivationPath: [44, 0x8000_0001] },
          ],
        }),
      ),
    ).rejects.toThrow(/non-hardened/);
    await expect(
      gw.sign(
        request({
          digestKeys: [
            { algorithm: 'SECP256K1_ECDSA', derivationPath: A },
            { algorithm: 'RSA' as 'ED25519', derivationPath: B },
          ],
        }),
      ),
    ).rejects.toThrow(/algorithm/);
    // an Ed25519 request may carry messages of any length, but a Taproot digest is 32 bytes
    await expect(
      gw.sign(
        request({
          algorithm: 'ED25519',
          digests: [d0, new Uint8Array(40)],
          digestKeys: [
            { algorithm: 'ED25519', derivationPath: [] },
            { algorithm: 'SECP256K1_TAPROOT', derivationPath: B },
          ],
        }),
      ),
    ).rejects.toThrow(/32 bytes/);
    expect(seen).toHaveLength(0);
  });

  it('the ECDSA fast path applies only when every digest key is the request key', () => {
    expect(hasOtherDigestKeys(request())).toBe(true);
    expect(
      hasOtherDigestKeys(
        request({
          digestKeys: [
            { algorithm: 'SECP256K1_ECDSA', derivationPath: A },
            { algorithm: 'SECP256K1_ECDSA', derivationPath: [44, 1, 0, 0, 1] },
          ],
        }),
      ),
    ).toBe(true);
    expect(
      hasOtherDigestKeys(
        request({
          digestKeys: [
            { algorithm: 'SECP256K1_ECDSA', derivationPath: A },
            { algorithm: 'SECP256K1_ECDSA', derivationPath: A },
          ],
        }),
      ),
    ).toBe(false);
    const { digestKeys: _none, ...plain } = request();
    expect(hasOtherDigestKeys(plain)).toBe(false);
  });
});
