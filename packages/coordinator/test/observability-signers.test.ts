/**
 * Issue #29 "Observability" with real signer processes (faults-harness.ts: three signers, a 2-of-3
 * ECDSA master key, the TRON chain model over HTTP): `/readyz` is 200 while the threshold of the
 * key's signers is connected and the chain node answers, 503 naming the check when two signers are
 * killed or the node goes away; after a transfer signed and sent, `/metrics` shows the counts that
 * moved (transfers per status, the machine's moves, time in status, signing latency and ceremony
 * outcome, the HTTP request that created it).
 */
import { describe, expect, it } from 'vitest';
import { type NodeSpec, startNode, stopNode } from '../../signer/test/cluster.js';
import { createSignerGateway } from '../src/signing/gateway.js';
import { evidenceSignFields } from '../src/transfers/evidence.js';
import { DEFAULT_PIPELINE_OPTIONS, TransferPipeline } from '../src/transfers/pipeline.js';
import { approvedTransfer, type FaultsEnv, useFaultsEnv, waitTransfer } from './faults-harness.js';
import type { Json } from './helpers.js';
import { type Exposition, metricValue, parseExposition } from './metrics-text.js';

async function readyz(env: FaultsEnv): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${env.api.url}/readyz`);
  return { status: res.status, body: await res.json() };
}

/** Poll `/readyz` (every 200 ms, up to 60 s) until it answers `status`. */
async function readyzUntil(env: FaultsEnv, status: number): Promise<Json> {
  let last: { status: number; body: Json } | undefined;
  for (let i = 0; i < 300; i++) {
    last = await readyz(env);
    if (last.status === status) return last.body;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`readyz never answered ${status}: ${JSON.stringify(last?.body)}`);
}

async function scrape(env: FaultsEnv): Promise<Exposition> {
  const res = await fetch(`${env.api.url}/metrics`);
  expect(res.status).toBe(200);
  return parseExposition(await res.text());
}

const check = (body: Json, name: string) => body.checks.find((c: { name: string }) => c.name === name);

describe('readyz and metrics with real signers and a chain node', () => {
  const setup = useFaultsEnv('observe', { availability: true, health: { cacheMs: 0, timeoutMs: 2000 } });

  it('readyz follows the signers and the node; a transfer moves the metrics', async () => {
    const { env, wallet } = setup;
    const [mk] = await env.coord.signers.masterKeys.listMasterKeys();
    const signersCheck = `signers:${mk!.master_key_id}`;

    const up = await readyzUntil(env, 200);
    expect(up.status).toBe('ready');
    expect(check(up, signersCheck)).toEqual({
      name: signersCheck,
      state: 'pass',
      reason: '3 of 4 parties connected, threshold 2',
    });
    expect(check(up, 'chain:tron-nile')).toMatchObject({ state: 'pass', reason: expect.stringMatching(/^head \d+$/) });

    // two of the three signers gone: below the threshold
    await Promise.all([stopNode(env.nodes[1]!, 'SIGKILL'), stopNode(env.nodes[2]!, 'SIGKILL')]);
    const down = await readyzUntil(env, 503);
    expect(down.status).toBe('not_ready');
    expect(check(down, signersCheck)).toEqual({
      name: signersCheck,
      state: 'fail',
      reason: '1 of 4 parties connected, threshold 2',
    });
    expect(check(down, 'database').state).toBe('pass');

    const before = await scrape(env);
    const v0 = (name: string, labels: Record<string, string>) => metricValue(before, name, labels) ?? 0;

    // one signer back; a transfer signed (the ceremony dials it) and sent, measured by the coordinator's metrics
    await startNode(env.nodes[1]!);
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
      metrics: env.coord.metrics.signing,
    });
    const p = new TransferPipeline({
      db: env.coord.db,
      clock: () => new Date(),
      chains: env.coord.transfers.chains,
      service: env.coord.transfers.service,
      gateway,
      options: { ...DEFAULT_PIPELINE_OPTIONS, pollMs: 200, retryInitialMs: 300, retryMaxMs: 1000, log: () => {} },
      metrics: env.coord.metrics.transfers,
    });
    env.pipelines.push(p);
    p.start();
    const id = await approvedTransfer(env, wallet, '1');
    const sent = await waitTransfer(env, id, (t) => ['SENT', 'FAILED', 'REJECTED'].includes(t.status), 120_000);
    expect(sent.status, JSON.stringify(sent)).toBe('SENT');
    await p.stop();
    const again = await readyzUntil(env, 200);
    expect(check(again, signersCheck)).toMatchObject({
      state: 'pass',
      reason: '2 of 4 parties connected, threshold 2',
    });

    const after = await scrape(env);
    const v = (name: string, labels: Record<string, string>) => metricValue(after, name, labels) ?? 0;
    expect(v('custodian_transfers', { status: 'SENT' })).toBe(v0('custodian_transfers', { status: 'SENT' }) + 1);
    for (const [from, to] of [
      ['PENDING', 'PENDING_APPROVAL'],
      ['PENDING_APPROVAL', 'PENDING_SIGNATURE'],
      ['PENDING_SIGNATURE', 'READY_TO_SEND'],
      ['READY_TO_SEND', 'SENT'],
    ] as const) {
      expect(v('custodian_transfer_transitions_total', { from, to }), `${from} → ${to}`).toBe(
        v0('custodian_transfer_transitions_total', { from, to }) + 1,
      );
    }
    for (const status of ['PENDING', 'PENDING_APPROVAL', 'PENDING_SIGNATURE', 'READY_TO_SEND']) {
      expect(v('custodian_transfer_status_duration_seconds_count', { status }), status).toBe(
        v0('custodian_transfer_status_duration_seconds_count', { status }) + 1,
      );
    }
    const signed = { algorithm: 'ecdsa', presignature: 'cold', outcome: 'ok' };
    expect(v('custodian_signing_duration_seconds_count', signed)).toBe(
      v0('custodian_signing_duration_seconds_count', signed) + 1,
    );
    expect(v('custodian_signing_duration_seconds_sum', signed)).toBeGreaterThan(
      v0('custodian_signing_duration_seconds_sum', signed),
    );
    expect(v('custodian_ceremonies_total', { kind: 'sign', outcome: 'ok' })).toBe(
      v0('custodian_ceremonies_total', { kind: 'sign', outcome: 'ok' }) + 1,
    );
    const created = { method: 'POST', route: '/api/v1/profiles/:profile_id/transfers', status: '201' };
    expect(v('custodian_http_requests_total', created)).toBe(v0('custodian_http_requests_total', created) + 1);
    expect(v('custodian_chain_node_up', { chain: 'tron-nile' })).toBe(1);

    // the chain node gone: readyz 503 naming it, the gauge 0
    await env.server.close();
    const noNode = await readyzUntil(env, 503);
    expect(check(noNode, 'chain:tron-nile')).toMatchObject({ state: 'fail' });
    expect(JSON.stringify(noNode)).not.toContain(env.server.url);
    expect(metricValue(await scrape(env), 'custodian_chain_node_up', { chain: 'tron-nile' })).toBe(0);
  }, 300_000);
});
