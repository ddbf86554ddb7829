/**
 * CGGMP21 threshold ECDSA across 3 real signer processes (slow: Paillier aux-info with Πmod, Πprm,
 * Πfac proofs). SECURITY_112 (2048-bit moduli) with the committed TEST-ONLY safe primes imported
 * into each signer's prime pool. Master key with every algorithm, cold ECDSA signing (presign +
 * sign) verified by noble's ECDSA verifier, restart and sign again (pooled presignatures discarded), LevelDB scan.
 */
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { bytesToHex, deriveSecp256k1 } from '@custodian/crypto';
import { CeremonyKind, type CeremonyResult, KeyAlgorithm, Outcome, type StartCeremony } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '@custodian/signer-client/polyfills';
import { ControlClient, EcdsaShareCombiner, PresignaturePoolKeeper } from '@custodian/signer-client';
import { verifySignature } from '../src/index.js';
import { buildSigner, type NodeSpec, startNode, startSeededNodes, stopNode, tempDir } from './cluster.js';

let nodes: NodeSpec[] = [];
let client: ControlClient;
let dir = '';
let key: CeremonyResult;
let keeper: PresignaturePoolKeeper;
const enc = new TextEncoder();

async function ceremony(parties: NodeSpec[], start: Omit<StartCeremony, 'parties' | 'ceremonyId'>) {
  const req: StartCeremony = {
    ceremonyId: sha256(enc.encode(`c:${Math.random()}`)).subarray(0, 24),
    parties: parties.map((n) => ({ peerId: n.peerId })),
    ...start,
  };
  return Promise.all(parties.map((n) => client.startCeremony(n.peerId, req)));
}

/** A SIGN ceremony of one digest under the ECDSA key (pooled when `presignatureId` is given). */
function ecdsaSign(
  digest: Uint8Array,
  opts: { presignatureId?: string; derivationPath?: number[]; deadlineMs?: number; interimShares?: boolean } = {},
): Omit<StartCeremony, 'parties' | 'ceremonyId'> {
  return {
    kind: CeremonyKind.SIGN,
    threshold: 2,
    deadlineUnixMs: Date.now() + (opts.deadlineMs ?? 60_000),
    sign: {
      keyId: key.keyId as string,
      algorithm: KeyAlgorithm.SECP256K1_ECDSA,
      derivationPath: opts.derivationPath ?? [],
      digests: [digest],
      ...(opts.presignatureId ? { presignatureId: opts.presignatureId } : {}),
      ...(opts.interimShares ? { interimShares: true } : {}),
    },
  };
}

beforeAll(async () => {
  buildSigner();
  dir = tempDir('ecdsa');
  const coordKey = await generateKeyPair('Ed25519');
  const { peerIdFromPrivateKey } = await import('@libp2p/peer-id');
  // raw digests, no transfer evidence: enforcement explicitly off (test only)
  nodes = await startSeededNodes(dir, 3, peerIdFromPrivateKey(coordKey).toString(), { allowUnenforcedSigning: true });
  client = await ControlClient.create(
    coordKey,
    new Map(nodes.map((n) => [n.peerId, [`/ip4/127.0.0.1/tcp/${n.port}`]])),
  );
}, 180_000);

afterAll(async () => {
  await client?.stop();
  await Promise.all(nodes.map((n) => stopNode(n)));
  if (dir && !process.env.CUSTODIAN_KEEP_TEST_DIR) rmSync(dir, { recursive: true, force: true });
});

describe('CGGMP21 ECDSA across 3 signer processes', () => {
  it('master key with ECDSA, Ed25519 and Taproot keys (2-of-3)', async () => {
    const results = await ceremony(nodes, {
      kind: CeremonyKind.MASTER_KEY,
      threshold: 2,
      deadlineUnixMs: Date.now() + 300_000,
    });
    for (const r of results) expect(r.outcome, r.error).toBe(Outcome.OK);
    key = results[0] as CeremonyResult;
    expect(key.publicKeys?.map((k) => k.algorithm).sort()).toEqual([1, 2, 3]);
    for (const r of results)
      expect(bytesToHex(r.transcriptHash as Uint8Array)).toBe(bytesToHex(key.transcriptHash as Uint8Array));
  });

  it('cold ECDSA signing (presign + sign) under a derived key verifies with noble', async () => {
    const ek = key.publicKeys?.find((k) => k.algorithm === KeyAlgorithm.SECP256K1_ECDSA);
    const path = [0, 3];
    const digest = sha256(enc.encode('ethereum tx'));
    const [r] = await ceremony(
      [nodes[2] as NodeSpec, nodes[0] as NodeSpec],
      ecdsaSign(digest, { derivationPath: path, deadlineMs: 120_000 }),
    );
    expect(r?.outcome, r?.error).toBe(Outcome.OK);
    const child = deriveSecp256k1(ek?.publicKey as Uint8Array, ek?.chainCode as Uint8Array, path).publicKey;
    const sig = r?.signatures?.[0];
    expect(bytesToHex(sig?.publicKey as Uint8Array)).toBe(bytesToHex(child));
    expect(secp256k1.verify(sig?.signature as Uint8Array, digest, child, { prehash: false })).toBe(true);
    expect(verifySignature(KeyAlgorithm.SECP256K1_ECDSA, child, digest, sig?.signature as Uint8Array)).toBe(true);
  });

  it('presignature pool: presign ceremonies fill it, one-round signing consumes an id exactly once', async () => {
    const [n0, n1] = nodes as [NodeSpec, NodeSpec];
    keeper = new PresignaturePoolKeeper(client, key.keyId as string, [n1.peerId, n0.peerId], 2, 2);
    await keeper.refill();
    expect(keeper.size).toBe(2);
    const slot = `${key.keyId}/0-1`;
    expect((await client.status(n0.peerId)).presignaturePool?.[slot]).toBe(2);
    const ek = key.publicKeys?.find((k) => k.algorithm === KeyAlgorithm.SECP256K1_ECDSA);
    const id = keeper.take() as string;
    const digest = sha256(enc.encode('pooled'));
    const sign = (presignatureId: string, d: Uint8Array) =>
      ceremony([n0, n1], ecdsaSign(d, { presignatureId, derivationPath: [5] }));
    const [r] = await sign(id, digest);
    expect(r?.outcome, r?.error).toBe(Outcome.OK);
    const child = deriveSecp256k1(ek?.publicKey as Uint8Array, ek?.chainCode as Uint8Array, [5]).publicKey;
    expect(secp256k1.verify(r?.signatures?.[0]?.signature as Uint8Array, digest, child, { prehash: false })).toBe(true);
    const [again] = await sign(id, sha256(enc.encode('second use')));
    expect(again?.outcome).toBe(Outcome.REFUSED);
    expect(again?.error).toMatch(/unknown or already used/);
    // take() started a background refill: once done, every signer's pool holds exactly the ids the keeper knows
    await keeper.refill();
    expect(keeper.size).toBe(2);
    expect((await client.status(n0.peerId)).presignaturePool?.[slot]).toBe(2);
    expect((await client.status(n1.peerId)).presignaturePool?.[slot]).toBe(2);
  });

  it('interim shares only when asked: the coordinator combines them into the signature the signers return', async () => {
    const [n0, n1] = nodes as [NodeSpec, NodeSpec];
    await keeper.refill();
    const ek = key.publicKeys?.find((k) => k.algorithm === KeyAlgorithm.SECP256K1_ECDSA);
    const master = { publicKey: ek?.publicKey as Uint8Array, chainCode: ek?.chainCode as Uint8Array };
    const parties = [n0, n1];
    for (const interimShares of [true, false]) {
      const digest = sha256(enc.encode(`interim ${interimShares}`));
      const derivationPath = [1, 9];
      const start: StartCeremony = {
        ceremonyId: sha256(enc.encode(`interim:${interimShares}:${Math.random()}`)).subarray(0, 24),
        parties: parties.map((n) => ({ peerId: n.peerId })),
        ...ecdsaSign(digest, { presignatureId: keeper.take() as string, derivationPath, interimShares }),
      };
      const combiner = new EcdsaShareCombiner({ ...master, derivationPath, digests: [digest], signers: 2 });
      const frames: number[] = [];
      const results = await Promise.all(
        client.startCeremonies(
          parties.map((n) => n.peerId),
          start,
          undefined,
          (position, res) => {
            frames.push(position);
            if (res.shares) combiner.add(position, res.shares);
          },
        ),
      );
      for (const r of results) expect(r.outcome, r.error).toBe(Outcome.OK);
      const signed = results[0]?.signatures?.[0];
      if (!interimShares) {
        expect(frames).toEqual([]);
        continue;
      }
      // one interim frame per signer, before its result; the coordinator's signature is the signers'
      expect(frames.sort()).toEqual([0, 1]);
      const fast = await combiner.done;
      expect(bytesToHex(fast?.[0]?.compact as Uint8Array)).toBe(bytesToHex(signed?.signature as Uint8Array));
      expect(fast?.[0]?.recovery).toBe(signed?.recoveryId);
      expect(bytesToHex(combiner.publicKey)).toBe(bytesToHex(signed?.publicKey as Uint8Array));
    }
  });

  it('one presignature asked for by two ceremonies at once signs at most once; a ceremony id is used once', async () => {
    const [n0, n1] = nodes as [NodeSpec, NodeSpec];
    await keeper.refill();
    const id = keeper.take({ refill: false }) as string;
    expect(id).toBeDefined(); // a pooled signature, not two cold ones
    const start = (tag: string): StartCeremony => ({
      ceremonyId: sha256(enc.encode(`race:${tag}:${Math.random()}`)).subarray(0, 24),
      parties: [n0, n1].map((n) => ({ peerId: n.peerId })),
      ...ecdsaSign(sha256(enc.encode(tag)), { presignatureId: id, derivationPath: [5], deadlineMs: 4000 }),
    });
    const [a, b] = [start('a'), start('b')];
    const results = await Promise.all(
      [a, b].map((req) => Promise.all([n0, n1].map((n) => client.startCeremony(n.peerId, req)))),
    );
    // every signer released its share to one ceremony at most (the other is refused or never completes)
    for (const signer of [0, 1]) {
      const refused = results.filter((r) => r[signer]?.outcome === Outcome.REFUSED);
      expect(refused.length).toBeGreaterThanOrEqual(1);
      for (const r of refused) expect(r[signer]?.error).toMatch(/unknown or already used/);
    }
    expect(results.filter((r) => r.every((x) => x.outcome === Outcome.OK)).length).toBeLessThanOrEqual(1);
    // the same ceremony id again (a replay by a coordinator): refused by both, whatever its first outcome
    const again = await Promise.all(
      [n0, n1].map((n) => client.startCeremony(n.peerId, { ...a, deadlineUnixMs: Date.now() + 4000 })),
    );
    for (const r of again) {
      expect(r.outcome).toBe(Outcome.REFUSED);
      expect(r.error).toMatch(/ceremony id already used|unknown or already used/);
    }
  });

  it('restart and sign ECDSA again from persisted shares; no share or prime in the clear', async () => {
    await Promise.all(nodes.map((n) => stopNode(n)));
    const walk = (d: string): string[] =>
      readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]));
    for (const n of nodes) {
      for (const f of walk(join(n.dataDir, 'db'))) {
        const c = readFileSync(f);
        for (const needle of ['custodian.cggmp.key-share', 'lambda', 'safePrimes'])
          expect(c.includes(Buffer.from(needle)), `${needle} in ${f}`).toBe(false);
      }
    }
    await Promise.all(nodes.map((n) => startNode(n)));
    const ek = key.publicKeys?.find((k) => k.algorithm === KeyAlgorithm.SECP256K1_ECDSA);
    const digest = sha256(enc.encode('after restart'));
    const [r] = await ceremony(
      [nodes[1] as NodeSpec, nodes[2] as NodeSpec],
      ecdsaSign(digest, { deadlineMs: 120_000 }),
    );
    expect(r?.outcome, r?.error).toBe(Outcome.OK);
    expect(
      secp256k1.verify(r?.signatures?.[0]?.signature as Uint8Array, digest, ek?.publicKey as Uint8Array, {
        prehash: false,
      }),
    ).toBe(true);
    // a pooled presignature left before the restart is gone: every start discards them (a copy of
    // the store restored later must not bring one back to sign twice; operator guide §4)
    keeper.stop();
    const id = keeper.take() as string;
    const d2 = sha256(enc.encode('pooled after restart'));
    const stale = await ceremony([nodes[0] as NodeSpec, nodes[1] as NodeSpec], ecdsaSign(d2, { presignatureId: id }));
    for (const p of stale) {
      expect(p.outcome).toBe(Outcome.REFUSED);
      expect(p.error).toMatch(/unknown or already used/);
    }
  });
});
