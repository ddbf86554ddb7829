/**
 * Issue #27 item 4: short, renewed leases. Two pipelines (the real class) on one database; the
 * first claims a transfer, stores its transaction and starts its ceremony (signer 1 frozen, so the
 * ceremony waits), then "crashes": it stops without releasing anything and writes nothing more.
 * The second takes the transfer over once the lease runs out (default lease 15 s, within 30 s),
 * signs the SAME stored transaction, and the transfer reaches SENT once (one broadcast, one SENT).
 */
import { describe, expect, it } from 'vitest';
import { approvedTransfer, eventsOf, freeze, pipeline, resume, useFaultsEnv, waitTransfer } from './faults-harness.js';

describe('lease takeover', () => {
  const setup = useFaultsEnv('faults-lease');

  it('a crashed pipeline’s transfer is taken over after its lease and SENT once', async () => {
    const { env, wallet } = setup;
    freeze(env.nodes[1]!);
    try {
      const first = pipeline(env, { signDeadlineMs: 600_000 });
      const id = await approvedTransfer(env, wallet, '1');
      const row = async () =>
        (
          await env.coord.db.query<{ unsigned: { digests: { digest: string }[] } | null; lease_owner: string | null }>(
            'SELECT unsigned, lease_owner FROM transfers WHERE transfer_id = $1',
            [id],
          )
        )[0]!;
      for (let i = 0; i < 300 && (await row()).unsigned === null; i++) await new Promise((r) => setTimeout(r, 100));
      const held = await row();
      expect(held.unsigned).not.toBeNull();
      expect(held.lease_owner).toBe(first.owner);

      // the first pipeline "crashes" mid-ceremony: no release, no further write
      void first.abandon();
      resume(env.nodes[1]!);
      const lines: string[] = [];
      const second = pipeline(env, { signDeadlineMs: 60_000 }, lines);
      const sent = await waitTransfer(env, id, (t) => ['SENT', 'FAILED', 'REJECTED'].includes(t.status), 60_000);
      expect(sent.status, JSON.stringify(sent)).toBe('SENT');
      expect(lines.some((l) => l.includes('transfer taken over from a lease that ran out'))).toBe(true);
      // the transaction the first pipeline stored is the one signed and broadcast — once
      expect((await row()).unsigned).toEqual(held.unsigned);
      expect(sent.tx_hash).toBe(held.unsigned?.digests[0]?.digest);
      expect(env.model.pending.filter((t) => t.txID === sent.tx_hash)).toHaveLength(1);
      expect((await eventsOf(env, id)).filter((e) => e.includes(' SENT '))).toEqual(['TRANSFER_UPDATED SENT null']);
      await second.stop();
    } finally {
      resume(env.nodes[1]!);
    }
  }, 300_000);
});
