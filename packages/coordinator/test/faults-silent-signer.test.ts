/**
 * Review of issue #27 item 2 (hostile / hung signer): a server signer that keeps its connection
 * open but answers nothing (SIGSTOP: a hung process, or a hostile one that accepts and stays
 * silent). A 2-of-3 key whose default signing set {signer 0, signer 1} contains it: the first
 * attempt ends at its deadline naming signer 1 unavailable; the retry must pick the set of the two
 * live signers {signer 0, signer 2} and reach SENT — not pick signer 1 again because its libp2p
 * connection is still "up", nor because the memory of its failure was dated from the attempt's
 * start (and so had run out before the ceremony even ended), which made every attempt time out on
 * the same signer until the signing window ended in FAILED / SIGNING_WINDOW_EXPIRED.
 */
import { describe, expect, it } from 'vitest';
import { approvedTransfer, freeze, pipeline, resume, useFaultsEnv, waitTransfer } from './faults-harness.js';

describe('a connected signer that answers nothing', () => {
  const setup = useFaultsEnv('faults-silent', { availability: true });

  it('the retry avoids it (another set exists) → SENT', async () => {
    const { env, wallet } = setup;
    const s1 = env.nodes[1]!;
    freeze(s1);
    try {
      const lines: string[] = [];
      const p = pipeline(env, { signDeadlineMs: 3000, retryInitialMs: 300, retryMaxMs: 1000 }, lines);
      const id = await approvedTransfer(env, wallet, '1');
      const done = await waitTransfer(env, id, (t) => ['SENT', 'FAILED', 'REJECTED'].includes(t.status), 90_000).catch(
        async () => env.api.getTransfer(id),
      );
      const retried = lines.filter((l) => l.includes('transfer signing will be retried') && l.includes(id));
      expect(done.status, `${JSON.stringify(done)}; retries: ${retried.length}`).toBe('SENT');
      // the one failure seen was signer 1's (no answer), and it was not asked again
      expect(retried.length).toBe(1);
      expect(retried[0]).toContain(`server ${env.serverIds[1]} unreachable`);
      await p.stop();
    } finally {
      resume(s1);
    }
  }, 300_000);
});
