/**
 * Observations of the signing room in the metrics (metrics/registry.ts `SigningMetrics`): one SIGN
 * ceremony (called by signing/gateway.ts), and the master key ceremony client wrapped by the
 * composition root.
 */
import { CeremonyAbortedError, type CeremonyClient } from '../ceremony.js';
import type { GatewaySignRequest, GatewaySignResult } from '../signing/gateway.js';
import { algorithmLabel, outcomeLabel, type SigningMetrics } from './registry.js';

/**
 * One SIGN ceremony: its latency since `began` (`performance.now()`), its outcome, and the parties
 * an identifiable abort blames. Nothing when `m` is undefined.
 */
export function observeSign(
  m: SigningMetrics | undefined,
  algorithm: GatewaySignRequest['algorithm'],
  pooled: boolean,
  outcome: string,
  result: GatewaySignResult,
  began: number,
): void {
  if (m === undefined) return;
  const o = outcomeLabel(outcome);
  m.duration.observe(
    { algorithm: algorithmLabel(algorithm), presignature: pooled ? 'pooled' : 'cold', outcome: o },
    (performance.now() - began) / 1000,
  );
  m.ceremonies.inc({ kind: 'sign', outcome: o });
  if (!result.ok && result.reason === 'ABORTED')
    for (const p of result.culprits) m.blame.inc({ kind: 'sign', party: `${p.kind}:${p.id.toLowerCase()}` });
}

/**
 * The master key ceremony client `client`, counting each DKG's outcome (`kind="master_key"`: ok,
 * aborted, deadline_exceeded (its signal fired: deadline or shutdown), failed) and the parties an abort blames. The result and errors are unchanged.
 */
export function observedCeremonyClient(client: CeremonyClient, m: SigningMetrics): CeremonyClient {
  return {
    async runDkg(req) {
      try {
        const out = await client.runDkg(req);
        m.ceremonies.inc({ kind: 'master_key', outcome: 'ok' });
        return out;
      } catch (e) {
        if (e instanceof CeremonyAbortedError) {
          m.ceremonies.inc({ kind: 'master_key', outcome: 'aborted' });
          for (const id of e.culprits) m.blame.inc({ kind: 'master_key', party: id.toLowerCase() });
        } else {
          m.ceremonies.inc({ kind: 'master_key', outcome: req.signal.aborted ? 'deadline_exceeded' : 'failed' });
        }
        throw e;
      }
    },
  };
}
