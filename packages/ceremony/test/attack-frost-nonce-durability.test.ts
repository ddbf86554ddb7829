/**
 * Attack (issue #20, item 7): a FROST signer's own nonce commitments must be durable (a synced
 * LevelDB batch) BEFORE its signature share leaves the process. Otherwise a crash right after the
 * share left loses the commitments, and a repeated nonce (an RNG failure, a VM snapshot restored)
 * would sign again under the same nonce — two shares under one nonce reveal the key share.
 *
 * Real path: two in-process signers (real encrypted LevelDB stores, `runCeremony`, the ceremony
 * runner) create an Ed25519 master key and sign with it. The store's `batch` is wrapped to record
 * when a synced write with nonce commitments has completed, and the transport records when the
 * round-1 message (the signature share) of `custodian.frost.sign` is handed to it; at that moment
 * the data folder is copied, as a crash would leave it, and reopened afterwards.
 */
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { bytesToHex } from '@custodian/crypto';
import { CeremonyKind, KeyAlgorithm, messageType, Outcome, type StartCeremony } from '@custodian/wire';
import { ed25519 } from '@noble/curves/ed25519.js';
import { afterAll, describe, expect, it } from 'vitest';
import { type CeremonyContext, runCeremony, StoredNonceLedger, type StoreOp } from '../src/index.js';
import { SecureStore } from '../src/level-store/index.js';
import { tempDir } from './helpers.js';
import { InMemoryNetwork, identities, openContext, TEST_PASS, TEST_SCRYPT } from './in-process.js';

const SignedEnvelope = messageType('custodian.v1.SignedEnvelope');
const Envelope = messageType('custodian.v1.Envelope');

function roundOf(bytes: Uint8Array): { protocol: string; round: number } {
  const outer = SignedEnvelope.decode(bytes) as unknown as { envelope: Uint8Array };
  const env = Envelope.decode(outer.envelope) as unknown as { protocol: string; round: number };
  return { protocol: env.protocol, round: env.round };
}

const dirs: string[] = [];
const stores: SecureStore[] = [];
afterAll(async () => {
  for (const s of stores) await s.close().catch(() => undefined);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const cid = () => Uint8Array.from(Buffer.from(crypto.getRandomValues(new Uint8Array(16))));

describe('attack: FROST nonce commitments recorded only after the share left', () => {
  it('the own nonce commitments are in a synced batch before the signature share is handed to the transport, and survive a crash right after', async () => {
    const dir = tempDir('attack-frost-nonce');
    dirs.push(dir);
    const net = new InMemoryNetwork();
    const ids = await identities(2);
    const ctxs: CeremonyContext[] = [];
    for (const [i, id] of ids.entries())
      ctxs.push(await openContext(net, id, join(dir, `n${i}`, 'db'), { allowUnenforcedSigning: true }));
    stores.push(...ctxs.map((c) => c.store as SecureStore)); // openContext opens a SecureStore
    const parties = ids.map((id) => ({ peerId: id.peerId }));
    const keyStart: StartCeremony = {
      ceremonyId: cid(),
      kind: CeremonyKind.MASTER_KEY,
      parties,
      threshold: 2,
      deadlineUnixMs: Date.now() + 60_000,
      algorithms: [KeyAlgorithm.ED25519],
    };
    const keys = await Promise.all(ctxs.map((c) => runCeremony(c, keyStart)));
    expect(keys.map((r) => r.outcome)).toEqual([Outcome.OK, Outcome.OK]);
    const keyId = keys[0]?.keyId as string;

    // signer 0 is watched: its synced writes of nonce commitments, and its outgoing share
    const watched = ctxs[0] as CeremonyContext;
    const events: string[] = [];
    const store = watched.store;
    const batch = store.batch.bind(store);
    store.batch = async (ops: readonly StoreOp[], options: { sync?: boolean } = {}) => {
      await batch(ops, options);
      if ((options.sync ?? true) && ops.some((o) => o.sublevel === 'nonces')) events.push('nonces durable');
    };
    const crashCopy = join(dir, 'crash-copy');
    net.onSend = (from, _to, bytes) => {
      if (from !== ids[0]?.peerId) return;
      const { protocol, round } = roundOf(bytes);
      if (protocol !== 'custodian.frost.sign' || round !== 1 || events.includes('share sent')) return;
      events.push('share sent');
      // a crash now leaves exactly what the OS has: the folder as it is at this instant
      cpSync(join(dir, 'n0', 'db'), crashCopy, { recursive: true });
    };

    const digest = crypto.getRandomValues(new Uint8Array(32));
    const signStart: StartCeremony = {
      ceremonyId: cid(),
      kind: CeremonyKind.SIGN,
      parties,
      threshold: 2,
      deadlineUnixMs: Date.now() + 60_000,
      sign: { keyId, algorithm: KeyAlgorithm.ED25519, digests: [digest], derivationPath: [] },
    };
    const signed = await Promise.all(ctxs.map((c) => runCeremony(c, signStart)));
    expect(signed.map((r) => r.outcome)).toEqual([Outcome.OK, Outcome.OK]);
    const sig = signed[0]?.signatures?.[0];
    expect(ed25519.verify(sig?.signature as Uint8Array, digest, sig?.publicKey as Uint8Array)).toBe(true);

    // 1. order: the commitments were durable before the share left
    expect(events).toContain('share sent');
    expect(events.indexOf('nonces durable'), `events: ${events.join(' → ')}`).toBeGreaterThanOrEqual(0);
    expect(events.indexOf('nonces durable'), `events: ${events.join(' → ')}`).toBeLessThan(
      events.indexOf('share sent'),
    );

    // 2. crash right after the share left: the reopened copy has every commitment of the session
    const recorded = await store.keys('nonces');
    expect(recorded.length).toBe(4); // two commitments (hiding, binding) per signer
    const copy = await SecureStore.open(crashCopy, TEST_PASS, TEST_SCRYPT);
    stores.push(copy);
    const ledger = new StoredNonceLedger(copy);
    await ledger.load();
    const missing = recorded.filter((h) => !ledger.has(h));
    expect(missing, 'commitments lost by a crash after the share left').toEqual([]);
    expect(bytesToHex(digest)).toHaveLength(64);
  });
});
