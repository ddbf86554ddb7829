/**
 * Test harness shared by the multi-process transfer tests: three real signer processes with
 * enforcement on (the Admin device key pinned), CGGMP21 at SECURITY_112 with the committed
 * TEST-ONLY safe primes (two per signer), a control client holding a fresh coordinator identity,
 * and the signer gateway over it (server parties only, `serverIds[i]` ↔ signer i).
 */
import { hexToBytes } from '@custodian/crypto';
import { ControlClient } from '@custodian/signer-client';
import { CeremonyKind, type CeremonyResult, KeyAlgorithm, Outcome } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { expect } from 'vitest';
import { type NodeSpec, startSeededNodes } from '../../signer/test/cluster.js';
import type { Coordinator } from '../src/coordinator.js';
import { createSignerGateway, type SignerGateway } from '../src/signing/gateway.js';
import { evidenceSignFields } from '../src/transfers/evidence.js';

/**
 * The blockchains the test signers sign for (config `chains`): the directory's chain ids / networks
 * and default fee caps, and the directory's tokens the tests move (TRC-20 USDT on Nile, ERC-20 TST on anvil).
 */
export const TEST_CHAINS = {
  'ethereum-local': {
    family: 'ethereum',
    chainId: 31337,
    maxFee: '10000000000000000',
    // the TestToken erc20-e2e.slow.test.ts deploys (the directory's TST)
    assets: { TST: { contract: '0x5FbDB2315678afecb367f032d93F642f64180aa3', decimals: 6 } },
  },
  'litecoin-regtest': { family: 'bitcoin', network: 'litecoin-regtest', maxFee: '1000000' },
  'bitcoin-regtest': { family: 'bitcoin', network: 'bitcoin-regtest', maxFee: '100000' },
  'tron-nile': {
    family: 'tron',
    network: 'nile',
    maxFee: '50000000',
    assets: { USDT: { contract: 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf', decimals: 6 } },
  },
} as const;

export interface EnforcingSigners {
  readonly nodes: NodeSpec[];
  readonly control: ControlClient;
  readonly gateway: SignerGateway;
}

/** Start the three signers in `dir` and build the gateway. */
export async function startEnforcingSigners(
  dir: string,
  adminDevicePublicKey: string,
  serverIds: readonly string[],
): Promise<EnforcingSigners> {
  const coordKey = await generateKeyPair('Ed25519');
  const nodes = await startSeededNodes(dir, 3, peerIdFromPrivateKey(coordKey).toString(), {
    trustedAdminDevices: [{ deviceId: 'admin-phone', publicKey: adminDevicePublicKey }],
    chains: TEST_CHAINS,
  });
  const control = await ControlClient.create(
    coordKey,
    new Map(nodes.map((n) => [n.peerId, [`/ip4/127.0.0.1/tcp/${n.port}`]])),
  );
  const gateway = createSignerGateway({
    control,
    evidenceFields: evidenceSignFields,
    directory: {
      async peerIdOf(party) {
        const i = serverIds.indexOf(party.id);
        if (party.kind !== 'server' || i < 0) throw new Error(`unknown party ${party.id}`);
        return (nodes[i] as NodeSpec).peerId;
      },
    },
  });
  return { nodes, control, gateway };
}

/**
 * Run the ECDSA master key ceremony among the signers (threshold 2, the given approver devices) and
 * record its public key in the coordinator's store, as the admin API's ceremony would.
 * @returns the signers' key id (hex of the ceremony UUID), the coordinator's master key id, and the
 *   ECDSA public key (33 bytes) with its chain code
 */
export async function createEcdsaMasterKey(
  signers: EnforcingSigners,
  coord: Coordinator,
  serverIds: readonly string[],
  approvers: readonly { readonly id: string; readonly secretKey: Uint8Array }[],
  deadlineMs: number,
  /** Algorithms to create (default ECDSA only); with SECP256K1_TAPROOT the Taproot key is recorded too. */
  algorithms: readonly number[] = [KeyAlgorithm.SECP256K1_ECDSA],
): Promise<{ keyId: string; masterKeyId: string; ek: { publicKey: Uint8Array; chainCode: Uint8Array } }> {
  const { nodes, control } = signers;
  const ceremonyUuid = crypto.randomUUID();
  const keyId = ceremonyUuid.replaceAll('-', '');
  const results: CeremonyResult[] = await Promise.all(
    nodes.map((n) =>
      control.startCeremony(
        n.peerId,
        {
          ceremonyId: hexToBytes(keyId),
          kind: CeremonyKind.MASTER_KEY,
          parties: nodes.map((x) => ({ peerId: x.peerId })),
          threshold: 2,
          deadlineUnixMs: Date.now() + deadlineMs,
          algorithms: [...algorithms],
          approverDevices: approvers.map((a) => ({ deviceId: a.id, publicKey: p256.getPublicKey(a.secretKey, true) })),
        },
        deadlineMs + 20_000,
      ),
    ),
  );
  for (const r of results) expect(r.outcome, r.error).toBe(Outcome.OK);
  const ek = results[0]?.publicKeys?.find((k) => k.algorithm === KeyAlgorithm.SECP256K1_ECDSA);
  if (!ek) throw new Error('no ECDSA key');
  const tr = results[0]?.publicKeys?.find((k) => k.algorithm === KeyAlgorithm.SECP256K1_TAPROOT);
  const now = new Date();
  await coord.db.query(
    `INSERT INTO ceremonies (ceremony_id, kind, status, threshold, parties, progress, started_at, deadline, finished_at)
     VALUES ($1, 'dkg', 'SUCCEEDED', 2, '[]'::jsonb, '{}'::jsonb, $2, $2, $2)`,
    [ceremonyUuid, now],
  );
  const mk = await coord.signers.masterKeys.insertMasterKey({
    ceremonyId: ceremonyUuid,
    threshold: 2,
    parties: [
      ...serverIds.map((id, i) => ({ kind: 'server', id, peer: (nodes[i] as NodeSpec).peerId, address: null })),
      ...approvers.map((a, k) => ({ kind: 'device', id: a.id, peer: `d${k + 1}`, address: null })),
    ],
    secp256k1: { publicKey: ek.publicKey, chainCode: ek.chainCode },
    ed25519: { publicKey: ed25519.getPublicKey(ed25519.utils.randomSecretKey()), chainCode: new Uint8Array(32) },
    ...(tr
      ? {
          // the Taproot key as the signers report it: 33-byte compressed, with its Y parity
          taproot: { publicKey: tr.publicKey, chainCode: tr.chainCode },
        }
      : {}),
  });
  return { keyId, masterKeyId: mk.master_key_id, ek: { publicKey: ek.publicKey, chainCode: ek.chainCode } };
}
