/**
 * Issue #29 (drain on SIGTERM): a coordinator that stops (what its SIGTERM handler runs) hands
 * back the transfer its pipeline was working on: the lease is released at the stop — no waiting
 * for it to run out — and the next pipeline resumes the transfer at once, signs the SAME stored
 * transaction and reaches SENT once. The real pipeline class, real signers (signer 1 frozen so
 * the ceremony is in flight when the stop comes), as faults-lease-takeover.test.ts does for a crash.
 */
import { describe, expect, it } from 'vitest';
import { approvedTransfer, eventsOf, freeze, pipeline, resume, useFaultsEnv, waitTransfer } from './faults-harness.js';

describe('drain hands back claimed transfers', () => {
  const setup = useFaultsEnv('faults-drain');

  it('a stopped pipeline’s transfer is released at once and resumed by the next one, SENT once', async () => {
    const { env, wallet } = setup;
    freeze(env.nodes[1]!);
    try {
      const first = pipeline(env, { signDeadlineMs: 600_000 });
      const id = await approvedTransfer(env, wallet, '1');
      const row = async () =>
        (
          await env.coord.db.query<{
            unsigned: { digests: { digest: string }[] } | null;
            lease_owner: string | null;
            lease_until: Date | null;
          }>('SELECT unsigned, lease_owner, lease_until FROM transfers WHERE transfer_id = $1', [id])
        )[0]!;
      for (let i = 0; i < 300 && (await row()).unsigned === null; i++) await new Promise((r) => setTimeout(r, 100));
      const held = await row();
      expect(held.unsigned).not.toBeNull();
      expect(held.lease_owner).toBe(first.owner);

      // the drain: stop (not crash) mid-ceremony
      await first.stop();
      const released = await row();
      expect(released.lease_owner).toBeNull();
      // claimable again without waiting for the lease to run out (15 s)
      const leaseUntil = released.lease_until ? new Date(released.lease_until).getTime() : 0;
      expect(leaseUntil).toBeLessThan(new Date(held.lease_until as Date).getTime());

      resume(env.nodes[1]!);
      const lines: string[] = [];
      const second = pipeline(env, { signDeadlineMs: 60_000 }, lines);
      const sent = await waitTransfer(env, id, (t) => ['SENT', 'FAILED', 'REJECTED'].includes(t.status), 60_000);
      expect(sent.status, JSON.stringify(sent)).toBe('SENT');
      // handed back, not taken over
      expect(lines.some((l) => l.includes('transfer taken over from a lease that ran out'))).toBe(false);
      expect((await row()).unsigned).toEqual(held.unsigned);
      expect(sent.tx_hash).toBe(held.unsigned?.digests[0]?.digest);
      expect((await eventsOf(env, id)).filter((e) => e.includes(' SENT '))).toEqual(['TRANSFER_UPDATED SENT null']);
      await second.stop();
    } finally {
      resume(env.nodes[1]!);
    }
  }, 300_000);
});
