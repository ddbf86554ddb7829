/**
 * Issue #27 item 3: transfers are processed independently. Two master keys over real signer
 * processes — key 1 among signers 0, 1, 2 (signing set: signers 0 and 1), key 2 among signers 2
 * and 0 — and signer 1 frozen (SIGSTOP: its connections stay open, it answers nothing). Transfer A
 * (key 1) waits in its ceremony; transfer B (key 2), approved after A's ceremony started, is
 * signed, broadcast and SENT meanwhile — and confirmed — while A is still in its ceremony. Once
 * signer 1 resumes, A completes too.
 */
import { describe, expect, it } from 'vitest';
import { approvedTransfer, freeze, pipeline, resume, useFaultsEnv, waitTransfer } from './faults-harness.js';

describe('transfers are processed independently', () => {
  const setup = useFaultsEnv('faults-independent', {
    keys: [
      [0, 1, 2],
      [2, 0],
    ],
  });

  it('a ceremony stuck on an unresponsive signer does not hold back another transfer’s signing, broadcast and confirmation', async () => {
    const {
      env,
      wallets: [walletA, walletB],
    } = setup;
    const lines: string[] = [];
    // a ceremony deadline far beyond this test: A's ceremony ends only when signer 1 answers
    pipeline(env, { signDeadlineMs: 600_000 }, lines);
    freeze(env.nodes[1]!);
    try {
      const a = await approvedTransfer(env, walletA, '1');
      // A's transaction is built and stored, its ceremony started (signer 1 never answers)
      await waitTransfer(env, a, () => true, 1);
      const built = async () =>
        (await env.coord.db.query('SELECT 1 FROM transfers WHERE transfer_id = $1 AND unsigned IS NOT NULL', [a]))
          .length > 0;
      for (let i = 0; i < 300 && !(await built()); i++) await new Promise((r) => setTimeout(r, 100));
      expect(await built()).toBe(true);

      const b = await approvedTransfer(env, walletB, '2');
      const sent = await waitTransfer(env, b, (t) => ['SENT', 'FAILED', 'REJECTED'].includes(t.status), 90_000);
      expect(sent.status, JSON.stringify(sent)).toBe('SENT');
      // A is still in its ceremony: nothing decided about it
      const stillA = await env.api.getTransfer(a);
      expect(stillA).toMatchObject({ status: 'PENDING_SIGNATURE', sub_status: null, tx_hash: null });
      // B's confirmation is followed too while A waits
      env.model.mine([...env.model.pending]);
      env.model.mine();
      const delivered = await waitTransfer(env, b, (t) => t.delivered_at !== null, 60_000);
      expect(delivered.tx_hash).toBe(sent.tx_hash);
      expect((await env.api.getTransfer(a)).status).toBe('PENDING_SIGNATURE');

      resume(env.nodes[1]!);
      const doneA = await waitTransfer(env, a, (t) => ['SENT', 'FAILED', 'REJECTED'].includes(t.status), 90_000);
      expect(doneA.status, JSON.stringify(doneA)).toBe('SENT');
    } finally {
      resume(env.nodes[1]!);
    }
  }, 300_000);
});
