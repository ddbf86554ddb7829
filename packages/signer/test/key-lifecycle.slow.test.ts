/**
 * Key lifecycle across real signer processes (issue #22): four signer daemons on 127.0.0.1 (the
 * test is the coordinator, control protocol over libp2p), every key type (Ed25519, Taproot, ECDSA
 * with the committed TEST-ONLY safe primes). A 2-of-3 key has a party replaced: the new party is
 * killed (SIGKILL) mid-reshare — nothing is kept, the old set still signs — then restarted and the
 * retry completes; the status reports the pending reshare and, after the commit, epoch 1; the new
 * set signs a DRILL, the replaced party refuses; RevokeApprover drops a device at every signer.
 */
import { rmSync } from 'node:fs';
import { bytesToHex } from '@custodian/crypto';
import { CeremonyKind, type CeremonyResult, Outcome, refusalOf, type StartCeremony } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { p256 } from '@noble/curves/nist.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '@custodian/signer-client/polyfills';
import { verifyTestSignature } from '@custodian/ceremony';
import { ControlClient } from '@custodian/signer-client';
import { buildSigner, type NodeSpec, startNode, startSeededNodes, stopNode, tempDir } from './cluster.js';

let nodes: NodeSpec[] = [];
let dir = '';
let client: ControlClient;

const cid = () => crypto.getRandomValues(new Uint8Array(16));

function req(
  kind: number,
  parties: readonly NodeSpec[],
  extra: Partial<StartCeremony> = {},
  ms = 300_000,
): StartCeremony {
  return {
    ceremonyId: cid(),
    kind,
    parties: parties.map((n) => ({ peerId: n.peerId })),
    threshold: 0,
    deadlineUnixMs: Date.now() + ms,
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

beforeAll(async () => {
  buildSigner();
  dir = tempDir('lifecycle');
  const coordKey = await generateKeyPair('Ed25519');
  const { peerIdFromPrivateKey } = await import('@libp2p/peer-id');
  // unsigned key changes and raw drills: enforcement explicitly off (test only)
  nodes = await startSeededNodes(dir, 4, peerIdFromPrivateKey(coordKey).toString(), { allowUnenforcedSigning: true });
  client = await ControlClient.create(
    coordKey,
    new Map(nodes.map((n) => [n.peerId, [`/ip4/127.0.0.1/tcp/${n.port}`]])),
  );
}, 180_000);

afterAll(async () => {
  await client?.stop();
  await Promise.all(nodes.map((n) => stopNode(n)));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('key lifecycle across signer processes', () => {
  it('replace a party: kill -9 mid-reshare keeps the old set, retry and commit, status, drill, revocation', async () => {
    const [n0, n1, n2, n3] = nodes as [NodeSpec, NodeSpec, NodeSpec, NodeSpec];
    const phone = { deviceId: 'phone-1', publicKey: p256.getPublicKey(p256.utils.randomSecretKey(), true) };
    const made = await run(
      [n0, n1, n2],
      req(CeremonyKind.MASTER_KEY, [n0, n1, n2], { threshold: 2, approverDevices: [phone] }),
    );
    allOk(made);
    const keyId = made[0]?.keyId as string;
    const want = made[0]?.publicKeys?.map((k) => bytesToHex(k.publicKey));
    // n1 and n2 consumed their primes: a restart seeds them again (the new set needs aux info)
    for (const n of [n1, n2]) {
      await stopNode(n);
      await startNode(n);
    }
    const doc = {
      kind: 'custodian.key-change' as const,
      change_id: crypto.randomUUID(),
      key_id: keyId,
      public_keys: (made[0]?.publicKeys ?? []).map((k) => ({
        algorithm: (['', 'ED25519', 'SECP256K1_TAPROOT', 'SECP256K1_ECDSA'] as const)[k.algorithm] as 'ED25519',
        public_key: bytesToHex(k.publicKey),
        chain_code: bytesToHex(k.chainCode),
      })),
      new_parties: [n3.peerId, n1.peerId, n2.peerId],
      new_threshold: 2,
      approver_devices: [{ device_id: phone.deviceId, public_key: bytesToHex(phone.publicKey) }],
      // the key as its holders store it (a change applies once, to this), valid for an hour
      base: { epoch: 0, parties: [n0.peerId, n1.peerId, n2.peerId], threshold: 2 },
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      reason: 'replace-signer' as const,
      created_at: new Date().toISOString(),
    };
    const reshare = (ms?: number) =>
      req(
        CeremonyKind.RESHARE,
        [n0, n1, n2, n3],
        {
          keyId,
          reshare: {
            newParties: doc.new_parties.map((peerId) => ({ peerId })),
            newThreshold: 2,
            approverDevices: [phone],
            keyChangeJson: JSON.stringify({ document: doc, device_id: '', device_public_key: '', signature: '' }),
          },
        },
        ms,
      );

    // 1. the new party is killed while the reshare runs: nobody keeps anything, the old set signs
    const first = reshare(30_000);
    const pending = Promise.allSettled([n0, n1, n2, n3].map((n) => client.startCeremony(n.peerId, first, 600_000)));
    // early in the ceremony: on a quiet machine a party whose part ends early (the leaving n0) could
    // otherwise finish before a later kill and answer OK
    await new Promise((r) => setTimeout(r, 200));
    await stopNode(n3, 'SIGKILL');
    const settled = await pending;
    // the killed party's stream closes; the others fail (blame or deadline)
    expect(settled[3]?.status).toBe('rejected');
    for (const r of settled.slice(0, 3)) {
      expect(r.status).toBe('fulfilled');
      expect((r as PromiseFulfilledResult<CeremonyResult>).value.outcome).not.toBe(Outcome.OK);
    }
    for (const n of [n0, n1, n2]) {
      const st = await client.status(n.peerId);
      const k = st.keys.find((x) => x.keyId === keyId);
      expect(k?.pendingReshare).toBe('');
      expect(k?.epoch).toBe(0);
    }
    const oldDrill = await run([n0, n2], req(CeremonyKind.DRILL, [n0, n2], { keyId }));
    allOk(oldDrill);
    for (const s of oldDrill[0]?.signatures ?? []) expect(verifyTestSignature(s)).toBe(true);

    // 2. n3 restarts; n1, n2 restart to re-seed the primes the failed attempt consumed; the retry completes
    for (const n of [n1, n2]) await stopNode(n);
    for (const n of [n1, n2, n3]) await startNode(n);
    const second = reshare();
    const res = await run([n0, n1, n2, n3], second);
    allOk(res);
    for (const r of res) expect(r.publicKeys?.map((k) => bytesToHex(k.publicKey))).toEqual(want);
    for (const s of res[3]?.signatures ?? []) expect(verifyTestSignature(s)).toBe(true);
    const rid = bytesToHex(second.ceremonyId);
    for (const n of [n0, n1, n2, n3]) {
      const k = (await client.status(n.peerId)).keys.find((x) => x.keyId === keyId);
      if (n === n3)
        expect(k).toBeUndefined(); // pending shares are no key yet
      else expect(k?.pendingReshare).toBe(rid);
    }

    // every new party attests its pending shares; the commit carries them in new-party order
    const session = [n0, n1, n2, n3];
    const pendingAttestations = doc.new_parties.map(
      (p) => res[session.findIndex((n) => n.peerId === p)]?.pendingAttestation ?? new Uint8Array(0),
    );
    for (const a of pendingAttestations) expect(a.length).toBe(64);
    // without them, no party moves (n0 keeps its share)
    const bare = await run(
      session,
      req(CeremonyKind.RESHARE_COMMIT, session, { keyId, reshareCeremonyId: second.ceremonyId }),
    );
    for (const r of bare) expect(refusalOf(r.refusal)).toBe('REQUEST_INVALID');
    expect((await client.status(n0.peerId)).keys.find((x) => x.keyId === keyId)?.epoch).toBe(0);

    // 3. commit (twice: idempotent); status shows epoch 1 and no pending
    for (let i = 0; i < 2; i++)
      allOk(
        await run(
          session,
          req(CeremonyKind.RESHARE_COMMIT, session, {
            keyId,
            reshareCeremonyId: second.ceremonyId,
            pendingAttestations,
          }),
        ),
      );
    for (const n of [n1, n2, n3]) {
      const k = (await client.status(n.peerId)).keys.find((x) => x.keyId === keyId);
      expect(k?.epoch).toBe(1);
      expect(k?.pendingReshare).toBe('');
      expect(k?.parties.map((p) => p.peerId)).toEqual(doc.new_parties);
    }
    expect((await client.status(n0.peerId)).keys.find((x) => x.keyId === keyId)).toBeUndefined();

    // 4. the new set signs; the replaced party refuses
    const drill = await run([n3, n2], req(CeremonyKind.DRILL, [n3, n2], { keyId }));
    allOk(drill);
    expect(drill[0]?.signatures).toHaveLength(3);
    for (const s of drill[0]?.signatures ?? []) expect(verifyTestSignature(s)).toBe(true);
    const [gone] = await run([n0], req(CeremonyKind.DRILL, [n0, n1], { keyId }));
    expect(refusalOf(gone?.refusal)).toBe('KEY_UNKNOWN');

    // 5. the phone is lost: revoked at every signer of the key, once
    for (const n of [n1, n2, n3])
      expect(await client.revokeApprover(n.peerId, phone.deviceId, phone.publicKey)).toBe(1);
    expect(await client.revokeApprover(n1.peerId, phone.deviceId)).toBe(0);
  });
});
