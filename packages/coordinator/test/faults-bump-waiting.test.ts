/**
 * Review of issue #27 item 2/3 (fee bumps waiting for signers): a SENT transfer whose fee bump
 * waits for its signers (WAITING_FOR_SIGNERS, retried within the bump's signing window) must still
 * have its confirmations followed: once its transaction is confirmed it is delivered at once
 * (TRANSFER_DELIVERED) and the bump, now moot, ends FAILED / ALREADY_CONFIRMED without a
 * replacement being signed — not held back for the whole signing window (1 h by default) while
 * every pass returned from the bump's retry before looking at the chain.
 *
 * REAL components (faults-harness: signer processes, gateway, coordinator, TRON chain model). The
 * bump is written into the transfer row as the admin route stores it after its approval round
 * (status PENDING_SIGNATURE with its replacement), because the TRON adapter cannot build a
 * replacement: the replacement stored is the transfer's own transaction, which is never signed here
 * (no signer is up). The pipeline step under test is chain-independent.
 */
import { describe, expect, it } from 'vitest';
import { stopNode } from '../../signer/test/cluster.js';
import { approvedTransfer, eventsOf, pipeline, useFaultsEnv, waitTransfer } from './faults-harness.js';

describe('a fee bump waiting for its signers', () => {
  const setup = useFaultsEnv('faults-bump-waiting');

  it('does not hold back the transfer’s confirmation; the moot bump ends FAILED', async () => {
    const { env, wallet } = setup;
    const lines: string[] = [];
    const p = pipeline(env, { retryInitialMs: 300, retryMaxMs: 1000 }, lines);
    const id = await approvedTransfer(env, wallet, '1');
    const sent = await waitTransfer(env, id, (t) => ['SENT', 'FAILED', 'REJECTED'].includes(t.status), 90_000);
    expect(sent.status, JSON.stringify(sent)).toBe('SENT');

    // no signer is up: every attempt of the bump finds them unavailable
    await Promise.all(env.nodes.map((n) => stopNode(n, 'SIGKILL')));
    const row = (
      await env.coord.db.query<{ unsigned: unknown; intent: unknown }>(
        'SELECT unsigned, intent FROM transfers WHERE transfer_id = $1',
        [id],
      )
    )[0]!;
    const now = new Date();
    await env.coord.db.query('UPDATE transfers SET fee_bump = $2::jsonb WHERE transfer_id = $1', [
      id,
      JSON.stringify({
        status: 'PENDING_SIGNATURE',
        round: 1,
        priority: 'FAST',
        requested_by: null,
        requested_at: now.toISOString(),
        deadline: new Date(now.getTime() + 3600_000).toISOString(),
        intent: row.intent,
        unsigned: row.unsigned,
        signing_since: now.toISOString(),
      }),
    ]);
    const waiting = await waitTransfer(env, id, (t) => t.fee_bump?.sub_status === 'WAITING_FOR_SIGNERS', 60_000);
    expect(waiting.fee_bump.status).toBe('PENDING_SIGNATURE');

    // the transfer's transaction is mined with the chain's confirmations (2)
    env.model.mine([...env.model.pending]);
    env.model.mine();
    const delivered = await waitTransfer(env, id, (t) => t.delivered_at !== null, 30_000).catch(() =>
      env.api.getTransfer(id),
    );
    expect(delivered.delivered_at, JSON.stringify(delivered)).not.toBeNull();
    expect(delivered.tx_hash).toBe(sent.tx_hash);
    expect(delivered.fee_bump).toMatchObject({ status: 'FAILED', sub_status: 'ALREADY_CONFIRMED' });
    expect((await eventsOf(env, id)).filter((e) => e.startsWith('TRANSFER_DELIVERED'))).toHaveLength(1);
    await p.stop();
  }, 300_000);
});
