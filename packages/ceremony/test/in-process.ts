/**
 * In-process signers for attack tests: real encrypted LevelDB stores, real ceremony contexts and
 * {@link CeremonyRunner}s, and an in-memory transport between them (asynchronous delivery), so
 * `runCeremony` runs exactly as in the daemon, without sockets. `onSend` sees every envelope as it
 * is handed to the transport (the moment it leaves the sending process).
 */
import { readFileSync } from 'node:fs';
import { type KeyShare, keyShareFromJson, type Presignature, presignProtocol } from '@custodian/cggmp';
import { Party, simulate, systemRandom } from '@custodian/crypto';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { pino } from 'pino';
import { expect } from 'vitest';
import { type CeremonyContext, CeremonyRunner, StoredNonceLedger } from '../src/index.js';
import { SecureStore } from '../src/level-store/index.js';

export const TEST_SCRYPT = { N: 1 << 10, r: 8, p: 1 } as const;
export const TEST_PASS = 'in-process test passphrase';

/** A signer's identity: libp2p peer id and its Ed25519 secret key (32 bytes). */
export interface TestIdentity {
  readonly peerId: string;
  readonly secretKey: Uint8Array;
}

export async function identities(n: number): Promise<TestIdentity[]> {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const k = await generateKeyPair('Ed25519');
      return { peerId: peerIdFromPrivateKey(k).toString(), secretKey: Uint8Array.from(k.raw.subarray(0, 32)) };
    }),
  );
}

/** Peers reachable by peer id; `onSend(from, to, bytes)` is called when a message is handed to the transport. */
export class InMemoryNetwork {
  readonly runners = new Map<string, CeremonyRunner>();
  onSend?: (from: string, to: string, bytes: Uint8Array) => void;

  runner(self: string): CeremonyRunner {
    const r = new CeremonyRunner(
      {
        send: async (peer, bytes) => {
          this.onSend?.(self, peer, bytes);
          setImmediate(() => this.runners.get(peer)?.deliver(self, bytes));
        },
      },
      pino({ level: 'silent' }),
    );
    this.runners.set(self, r);
    return r;
  }
}

/** Open (or reopen) a store and build the context the daemon builds for it. */
export async function openContext(
  net: InMemoryNetwork,
  id: TestIdentity,
  dbPath: string,
  extra: Partial<CeremonyContext> = {},
): Promise<CeremonyContext> {
  const store = await SecureStore.open(dbPath, TEST_PASS, TEST_SCRYPT);
  const nonceLedger = new StoredNonceLedger(store);
  await nonceLedger.load();
  return {
    store,
    runner: net.runner(id.peerId),
    selfPeerId: id.peerId,
    secretKey: id.secretKey,
    log: pino({ level: 'silent' }),
    nonceLedger,
    shareCache: new Map(),
    recordCache: new Map(),
    ...extra,
  };
}

/** The 2-of-3 CGGMP21 key shares of the TEST-ONLY fixture of packages/cggmp, by party index. */
export const fixtureShares2of3: KeyShare[] = (
  JSON.parse(readFileSync(new URL('../../cggmp/test/fixtures/test-only-key-shares.json', import.meta.url), 'utf8')) as {
    sets: Record<string, unknown[]>;
  }
).sets['2of3']!.map((j) => keyShareFromJson(j) as KeyShare);

/** One presigning of signers [0, 1] of {@link fixtureShares2of3} (simulated): each party's one-shot handle, by position. */
export function presignFixture(): [Presignature, Presignature] {
  const signers = [0, 1];
  const sessionId = systemRandom(32);
  const res = simulate(
    signers.map(
      (_, j) =>
        new Party(presignProtocol({ share: fixtureShares2of3[j] as KeyShare, signers }), {
          self: j,
          n: signers.length,
          sessionId,
          rng: systemRandom,
        }),
    ),
  );
  expect(res.aborted.every((a) => a === undefined)).toBe(true);
  return res.outputs as [Presignature, Presignature];
}
