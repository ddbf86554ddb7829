/**
 * PresignaturePoolKeeper's refill bookkeeping (control-client.ts), with a control client that
 * answers PRESIGN requests the way signers do (every party stores the same ids): the ceremonies
 * themselves run across real processes in cluster-ecdsa.slow.test.ts.
 */
import { type CeremonyResult, Outcome, type StartCeremony } from '@custodian/wire';
import { describe, expect, it } from 'vitest';
import type { ControlClient } from '../src/control-client.js';
import { PresignaturePoolKeeper } from '../src/control-client.js';

function presignAnswers() {
  let n = 0;
  const requests: StartCeremony[] = [];
  const client = {
    startCeremonies(peerIds: readonly string[], start: StartCeremony): Promise<CeremonyResult>[] {
      requests.push(start);
      const ids = Array.from({ length: start.presignCount ?? 0 }, () => `p${++n}`);
      return peerIds.map(async () => ({ ceremonyId: start.ceremonyId, outcome: Outcome.OK, presignatureIds: ids }));
    },
  } as unknown as ControlClient;
  return { client, requests };
}

describe('PresignaturePoolKeeper', () => {
  it('a refill asked for on a full pool does not stop later refills', async () => {
    const { client, requests } = presignAnswers();
    const keeper = new PresignaturePoolKeeper(client, 'k', ['a', 'b'], 2, 2);
    await keeper.refill();
    expect(keeper.size).toBe(2);
    await keeper.refill(); // full: nothing to do, settles at once
    expect(requests).toHaveLength(1);
    expect(keeper.take()).toBe('p1');
    expect(keeper.take()).toBe('p2');
    await keeper.refill(); // the refill take() started
    expect(keeper.size).toBe(2);
    expect(keeper.take({ refill: false })).toBe('p3');
    expect(requests.map((r) => r.presignCount)).toEqual([2, 1, 1]);
  });

  it('concurrent refills share one round; a failed round is reported and the next one starts afresh', async () => {
    const { client } = presignAnswers();
    let fail = true;
    const flaky = {
      startCeremonies: (peerIds: readonly string[], start: StartCeremony) =>
        fail
          ? peerIds.map(async () => ({ ceremonyId: start.ceremonyId, outcome: Outcome.ABORTED, error: 'peer gone' }))
          : client.startCeremonies(peerIds, start),
    } as unknown as ControlClient;
    const keeper = new PresignaturePoolKeeper(flaky, 'k', ['a', 'b'], 2, 2);
    const a = keeper.refill();
    expect(keeper.refill()).toBe(a);
    await expect(a).rejects.toThrow(/presign ceremony failed: peer gone/);
    fail = false;
    await keeper.refill();
    expect(keeper.size).toBe(2);
  });
});
