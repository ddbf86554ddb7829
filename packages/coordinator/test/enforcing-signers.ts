/**
 * Test harness shared by the multi-process transfer tests: three real signer processes with
 * enforcement on (the Admin device key pinned), CGGMP21 at SECURITY_112 with the committed
 * TEST-ONLY safe primes (two per signer), a control client holding a fresh coordinator identity,
 * and the signer gateway over it (server parties only, `serverIds[i]` ↔ signer i).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ControlClient } from '@custodian/signer';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { freePort, initNode, type NodeSpec, ROOT, startNode, writeConfig } from '../../signer/test/cluster.js';
import { createSignerGateway, type SignerGateway } from '../src/signing/gateway.js';
import { evidenceSignFields } from '../src/transfers/evidence.js';

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
  const fixture = JSON.parse(
    readFileSync(join(ROOT, 'packages/paillier/test/fixtures/test-only-safe-primes.json'), 'utf8'),
  ) as { safePrimes1024: string[] };
  const coordKey = await generateKeyPair('Ed25519');
  const ports = [await freePort(), await freePort(), await freePort()];
  const nodes = ports.map((p, i) => initNode(dir, `signer${i}`, p));
  nodes.forEach((n, i) => {
    const seed = join(dir, `primes${i}.json`);
    writeFileSync(seed, JSON.stringify({ safePrimes: fixture.safePrimes1024.slice(2 * i, 2 * i + 2) }));
    writeConfig(
      n,
      nodes,
      { peerId: peerIdFromPrivateKey(coordKey).toString() },
      {
        ecdsa: { level: 'SECURITY_112', primePool: 0, primeSeedFile: seed },
        trustedAdminDevices: [{ deviceId: 'admin-phone', publicKey: adminDevicePublicKey }],
      },
    );
  });
  await Promise.all(nodes.map((n) => startNode(n)));
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
