/**
 * Review of issue #27 item 2 (signing window vs CHAIN_UNAVAILABLE): a transfer that waited for a
 * chain node (PENDING_SIGNATURE / CHAIN_UNAVAILABLE: no coordinator had a node for its chain; it
 * "waits and goes on once one runs") longer than the signing window must not end FAILED /
 * SIGNING_WINDOW_EXPIRED the moment a node is there, before any signer was asked: the window
 * counts the wait for signers, so it starts when the chain is reachable.
 *
 * REAL components (faults-harness). The first pipeline runs without any chain node (an empty
 * ChainRegistry: it marks the transfer CHAIN_UNAVAILABLE); the second has the chain and a clock
 * two hours ahead (the 1 h window since the transfer entered PENDING_SIGNATURE is over).
 */
import { describe, expect, it } from 'vitest';
import { ChainRegistry } from '../src/transfers/chains.js';
import { DEFAULT_PIPELINE_OPTIONS, TransferPipeline } from '../src/transfers/pipeline.js';
import { approvedTransfer, pipeline, useFaultsEnv, waitTransfer } from './faults-harness.js';

describe('the signing window and a chain without a node', () => {
  const setup = useFaultsEnv('faults-chain-window');

  it('a transfer that waited for a chain node past the window is signed once the node is there → SENT', async () => {
    const { env, wallet } = setup;
    const id = await approvedTransfer(env, wallet, '1');
    const noNode = new TransferPipeline({
      db: env.coord.db,
      clock: () => new Date(),
      chains: new ChainRegistry({}),
      service: env.coord.transfers.service,
      gateway: env.gateway,
      options: { ...DEFAULT_PIPELINE_OPTIONS, log: () => {} },
    });
    await noNode.tick();
    const marked = await env.api.getTransfer(id);
    expect(marked, JSON.stringify(marked)).toMatchObject({
      status: 'PENDING_SIGNATURE',
      sub_status: 'CHAIN_UNAVAILABLE',
    });

    // two hours later, a coordinator with a node for the chain (and every signer up)
    const p = pipeline(env, {}, [], () => new Date(Date.now() + 2 * 3600_000));
    const done = await waitTransfer(env, id, (t) => ['SENT', 'FAILED', 'REJECTED'].includes(t.status), 90_000);
    expect(done, JSON.stringify(done)).toMatchObject({ status: 'SENT', sub_status: null });
    await p.stop();
  }, 300_000);
});
