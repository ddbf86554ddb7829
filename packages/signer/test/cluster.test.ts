/**
 * Real processes, real sockets: three signer daemons on 127.0.0.1 and the test as the coordinator
 * (control protocol) — master key 2-of-3, Ed25519 and Taproot signatures checked by independent
 * verifiers (noble ed25519 / BIP340 schnorr), restart and sign from persisted shares, LevelDB scan
 * for plaintext shares, kill -9 mid-ceremony, and a hostile party injecting bad envelopes.
 */
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bytesToHex, deriveEd25519, deriveSecp256k1 } from '@custodian/crypto';
import { dkgProtocol, type KeyShare, taprootTweak } from '@custodian/frost';
import {
  CeremonyKind,
  type CeremonyResult,
  decodeControlResponse,
  KeyAlgorithm,
  messageType,
  Outcome,
  refusalOf,
  type StartCeremony,
  sealEnvelope,
  signControlRequest,
} from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '@custodian/signer-client/polyfills';
import { CeremonyRunner, sessionId } from '@custodian/ceremony';
import { CONTROL_PROTOCOL, ControlClient, createHost, type Host } from '@custodian/signer-client';
import {
  buildSigner,
  freePort,
  initNode,
  type NodeSpec,
  readLog,
  startNode,
  stopNode,
  tempDir,
  waitFor,
  writeConfig,
} from './cluster.js';

let nodes: NodeSpec[] = [];
let clusterDir = '';
let client: ControlClient;
let host: Host;
let hostileRunner: CeremonyRunner | undefined;
let coordinatorSecret: Uint8Array;
let key: CeremonyResult;
const enc = new TextEncoder();

const cid = (label: string) => sha256(enc.encode(`${label}:${Math.random()}`)).subarray(0, 24);

async function ceremony(
  parties: NodeSpec[],
  start: Omit<StartCeremony, 'parties' | 'ceremonyId'> & { ceremonyId?: Uint8Array },
  extra: string[] = [],
) {
  const req: StartCeremony = {
    ceremonyId: start.ceremonyId ?? cid('c'),
    parties: [...parties.map((n) => ({ peerId: n.peerId })), ...extra.map((peerId) => ({ peerId }))],
    ...start,
  };
  return Promise.all(parties.map((n) => client.startCeremony(n.peerId, req)));
}

const deadline = (ms: number) => Date.now() + ms;

function pk(r: CeremonyResult, alg: number) {
  const k = r.publicKeys?.find((x) => x.algorithm === alg);
  if (!k) throw new Error(`no key ${alg}`);
  return k;
}

beforeAll(async () => {
  buildSigner();
  const dir = tempDir('cluster');
  clusterDir = dir;
  const coordKey = await generateKeyPair('Ed25519');
  coordinatorSecret = coordKey.raw.subarray(0, 32);
  const coordPeer = peerIdFromPrivateKey(coordKey).toString();
  const coordPort = await freePort();
  const ports = [await freePort(), await freePort(), await freePort()];
  nodes = ports.map((p, i) => initNode(dir, `signer${i}`, p));
  // raw digests, no transfer evidence: enforcement explicitly off (test only)
  for (const n of nodes)
    writeConfig(n, nodes, { peerId: coordPeer, port: coordPort }, { allowUnenforcedSigning: true });
  await Promise.all(nodes.map((n) => startNode(n)));
  // The coordinator's host also listens for MPC traffic: it plays the hostile party below.
  host = await createHost({
    privateKey: coordKey,
    listen: [`/ip4/127.0.0.1/tcp/${coordPort}`],
    peers: new Map(nodes.map((n) => [n.peerId, [`/ip4/127.0.0.1/tcp/${n.port}`]])),
    maxFrameBytes: 16 * 1024 * 1024,
    log: pino({ level: 'silent' }),
    onMpc: (from, bytes) => hostileRunner?.deliver(from, bytes),
  });
  client = ControlClient.fromHost(host, coordinatorSecret);
}, 120_000);

afterAll(async () => {
  await host?.stop();
  await Promise.all(nodes.map((n) => stopNode(n)));
  if (clusterDir) rmSync(clusterDir, { recursive: true, force: true });
});

describe('signer cluster (3 processes, libp2p on 127.0.0.1)', () => {
  it('master key ceremony 2-of-3: every signer returns the same keys and transcript', async () => {
    const results = await ceremony(nodes, {
      kind: CeremonyKind.MASTER_KEY,
      threshold: 2,
      deadlineUnixMs: deadline(300_000),
    });
    for (const r of results) expect(r.outcome, r.error).toBe(Outcome.OK);
    key = results[0] as CeremonyResult;
    for (const r of results.slice(1)) {
      expect(bytesToHex(r.transcriptHash as Uint8Array)).toBe(bytesToHex(key.transcriptHash as Uint8Array));
      expect(r.publicKeys?.map((k) => bytesToHex(k.publicKey))).toEqual(
        key.publicKeys?.map((k) => bytesToHex(k.publicKey)),
      );
    }
    expect(pk(key, KeyAlgorithm.ED25519).publicKey.length).toBe(32);
    expect(pk(key, KeyAlgorithm.SECP256K1_TAPROOT).publicKey.length).toBe(33);
    const st = await client.status(nodes[1]?.peerId as string);
    expect(st.keys.map((k) => k.keyId)).toContain(key.keyId);
  });

  it('Ed25519 (derived) and Taproot signatures verify with independent verifiers', async () => {
    const path = [0, 7];
    const msg = sha256(enc.encode('transfer #1'));
    const [e0, e1] = await ceremony([nodes[0] as NodeSpec, nodes[1] as NodeSpec], {
      kind: CeremonyKind.SIGN,
      threshold: 2,
      deadlineUnixMs: deadline(30_000),
      sign: { keyId: key.keyId as string, algorithm: KeyAlgorithm.ED25519, derivationPath: path, digests: [msg] },
    });
    expect(e0?.outcome, e0?.error).toBe(Outcome.OK);
    const sig = e0?.signatures?.[0];
    expect(bytesToHex(sig?.signature as Uint8Array)).toBe(bytesToHex(e1?.signatures?.[0]?.signature as Uint8Array));
    const ek = pk(key, KeyAlgorithm.ED25519);
    const child = deriveEd25519(ek.publicKey, ek.chainCode, path);
    expect(bytesToHex(sig?.publicKey as Uint8Array)).toBe(bytesToHex(child.publicKey));
    expect(ed25519.verify(sig?.signature as Uint8Array, msg, child.publicKey)).toBe(true);

    const digest = sha256(enc.encode('bitcoin sighash'));
    const [t1] = await ceremony([nodes[1] as NodeSpec, nodes[2] as NodeSpec], {
      kind: CeremonyKind.SIGN,
      threshold: 2,
      deadlineUnixMs: deadline(30_000),
      sign: {
        keyId: key.keyId as string,
        algorithm: KeyAlgorithm.SECP256K1_TAPROOT,
        derivationPath: [1],
        digests: [digest],
      },
    });
    expect(t1?.outcome, t1?.error).toBe(Outcome.OK);
    const tk = pk(key, KeyAlgorithm.SECP256K1_TAPROOT);
    const internal = deriveSecp256k1(tk.publicKey, tk.chainCode, [1]).publicKey.slice(1);
    const output = taprootTweak(internal, new Uint8Array(0)).outputKey;
    expect(bytesToHex(t1?.signatures?.[0]?.publicKey as Uint8Array)).toBe(bytesToHex(output));
    expect(schnorr.verify(t1?.signatures?.[0]?.signature as Uint8Array, digest, output)).toBe(true);
  });

  it('LevelDB files contain no share (or any stored record) in the clear', async () => {
    const ek = bytesToHex(pk(key, KeyAlgorithm.ED25519).publicKey);
    const needles = ['custodian.frost.keyshare', 'signingShare', 'verifyingShares', ek, key.keyId as string];
    const walk = (d: string): string[] =>
      readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]));
    let scanned = 0;
    for (const n of nodes) {
      for (const f of walk(join(n.dataDir, 'db'))) {
        const content = readFileSync(f);
        scanned += content.length;
        for (const needle of needles.slice(0, 4))
          expect(content.includes(Buffer.from(needle)), `${needle} in ${f}`).toBe(false);
      }
    }
    expect(scanned).toBeGreaterThan(0);
  });

  it('restart all nodes and sign again from the persisted shares', async () => {
    await Promise.all(nodes.map((n) => stopNode(n)));
    // SIGTERM (#29): one line naming the signal, a clean stop, exit code 0
    for (const n of nodes) {
      expect(n.proc?.exitCode).toBe(0);
      expect(readLog(n)).toMatch(/"signal":"SIGTERM".*"msg":"signer stopping \(SIGTERM\)"/);
      expect(readLog(n)).toMatch(/"msg":"signer stopped"/);
    }
    await Promise.all(nodes.map((n) => startNode(n)));
    const msg = enc.encode('after restart');
    const [r] = await ceremony([nodes[0] as NodeSpec, nodes[2] as NodeSpec], {
      kind: CeremonyKind.SIGN,
      threshold: 2,
      deadlineUnixMs: deadline(30_000),
      sign: { keyId: key.keyId as string, algorithm: KeyAlgorithm.ED25519, derivationPath: [], digests: [msg] },
    });
    expect(r?.outcome, r?.error).toBe(Outcome.OK);
    expect(
      ed25519.verify(r?.signatures?.[0]?.signature as Uint8Array, msg, pk(key, KeyAlgorithm.ED25519).publicKey),
    ).toBe(true);
  });

  it('enforcement is on by default: a signer with neither trustedAdminDevices nor the opt-out refuses a raw SIGN', async () => {
    const n2 = nodes[2] as NodeSpec;
    const optedOut = readFileSync(n2.config, 'utf8');
    const cfg = JSON.parse(optedOut) as Record<string, unknown>;
    delete cfg.allowUnenforcedSigning;
    await stopNode(n2);
    writeFileSync(n2.config, JSON.stringify(cfg));
    try {
      const before = readLog(n2).length;
      await startNode(n2);
      expect(readLog(n2).slice(before)).toMatch(/every sign request will be refused \(ENFORCEMENT_NOT_CONFIGURED\)/);
      const msg = sha256(enc.encode('raw digest, no evidence'));
      const r = await client.startCeremony(n2.peerId, {
        ceremonyId: cid('unenforced'),
        kind: CeremonyKind.SIGN,
        parties: [{ peerId: (nodes[0] as NodeSpec).peerId }, { peerId: n2.peerId }],
        threshold: 2,
        deadlineUnixMs: deadline(10_000),
        sign: { keyId: key.keyId as string, algorithm: KeyAlgorithm.ED25519, derivationPath: [], digests: [msg] },
      });
      expect(r.outcome).toBe(Outcome.REFUSED);
      expect(r.error).toMatch(/^ENFORCEMENT_NOT_CONFIGURED: /);
      expect(refusalOf(r.refusal)).toBe('ENFORCEMENT_NOT_CONFIGURED');
      expect(r.signatures ?? []).toEqual([]);
    } finally {
      await stopNode(n2);
      writeFileSync(n2.config, optedOut);
      await startNode(n2);
    }
    // with the opt-out the daemon says so loudly at start
    expect(readLog(n2)).toMatch(/allowUnenforcedSigning is set/);
  });

  it('kill -9 of a signer mid-ceremony: the others abort at the deadline and keep nothing; restart intact', async () => {
    const [n0, n1, n2] = nodes as [NodeSpec, NodeSpec, NodeSpec];
    const start: StartCeremony = {
      ceremonyId: cid('killed'),
      kind: CeremonyKind.MASTER_KEY,
      parties: nodes.map((n) => ({ peerId: n.peerId })),
      threshold: 2,
      deadlineUnixMs: deadline(4_000),
    };
    const startedBefore = readLog(n2).split('"ceremony started"').length;
    const victim = client.startCeremony(n2.peerId, start).catch((e: unknown) => e);
    // the victim has taken the request and begun the ceremony (its sessions start right after)
    await waitFor(() => readLog(n2).split('"ceremony started"').length > startedBefore, 10_000, 'victim ceremony');
    await new Promise((r) => setTimeout(r, 100));
    await stopNode(n2, 'SIGKILL');
    const [r0, r1] = await Promise.all([
      client.startCeremony(n0.peerId, start),
      client.startCeremony(n1.peerId, start),
    ]);
    expect(await victim).toBeInstanceOf(Error);
    expect(r0.outcome).toBe(Outcome.DEADLINE_EXCEEDED);
    expect(r1.outcome).toBe(Outcome.DEADLINE_EXCEEDED);
    const keyId = bytesToHex(start.ceremonyId);
    for (const n of [n0, n1]) {
      const st = await client.status(n.peerId);
      expect(st.keys.map((k) => k.keyId)).toEqual([key.keyId]);
      expect(st.keys.map((k) => k.keyId)).not.toContain(keyId);
    }
    await startNode(n2);
    const st2 = await client.status(n2.peerId);
    expect(st2.keys.map((k) => k.keyId)).toEqual([key.keyId]);
    const msg = enc.encode('after kill -9');
    const [s] = await ceremony([n2, n0], {
      kind: CeremonyKind.SIGN,
      threshold: 2,
      deadlineUnixMs: deadline(30_000),
      sign: { keyId: key.keyId as string, algorithm: KeyAlgorithm.ED25519, derivationPath: [], digests: [msg] },
    });
    expect(s?.outcome, s?.error).toBe(Outcome.OK);
    expect(
      ed25519.verify(s?.signatures?.[0]?.signature as Uint8Array, msg, pk(key, KeyAlgorithm.ED25519).publicKey),
    ).toBe(true);
    // review R2: the killed ceremony left no record on the victim; the same start sent again (a new
    // timestamp, so a new request digest) must not make it run those sessions a second time
    const refusedBefore = readLog(n2).split('"code":"session-reused"').length;
    const again = await client.startCeremony(n2.peerId, { ...start, deadlineUnixMs: deadline(4_000) });
    expect(again.outcome).not.toBe(Outcome.OK);
    await waitFor(
      () => readLog(n2).split('"code":"session-reused"').length > refusedBefore,
      10_000,
      'the re-sent sessions refused as already run',
    );
  });

  it('refresh: same public keys, new shares; signing still works', async () => {
    const results = await ceremony(nodes, {
      kind: CeremonyKind.REFRESH,
      threshold: 2,
      deadlineUnixMs: deadline(60_000),
      keyId: key.keyId as string,
    });
    for (const r of results) expect(r.outcome, r.error).toBe(Outcome.OK);
    expect(results[0]?.publicKeys?.map((k) => bytesToHex(k.publicKey))).toEqual(
      key.publicKeys?.map((k) => bytesToHex(k.publicKey)),
    );
    const msg = enc.encode('after refresh');
    const [s] = await ceremony([nodes[1] as NodeSpec, nodes[2] as NodeSpec], {
      kind: CeremonyKind.SIGN,
      threshold: 2,
      deadlineUnixMs: deadline(30_000),
      sign: { keyId: key.keyId as string, algorithm: KeyAlgorithm.ED25519, derivationPath: [], digests: [msg] },
    });
    expect(s?.outcome, s?.error).toBe(Outcome.OK);
    expect(
      ed25519.verify(s?.signatures?.[0]?.signature as Uint8Array, msg, pk(key, KeyAlgorithm.ED25519).publicKey),
    ).toBe(true);
  });

  it('control exchanges share one long-lived stream: concurrent requests are answered out of order', async () => {
    const n0 = nodes[0] as NodeSpec;
    // a FROST-only master key ceremony on all three (hundreds of ms) and, meanwhile, status requests
    const slow = ceremony(nodes, {
      kind: CeremonyKind.MASTER_KEY,
      threshold: 2,
      deadlineUnixMs: deadline(60_000),
      algorithms: [KeyAlgorithm.ED25519],
    });
    let slowDone = false;
    void slow.then(() => {
      slowDone = true;
    });
    const status = await client.status(n0.peerId);
    expect(status.peerId).toBe(n0.peerId);
    expect(slowDone).toBe(false); // answered while the ceremony on the same stream was still running
    for (const r of await slow) expect(r.outcome, r.error).toBe(Outcome.OK);
    const streams = host.node
      .getConnections()
      .flatMap((c) => c.streams)
      .filter((st) => st.protocol === CONTROL_PROTOCOL);
    expect(streams.length).toBeLessThanOrEqual(nodes.length); // at most one per signer, reused
  });

  it('a replayed or foreign control request is refused', async () => {
    const start: StartCeremony = {
      ceremonyId: cid('dup'),
      kind: CeremonyKind.SIGN,
      parties: [{ peerId: nodes[0]?.peerId as string }],
      threshold: 2,
      deadlineUnixMs: deadline(10_000),
      sign: {
        keyId: key.keyId as string,
        algorithm: KeyAlgorithm.ED25519,
        derivationPath: [],
        digests: [new Uint8Array(32)],
      },
    };
    const bytes = signControlRequest({ version: 1, issuedUnixMs: Date.now(), start }, coordinatorSecret);
    const send = async () => {
      const res = decodeControlResponse(await host.request(nodes[0]?.peerId as string, bytes, 10_000));
      if (!res.ok) throw new Error(res.rejection.reason);
      return res.value.result;
    };
    const first = await send();
    expect(first?.outcome).toBe(Outcome.REFUSED); // fewer signers than the key's threshold
    expect(first?.error).toMatch(/at least 2 signers/);
    expect(refusalOf(first?.refusal)).toBe('REQUEST_INVALID');
    const replayed = await send(); // the exact same signed bytes again
    expect(replayed?.outcome).toBe(Outcome.REFUSED);
    expect(replayed?.error).toMatch(/replayed/);
    expect(refusalOf(replayed?.refusal)).toBe('CONTROL_REQUEST_REJECTED');
    const foreign = await ControlClient.fromHost(host, new Uint8Array(32).fill(5)).startCeremony(
      nodes[0]?.peerId as string,
      start,
    );
    expect(foreign.outcome).toBe(Outcome.REFUSED);
    expect(foreign.error).toMatch(/not signed by the configured coordinator/);
    expect(refusalOf(foreign.refusal)).toBe('CONTROL_REQUEST_REJECTED');
  });

  it('hostile party: malformed, oversized, unsigned, forged, replayed and wrong-session envelopes are rejected and logged; the ceremony completes', async () => {
    const [n0, n1] = nodes as [NodeSpec, NodeSpec];
    const parties = [n0, n1];
    const logBefore = parties.map((n) => readLog(n).length);
    const ceremonyId = cid('hostile');
    const partyList: { peerId: string; publicKey: Uint8Array }[] = [
      ...parties.map((n) => ({ peerId: n.peerId, publicKey: ed25519.getPublicKey(ed25519.utils.randomSecretKey()) })),
      { peerId: host.peerId, publicKey: ed25519.getPublicKey(coordinatorSecret) },
    ];
    // real identity keys of the signers (from their peer ids)
    const { peerIdFromString } = await import('@libp2p/peer-id');
    for (const p of partyList.slice(0, 2)) p.publicKey = peerIdFromString(p.peerId).publicKey?.raw as Uint8Array;
    const Signed = messageType('custodian.v1.SignedEnvelope');
    const Env = messageType('custodian.v1.Envelope');
    const injected = new Set<string>();
    const hostileSend = async (peer: string, bytes: Uint8Array) => {
      await host.sendMpc(peer, bytes);
      await host.sendMpc(peer, bytes); // replay of the same signed envelope
      if (injected.has(peer)) return;
      injected.add(peer);
      const to = partyList.findIndex((p) => p.peerId === peer);
      const inner = Env.decode(
        (Signed.decode(bytes) as unknown as { envelope: Uint8Array }).envelope,
      ) as unknown as Record<string, unknown>;
      const junk = [
        enc.encode('definitely not protobuf \xff\xff'),
        Signed.encode(
          Signed.fromObject({ envelope: (Signed.decode(bytes) as unknown as { envelope: Uint8Array }).envelope }),
        ).finish(), // unsigned
        sealEnvelope({
          sessionId: inner.sessionId as Uint8Array,
          protocol: 'custodian.frost.dkg',
          round: 0,
          sender: 1 - to,
          payload: new Uint8Array(3),
          senderSecretKey: coordinatorSecret,
        }), // forged sender
        sealEnvelope({
          sessionId: sha256(enc.encode('another session')),
          protocol: 'custodian.frost.dkg',
          round: 0,
          sender: 2,
          payload: new Uint8Array(3),
          senderSecretKey: coordinatorSecret,
        }), // wrong session
      ];
      for (const j of junk) await host.sendMpc(peer, j);
      await host.sendMpc(peer, new Uint8Array(5 * 1024 * 1024)).catch(() => undefined); // oversized frame
    };
    hostileRunner = new CeremonyRunner({ send: hostileSend }, pino({ level: 'silent' }));
    const runner = hostileRunner;
    const dl = deadline(60_000);
    const mine = ['ed25519', 'secp256k1-tr'].map((suite) =>
      runner.run<KeyShare>({
        sessionId: sessionId(ceremonyId, `frost.dkg.${suite}`),
        spec: dkgProtocol({ suite: suite as 'ed25519', threshold: 2 }),
        parties: partyList,
        self: 2,
        secretKey: coordinatorSecret,
        deadline: dl,
      }),
    );
    const theirs = ceremony(parties, { ceremonyId, kind: CeremonyKind.MASTER_KEY, threshold: 2, deadlineUnixMs: dl }, [
      host.peerId,
    ]);
    const [r0, r1] = await theirs;
    const own = await Promise.all(mine);
    hostileRunner = undefined;
    expect(r0?.outcome, r0?.error).toBe(Outcome.OK);
    expect(r1?.outcome, r1?.error).toBe(Outcome.OK);
    expect(own.every((o) => o.status === 'ok')).toBe(true);
    for (const [i, n] of parties.entries()) {
      await waitFor(() => readLog(n).slice(logBefore[i]).includes('mpc stream rejected'), 10_000, 'oversize log');
      const log = readLog(n).slice(logBefore[i]);
      for (const code of [
        '"code":"replay"',
        '"code":"bad-signature"',
        '"code":"malformed"',
        '"code":"unknown-session"',
        'mpc stream rejected',
      ]) {
        expect(log, `${n.name} log lacks ${code}`).toContain(code);
      }
      expect(n.proc?.exitCode).toBe(null);
      // logs never contain the shares' format marker or secret fields
      expect(log).not.toContain('signingShare');
    }
  });

  it('an unknown peer is refused at connection time', async () => {
    const strangerKey = await generateKeyPair('Ed25519');
    const stranger = await createHost({
      privateKey: strangerKey,
      listen: [],
      peers: new Map([[nodes[0]?.peerId as string, [`/ip4/127.0.0.1/tcp/${nodes[0]?.port}`]]]),
      maxFrameBytes: 1024,
      log: pino({ level: 'silent' }),
    });
    try {
      const before = readLog(nodes[0] as NodeSpec).length;
      await expect(stranger.sendMpc(nodes[0]?.peerId as string, new Uint8Array([1, 2, 3]))).rejects.toThrow();
      await waitFor(
        () =>
          readLog(nodes[0] as NodeSpec)
            .slice(before)
            .includes('peer not configured'),
        10_000,
        'refusal log',
      );
    } finally {
      await stranger.stop();
    }
  });
});
