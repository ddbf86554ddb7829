/**
 * Review of issue #27 item 2 ("a retry after a party aborted … picks another set when one
 * exists"): a server signer that aborts every signing ceremony it is in without blaming anyone (a
 * broken or hostile signer; here: the REAL signer 1 gets an AbortCeremony for each SIGN ceremony
 * it is invited to, as soon as the gateway records the attempt, and answers ABORTED like any
 * aborted ceremony). The others are then aborted by the gateway. A 2-of-3 key whose default set
 * {signer 0, signer 1} contains it: the retry must leave signer 1 out and sign with
 * {signer 0, signer 2} → SENT — not retry the same set until the signing window ends
 * (FAILED / SIGNING_WINDOW_EXPIRED) although a working set exists. Signer 1 is not blamed.
 */
import { describe, expect, it } from 'vitest';
import type { NodeSpec } from '../../signer/test/cluster.js';
import { createSignerGateway } from '../src/signing/gateway.js';
import { evidenceSignFields } from '../src/transfers/evidence.js';
import { DEFAULT_PIPELINE_OPTIONS, TransferPipeline } from '../src/transfers/pipeline.js';
import { approvedTransfer, useFaultsEnv, waitTransfer } from './faults-harness.js';

describe('a signer that aborts every ceremony without blame', () => {
  const setup = useFaultsEnv('faults-aborting');

  it('the retry leaves it out (another set exists) → SENT', async () => {
    const { env, wallet } = setup;
    const s1 = env.nodes[1]!;
    const s1Id = env.serverIds[1]!;
    const gateway = createSignerGateway({
      control: env.control,
      evidenceFields: evidenceSignFields,
      directory: {
        async peerIdOf(party) {
          const i = env.serverIds.indexOf(party.id);
          if (party.kind !== 'server' || i < 0) throw new Error(`unknown party ${party.id}`);
          return (env.nodes[i] as NodeSpec).peerId;
        },
      },
      attempts: {
        async begin(a) {
          // signer 1 aborts the ceremony (its AbortCeremony may overtake the start: the runner remembers it)
          if (a.parties.some((p) => p.id === s1Id))
            void env.control
              .send(
                s1.peerId,
                { abort: { ceremonyId: Buffer.from(a.ceremonyId, 'hex'), reason: 'signer 1 aborts' } },
                10_000,
              )
              .catch(() => undefined);
          return undefined;
        },
        async finish() {},
      },
    });
    const lines: string[] = [];
    const p = new TransferPipeline({
      db: env.coord.db,
      clock: () => new Date(),
      chains: env.coord.transfers.chains,
      service: env.coord.transfers.service,
      gateway,
      options: {
        ...DEFAULT_PIPELINE_OPTIONS,
        pollMs: 200,
        confirmationRecheckMs: 200,
        retryInitialMs: 300,
        retryMaxMs: 1000,
        signDeadlineMs: 60_000,
        log: (level, msg, fields) => lines.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`),
      },
    });
    env.pipelines.push(p);
    p.start();
    const id = await approvedTransfer(env, wallet, '1');
    const done = await waitTransfer(env, id, (t) => ['SENT', 'FAILED', 'REJECTED'].includes(t.status), 60_000).catch(
      async () => env.api.getTransfer(id),
    );
    const retried = lines.filter((l) => l.includes('transfer signing will be retried') && l.includes(id));
    expect(done.status, `${JSON.stringify(done)}; retries: ${retried.length}`).toBe('SENT');
    expect(retried.length).toBe(1);
    expect(retried[0]).toContain('ceremony aborted without a culprit');
    await p.stop();
  }, 300_000);
});
