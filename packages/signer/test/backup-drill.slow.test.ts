/**
 * Backup → restore on a new machine → drill (issue #22, "Backup and recovery"): three real signer
 * daemons on 127.0.0.1 (the test is the coordinator over `/custodian/control/2`) hold a 2-of-3
 * master key of every type (FROST Ed25519, FROST Taproot, CGGMP21 ECDSA with the committed
 * TEST-ONLY safe primes). Signer 2 holds pooled ECDSA presignatures (a real PRESIGN with signer 0);
 * it is stopped, backed up with `custodian signer backup create`, its data folder is wiped (the
 * machine is lost), `backup restore` rebuilds it in a new folder, and the restored daemon:
 * - reports its backup as current (KeyInfo `backupEpoch` = `epoch`, `backupUnixMs` = the backup's
 *   creation time);
 * - signs a DRILL with signer 0: one signature per key type on `testSignatureDigest('drill', keyId,
 *   ceremonyId)`, each verified here with noble under the master public keys (Taproot: the BIP86
 *   output key);
 * - holds no presignature: a SIGN naming a presignature it held before the loss is refused
 *   (PRESIGNATURE_UNAVAILABLE), nothing is signed, and its status shows no pool.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { bytesToHex } from '@custodian/crypto';
import {
  CeremonyKind,
  type CeremonyResult,
  KeyAlgorithm,
  Outcome,
  refusalOf,
  type StartCeremony,
  testSignatureDigest,
} from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '@custodian/signer-client/polyfills';
import { execFile } from 'node:child_process';
import { ControlClient } from '@custodian/signer-client';
import {
  buildSigner,
  MAIN,
  type NodeSpec,
  PASS,
  readLog,
  startNode,
  startSeededNodes,
  stopNode,
  tempDir,
  writeConfig,
} from './cluster.js';

let dir = '';
let nodes: NodeSpec[] = [];
let restored: NodeSpec | undefined;
let client: ControlClient;
let coordPeer = '';

const cid = () => crypto.getRandomValues(new Uint8Array(16));

function req(kind: number, parties: readonly NodeSpec[], extra: Partial<StartCeremony> = {}): StartCeremony {
  return {
    ceremonyId: cid(),
    kind,
    parties: parties.map((n) => ({ peerId: n.peerId })),
    threshold: 2,
    deadlineUnixMs: Date.now() + 300_000,
    ...extra,
  };
}

const run = (at: readonly NodeSpec[], r: StartCeremony): Promise<CeremonyResult[]> =>
  Promise.all(at.map((n) => client.startCeremony(n.peerId, r, 600_000)));

function allOk(res: readonly CeremonyResult[]): void {
  expect(
    res.map((r) => r.outcome),
    res.map((r) => r.error ?? '').join(' | '),
  ).toEqual(res.map(() => Outcome.OK));
}

/** `custodian signer …` (the built CLI) in its own process. */
function cli(args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, 'signer', ...args],
      { env: { ...process.env, CUSTODIAN_TEST_PASS: PASS }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

/**
 * BIP86 output key of a Taproot master key (BIP341: Q = P + int(hash_TapTweak(x(P)))·G, no script
 * tree), x-only 32 bytes: what a DRILL's Taproot signature verifies under (test-sign.ts).
 */
function bip86OutputKey(internal: Uint8Array): Uint8Array {
  const x = internal.subarray(-32);
  const t = BigInt(`0x${bytesToHex(schnorr.utils.taggedHash('TapTweak', x))}`);
  const P = schnorr.utils.lift_x(BigInt(`0x${bytesToHex(x)}`));
  return P.add(schnorr.Point.BASE.multiply(t)).toBytes(true).subarray(1);
}

beforeAll(async () => {
  buildSigner();
  dir = tempDir('backup-drill');
  const coordKey = await generateKeyPair('Ed25519');
  coordPeer = peerIdFromPrivateKey(coordKey).toString();
  // raw drills and signatures without transfer evidence: enforcement explicitly off (test only)
  nodes = await startSeededNodes(dir, 3, coordPeer, { allowUnenforcedSigning: true });
  client = await ControlClient.create(
    coordKey,
    new Map(nodes.map((n) => [n.peerId, [`/ip4/127.0.0.1/tcp/${n.port}`]])),
  );
}, 180_000);

afterAll(async () => {
  await client?.stop();
  await Promise.all([...nodes, ...(restored ? [restored] : [])].map((n) => stopNode(n)));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('backup → restore on a new machine → drill (real processes)', () => {
  it('the restored signer reports a current backup, drills with the others (noble-verified), and reuses no presignature', async () => {
    const [n0, n1, n2] = nodes as [NodeSpec, NodeSpec, NodeSpec];
    const made = await run(nodes, req(CeremonyKind.MASTER_KEY, nodes));
    allOk(made);
    const keyId = made[0]?.keyId as string;
    const master = made[0]?.publicKeys ?? [];
    expect(master.map((k) => k.algorithm).sort()).toEqual(
      [KeyAlgorithm.ED25519, KeyAlgorithm.SECP256K1_TAPROOT, KeyAlgorithm.SECP256K1_ECDSA].sort(),
    );

    // pooled presignatures of the signing set {n0, n2}, held in n2's store when it is lost
    const presigned = await run([n0, n2], req(CeremonyKind.PRESIGN, [n0, n2], { keyId, presignCount: 2 }));
    allOk(presigned);
    const ids = presigned[0]?.presignatureIds ?? [];
    expect(ids).toHaveLength(2);
    expect((await client.presignatureInventory(n2.peerId, keyId, [n0.peerId, n2.peerId])).map((p) => p.id)).toEqual(
      expect.arrayContaining(ids),
    );

    // backup of the stopped signer, then the machine is lost
    const offline = join(dir, 'offline');
    const backupFile = join(dir, 'signer2.backup');
    expect((await cli(['backup', 'keygen', '--out', offline])).code).toBe(0);
    await stopNode(n2);
    const created = await cli([
      'backup',
      'create',
      '-c',
      n2.config,
      '--recovery-key',
      join(offline, 'recovery.pub'),
      '--out',
      backupFile,
    ]);
    expect(created.code, created.out).toBe(0);
    const summary = JSON.parse(created.out) as { createdAt: string; keys: { keyId: string; epoch: number }[] };
    expect(summary.keys.map((k) => k.keyId)).toEqual([keyId]);
    rmSync(n2.dataDir, { recursive: true, force: true });

    // a new machine: a config, the backup and (briefly) the recovery key
    const machine = join(dir, 'new-machine');
    mkdirSync(machine);
    const r: NodeSpec = {
      ...n2,
      dir: machine,
      dataDir: join(machine, n2.name),
      config: join(machine, `${n2.name}.json`),
      logFile: join(machine, `${n2.name}.log`),
      logOffset: 0,
    };
    restored = r;
    // the lost machine's settings; no prime seed (a restored signer needs no new primes to sign)
    writeConfig(
      r,
      nodes,
      { peerId: coordPeer },
      { allowUnenforcedSigning: true, ecdsa: { level: 'SECURITY_112', primePool: 0 } },
    );
    const done = await cli([
      'backup',
      'restore',
      '-c',
      r.config,
      '--in',
      backupFile,
      '--recovery-key',
      join(offline, 'recovery.key'),
      '--peer-id',
      n2.peerId,
    ]);
    expect(done.code, done.out).toBe(0);
    await startNode(r);
    expect(readLog(r)).toContain('STORE_ROLLED_BACK');

    // its status: the key at the backed-up epoch, the backup current, no presignature
    const st = await client.status(r.peerId);
    expect(st.peerId).toBe(n2.peerId);
    const k = st.keys.find((x) => x.keyId === keyId);
    expect(k?.epoch).toBe(summary.keys[0]?.epoch);
    expect(k?.backupEpoch).toBe(k?.epoch);
    expect(k?.backupUnixMs).toBe(Date.parse(summary.createdAt));
    expect(Object.values(st.presignaturePool ?? {}).reduce((a, b) => a + b, 0)).toBe(0);
    expect(await client.presignatureInventory(r.peerId, keyId, [n0.peerId, n2.peerId])).toEqual([]);

    // the drill among {n0, restored}: one signature per key type, verified here with noble
    const drillReq = req(CeremonyKind.DRILL, [n0, r], { keyId });
    const drill = await run([n0, r], drillReq);
    allOk(drill);
    const digest = testSignatureDigest('drill', keyId, drillReq.ceremonyId);
    const sigs = drill[0]?.signatures ?? [];
    expect(sigs.map((s) => s.algorithm).sort()).toEqual(master.map((m) => m.algorithm).sort());
    for (const s of sigs) {
      expect(bytesToHex(s.digest)).toBe(bytesToHex(digest));
      const pk = master.find((m) => m.algorithm === s.algorithm)?.publicKey as Uint8Array;
      if (s.algorithm === KeyAlgorithm.ED25519) expect(ed25519.verify(s.signature, digest, pk)).toBe(true);
      else if (s.algorithm === KeyAlgorithm.SECP256K1_TAPROOT)
        expect(schnorr.verify(s.signature, digest, bip86OutputKey(pk))).toBe(true);
      else expect(secp256k1.verify(s.signature, digest, pk, { prehash: false, lowS: true })).toBe(true);
    }
    // n1 (not in the drill) is unaffected: the key still signs with the third member too
    allOk(await run([n1, r], req(CeremonyKind.DRILL, [n1, r], { keyId })));

    // a presignature the lost signer held: the restored one cannot use it
    const msg = new Uint8Array(32).fill(7);
    const signReq = req(CeremonyKind.SIGN, [n0, r], {
      deadlineUnixMs: Date.now() + 30_000,
      sign: {
        keyId,
        algorithm: KeyAlgorithm.SECP256K1_ECDSA,
        derivationPath: [],
        digests: [msg],
        presignatureId: ids[0] as string,
      },
    });
    const [atRestored] = await Promise.all([
      client.startCeremony(r.peerId, signReq, 60_000),
      // n0 still holds it: its side ends without the restored party (failure or deadline)
      client.startCeremony(n0.peerId, signReq, 60_000).catch(() => undefined),
    ]);
    expect(atRestored?.outcome).not.toBe(Outcome.OK);
    expect(refusalOf(atRestored?.refusal)).toBe('PRESIGNATURE_UNAVAILABLE');
    expect(atRestored?.signatures ?? []).toEqual([]);
  }, 600_000);
});
