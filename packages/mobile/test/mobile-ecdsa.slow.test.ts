/**
 * Master key 3-of-4 with every algorithm — CGGMP21 ECDSA (keygen + aux-info, SECURITY_112 with the
 * committed TEST-ONLY safe primes), FROST Ed25519 and Taproot — among 2 server signer processes and
 * 2 mobile simulator processes through the coordinator relay; then ECDSA and Ed25519 signatures
 * with a device in the signing set, verified independently (noble) against keys derived here.
 */
import { randomUUID } from 'node:crypto';
import { type SignerGateway, signerKeyId } from '@custodian/coordinator';
import { deriveEd25519, deriveSecp256k1 } from '@custodian/crypto';
import { KeyAlgorithm, type TransferIntent } from '@custodian/wire';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAll, type Instance, startInstance } from './harness.js';

let inst: Instance;
const uuid = randomUUID();

function intent(id: string, alg: TransferIntent['key_algorithm']): TransferIntent {
  return {
    transfer_id: id,
    profile_id: 'p',
    wallet_id: 'w',
    blockchain: 'test',
    asset_id: 'a',
    asset_symbol: 'TST',
    asset_decimals: 0,
    asset_contract: null,
    source_address: 's',
    destination_address: 'd',
    amount: '1',
    derivation_path: [0, 3],
    key_algorithm: alg,
    key_id: signerKeyId(uuid),
    created_at: new Date().toISOString(),
    max_fee: '10000000000000000',
  };
}

describe('ECDSA master key and signatures with mobile signers (slow)', () => {
  beforeAll(async () => {
    buildAll();
    inst = await startInstance({
      label: 'mobile-ecdsa',
      servers: 2,
      devices: 2,
      ecdsa: true,
      algorithms: [KeyAlgorithm.ED25519, KeyAlgorithm.SECP256K1_TAPROOT, KeyAlgorithm.SECP256K1_ECDSA],
    });
  }, 120_000);

  afterAll(async () => {
    await inst?.stop();
  }, 30_000);

  it('3-of-4 master key (ECDSA + FROST), then ECDSA and Ed25519 signatures with one device', async () => {
    const client = inst.coord.signing?.ceremonyClient;
    const gateway = inst.coord.signing?.gateway as SignerGateway;
    if (!client) throw new Error('no ceremony client');
    const t0 = Date.now();
    const out = await client.runDkg({
      ceremonyId: uuid,
      threshold: 3,
      parties: [
        ...inst.signers.map((s) => ({
          kind: 'server' as const,
          id: s.signerId,
          peer: s.peerId,
          address: `/ip4/127.0.0.1/tcp/${s.port}`,
        })),
        ...inst.mobiles.map((m) => ({ kind: 'device' as const, id: m.deviceId, peer: m.fingerprint, address: null })),
      ],
      deadline: new Date(Date.now() + 5 * 60_000),
      signal: new AbortController().signal,
      onProgress: () => undefined,
    });
    process.stdout.write(`master key ceremony 3-of-4 with ECDSA: ${Date.now() - t0} ms\n`);
    expect(out.secp256k1.publicKey).toHaveLength(33);

    const path = [0, 3];
    const digest = keccak_256(new TextEncoder().encode('custodian ecdsa via a phone'));
    const r = await gateway.sign({
      keyId: signerKeyId(uuid),
      algorithm: 'SECP256K1_ECDSA',
      parties: [
        { kind: 'server', id: inst.signers[0]?.signerId as string },
        { kind: 'server', id: inst.signers[1]?.signerId as string },
        { kind: 'device', id: inst.mobiles[1]?.deviceId as string },
      ],
      derivationPath: path,
      digests: [digest],
      evidence: { intent: intent('e1', 'SECP256K1_ECDSA'), policy: null, approvals: [], chainContext: '{}' },
      deadline: new Date(Date.now() + 120_000),
    });
    if (!r.ok) throw new Error(`sign failed: ${JSON.stringify(r)}`);
    const child = deriveSecp256k1(out.secp256k1.publicKey, out.secp256k1.chainCode, path);
    const s = r.signatures[0];
    expect(s?.publicKey).toEqual(child.publicKey);
    expect(secp256k1.verify(s?.signature as Uint8Array, digest, child.publicKey, { prehash: false })).toBe(true);
    const recovered = secp256k1.Signature.fromBytes(s?.signature as Uint8Array, 'compact')
      .addRecoveryBit(s?.recovery as number)
      .recoverPublicKey(digest)
      .toBytes(true);
    expect(recovered).toEqual(child.publicKey);

    const msg = new TextEncoder().encode('ed25519 via a phone');
    const e = await gateway.sign({
      keyId: signerKeyId(uuid),
      algorithm: 'ED25519',
      parties: [
        { kind: 'server', id: inst.signers[0]?.signerId as string },
        { kind: 'device', id: inst.mobiles[0]?.deviceId as string },
        { kind: 'device', id: inst.mobiles[1]?.deviceId as string },
      ],
      derivationPath: path,
      digests: [msg],
      evidence: { intent: intent('e2', 'ED25519'), policy: null, approvals: [], chainContext: '{}' },
      deadline: new Date(Date.now() + 60_000),
    });
    if (!e.ok) throw new Error(`sign failed: ${JSON.stringify(e)}`);
    const edChild = deriveEd25519(out.ed25519.publicKey, out.ed25519.chainCode, path);
    expect(ed25519.verify(e.signatures[0]?.signature as Uint8Array, msg, edChild.publicKey)).toBe(true);
  }, 400_000);
});
