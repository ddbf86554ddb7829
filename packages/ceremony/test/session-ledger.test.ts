/**
 * Review R2 (HIGH 3) as a regression: an honest party never runs one session twice. A compromised
 * coordinator re-sends a StartCeremony (same ceremony id, new timestamp, so a new request digest):
 * without the session ledger the honest party runs the session again and signs a second, different
 * round-1 statement for the same (protocol, session, round), which a colluding peer can present as
 * verifiable equivocation. With `StoredSessionLedger` (the signer's and the phone's) the second run
 * is refused before anything is computed or sent — also after the store is closed and reopened.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { dkgProtocol, type KeyShare } from '@custodian/frost';
import { ed25519 } from '@noble/curves/ed25519.js';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { sessionId } from '../src/ceremonies/context.js';
import { CeremonyRunner, type SessionParty, StoredSessionLedger } from '../src/index.js';
import { SecureStore } from '../src/level-store/index.js';
import { tempDir as makeTemp } from './helpers.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const fast = { N: 1 << 10, r: 8, p: 1 };

/** Three runners over an in-memory transport; runner 1 (the honest victim) uses `ledger1`. */
function network(ledger1: StoredSessionLedger) {
  const secrets = Array.from({ length: 3 }, () => ed25519.utils.randomSecretKey());
  const parties: SessionParty[] = secrets.map((s, i) => ({ peerId: `peer${i}`, publicKey: ed25519.getPublicKey(s) }));
  const sent = [0, 0, 0];
  const runners: CeremonyRunner[] = [];
  const make = (i: number, ledger?: StoredSessionLedger) =>
    new CeremonyRunner(
      {
        async send(peer, bytes) {
          sent[i] = (sent[i] ?? 0) + 1;
          const to = Number(peer.slice(4));
          setTimeout(() => runners[to]?.deliver(`peer${i}`, bytes), 1);
        },
      },
      pino({ level: 'silent' }),
      undefined,
      ledger,
    );
  for (let i = 0; i < 3; i++) runners.push(make(i, i === 1 ? ledger1 : undefined));
  const params = (i: number, sid: Uint8Array) => ({
    sessionId: sid,
    spec: dkgProtocol({ suite: 'ed25519' as const, threshold: 2 }),
    parties,
    self: i,
    secretKey: secrets[i] as Uint8Array,
    deadline: Date.now() + 20_000,
  });
  return { runners, sent, params, make };
}

describe('session ledger: an honest signer never runs one session twice', () => {
  it('R2: a re-sent session is refused unsent, in the same process and after a restart of the store', async () => {
    const dir = join(makeTemp('sessions'), 'db');
    dirs.push(dir);
    let store = await SecureStore.open(dir, 'pass', fast);
    const net = network(new StoredSessionLedger(store));
    const sid = sessionId(new Uint8Array(16).fill(7), 'frost.dkg.ed25519');
    const first = await Promise.all(net.runners.map((r, i) => r.run<KeyShare>(net.params(i, sid))));
    for (const o of first) expect(o.status).toBe('ok');
    const before = net.sent[1];
    expect(before).toBeGreaterThan(0);

    // the coordinator re-sends the ceremony: party 1 would sign a second round-1 statement
    const again = await net.runners[1]?.run<KeyShare>(net.params(1, sid));
    expect(again).toEqual({ status: 'cancelled', reason: 'session already run here' });
    await new Promise((r) => setTimeout(r, 20));
    expect(net.sent[1]).toBe(before);

    // restart: a new runner on the reopened store still refuses it
    await store.close();
    store = await SecureStore.open(dir, 'pass', fast);
    const restarted = net.make(1, new StoredSessionLedger(store));
    net.runners[1] = restarted;
    const afterRestart = await restarted.run<KeyShare>(net.params(1, sid));
    expect(afterRestart).toEqual({ status: 'cancelled', reason: 'session already run here' });
    await new Promise((r) => setTimeout(r, 20));
    expect(net.sent[1]).toBe(before);
    expect(await store.keys('sessions')).toHaveLength(1);
    await store.close();
  });

  it('concurrent claims of one session: exactly one wins; a failed claim write cancels the session unsent', async () => {
    const dir = join(makeTemp('sessions'), 'db');
    dirs.push(dir);
    const store = await SecureStore.open(dir, 'pass', fast);
    const ledger = new StoredSessionLedger(store);
    const sid = new Uint8Array(32).fill(3);
    const claims = await Promise.all([
      ledger.claim('custodian.cggmp.presign.v1', sid),
      ledger.claim('custodian.cggmp.presign.v1', sid),
      ledger.claim('custodian.frost.dkg.v1', sid),
    ]);
    expect(claims.filter((c, i) => i < 2 && c)).toHaveLength(1);
    expect(claims[2]).toBe(true);
    expect(await ledger.claim('custodian.cggmp.presign.v1', sid)).toBe(false);

    await store.close();
    const net = network(ledger);
    const o = await net.runners[1]?.run<KeyShare>(net.params(1, new Uint8Array(32).fill(4)));
    expect(o?.status).toBe('cancelled');
    expect(o?.status === 'cancelled' && o.reason).toMatch(/^session ledger: /);
    expect(net.sent[1]).toBe(0);
  });
});
