/**
 * Issue #27 item 2: signers that are not there are waited for, not failed. A 2-of-3 master key
 * over real signer processes; two of them killed (SIGKILL), so no signing set can reach the
 * threshold:
 * - the transfer stays PENDING_SIGNATURE with sub_status WAITING_FOR_SIGNERS and an `error` naming
 *   a missing server signer (stored; the API shows the sub_status), said once (one TRANSFER_UPDATED however many retries); a signer
 *   started again → the transfer is signed (a set of live signers) → SENT, the sub_status cleared;
 * - the signing window over → FAILED / SIGNING_WINDOW_EXPIRED, the error saying what was missing;
 * - a signer killed DURING its ceremony (its libp2p control stream closes): the gateway sees it
 *   fail at once and ends the ceremony on the other party (not at the 10 min deadline); the retry
 *   picks the set of the two live signers → SENT.
 */
import { describe, expect, it } from 'vitest';
import { readLog, startNode, stopNode } from '../../signer/test/cluster.js';
import {
  approvedTransfer,
  eventsOf,
  type FaultsEnv,
  freeze,
  pipeline,
  resume,
  useFaultsEnv,
  waitTransfer,
} from './faults-harness.js';

/** The transfer's stored `error` (not part of the API object). */
const errorOf = async (env: FaultsEnv, id: string): Promise<string> =>
  (await env.coord.db.query<{ error: string }>('SELECT error FROM transfers WHERE transfer_id = $1', [id]))[0]!.error;

const retries = (lines: string[], id: string) =>
  lines.filter((l) => l.includes('transfer signing will be retried') && l.includes(id)).length;

describe('waiting for signers', () => {
  const setup = useFaultsEnv('faults-waiting');

  it('signers offline → WAITING_FOR_SIGNERS naming them (said once); a signer back → SENT', async () => {
    const { env, wallet } = setup;
    await Promise.all([stopNode(env.nodes[1]!, 'SIGKILL'), stopNode(env.nodes[2]!, 'SIGKILL')]);
    const lines: string[] = [];
    const p = pipeline(env, { retryInitialMs: 300, retryMaxMs: 1000 }, lines);
    const id = await approvedTransfer(env, wallet, '1');
    const waiting = await waitTransfer(env, id, (t) => t.status !== 'PENDING_SIGNATURE' || t.sub_status !== null);
    expect(waiting, JSON.stringify(waiting)).toMatchObject({
      status: 'PENDING_SIGNATURE',
      sub_status: 'WAITING_FOR_SIGNERS',
    });
    const missing = [env.serverIds[1], env.serverIds[2]];
    const error = await errorOf(env, id);
    expect(error).toMatch(/^WAITING_FOR_SIGNERS: server \S+ unreachable/);
    expect(missing.some((s) => error.includes(`server ${s} unreachable`))).toBe(true);
    // retried (with backoff) while waiting, and said once
    for (let i = 0; i < 200 && retries(lines, id) < 3; i++) await new Promise((r) => setTimeout(r, 100));
    expect(retries(lines, id)).toBeGreaterThanOrEqual(3);
    expect((await env.api.getTransfer(id)).status).toBe('PENDING_SIGNATURE');

    await startNode(env.nodes[1]!);
    const sent = await waitTransfer(env, id, (t) => ['SENT', 'FAILED', 'REJECTED'].includes(t.status), 90_000);
    expect(sent, JSON.stringify(sent)).toMatchObject({ status: 'SENT', sub_status: null });
    expect(await errorOf(env, id)).toBeNull();
    const events = await eventsOf(env, id);
    expect(events.filter((e) => e.includes('WAITING_FOR_SIGNERS'))).toEqual([
      'TRANSFER_UPDATED PENDING_SIGNATURE WAITING_FOR_SIGNERS',
    ]);
    expect(events.filter((e) => e.startsWith('TRANSFER_FAILED'))).toEqual([]);
    await p.stop();
  }, 300_000);

  it('the signing window over → FAILED / SIGNING_WINDOW_EXPIRED saying what was missing', async () => {
    const { env, wallet } = setup;
    await Promise.all([stopNode(env.nodes[1]!, 'SIGKILL'), stopNode(env.nodes[2]!, 'SIGKILL')]);
    // the pipeline's clock runs 2 h ahead once `skew` is set: the 1 h window is then over
    let skew = 0;
    const p = pipeline(env, { retryInitialMs: 300, retryMaxMs: 1000 }, [], () => new Date(Date.now() + skew));
    const id = await approvedTransfer(env, wallet, '1');
    const waiting = await waitTransfer(env, id, (t) => t.status !== 'PENDING_SIGNATURE' || t.sub_status !== null);
    expect(waiting.sub_status, JSON.stringify(waiting)).toBe('WAITING_FOR_SIGNERS');
    skew = 2 * 3600_000;
    const failed = await waitTransfer(env, id, (t) => t.status !== 'PENDING_SIGNATURE');
    expect(failed, JSON.stringify(failed)).toMatchObject({ status: 'FAILED', sub_status: 'SIGNING_WINDOW_EXPIRED' });
    expect(await errorOf(env, id)).toMatch(
      /^SIGNING_WINDOW_EXPIRED: no signature within 3600 s; server \S+ unreachable/,
    );
    const events = await eventsOf(env, id);
    expect(events.filter((e) => e.startsWith('TRANSFER_FAILED'))).toEqual([
      'TRANSFER_FAILED FAILED SIGNING_WINDOW_EXPIRED',
    ]);
    await p.stop();
  }, 300_000);
});

describe('a signer killed mid-ceremony', () => {
  // its own environment: every signer running (the tests above kill some)
  const setup = useFaultsEnv('faults-killed');

  it('its stream closing ends the ceremony at once; the retry signs with the live signers → SENT', async () => {
    const { env, wallet } = setup;
    const [s0, s1] = [env.nodes[0]!, env.nodes[1]!];
    const lines: string[] = [];
    // s0 frozen: the ceremony {s0, s1} cannot progress until s1 has been killed inside it
    freeze(s0);
    try {
      const before = readLog(s1).length;
      const p = pipeline(env, { signDeadlineMs: 600_000, retryInitialMs: 300, retryMaxMs: 1000 }, lines);
      const id = await approvedTransfer(env, wallet, '1');
      for (let i = 0; i < 300 && !readLog(s1).slice(before).includes('"ceremony started"'); i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(readLog(s1).slice(before)).toContain('"ceremony started"');
      await stopNode(s1, 'SIGKILL');
      resume(s0);
      const sent = await waitTransfer(env, id, (t) => ['SENT', 'FAILED', 'REJECTED'].includes(t.status), 90_000);
      expect(sent.status, JSON.stringify(sent)).toBe('SENT');
      // the failure seen was s1's, as unavailable (a retry), not a deadline
      const retried = lines.filter((l) => l.includes('transfer signing will be retried') && l.includes(id));
      expect(retried.length).toBeGreaterThanOrEqual(1);
      expect(retried[0]).toContain(`server ${env.serverIds[1]} unreachable`);
      await p.stop();
    } finally {
      resume(s0);
    }
  }, 300_000);
});
