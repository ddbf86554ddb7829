/**
 * In-memory simulator: runs n parties of a protocol to completion in one process by routing
 * messages, with an optional interceptor to drop, alter, duplicate, reorder or equivocate messages
 * (malicious-party tests). Used by every protocol's tests and benchmarks; the same parties run over
 * libp2p in the signer.
 */

import type { Party, Rejection } from './party.js';
import type { Aborted, IncomingMessage, OutgoingMessage, PartyIndex } from './types.js';

/** One delivery: the message and the party it is delivered to. */
export interface Delivery {
  readonly to: PartyIndex;
  readonly message: IncomingMessage;
}

/**
 * Interceptor: given a delivery, return the deliveries to perform instead (the same one to pass it
 * through, an empty list to drop it, several to duplicate or equivocate).
 */
export type Interceptor = (delivery: Delivery) => readonly Delivery[];

/** Result of a simulation: per party, its output or abort; and every rejection seen. */
export interface SimulationResult<O> {
  readonly outputs: (O | undefined)[];
  readonly aborted: (Aborted | undefined)[];
  readonly rejections: { to: PartyIndex; rejection: Rejection }[];
  /** Number of messages delivered. */
  readonly delivered: number;
}

/**
 * Run parties until no message is in flight. Parties whose index is in `offline` never start
 * and receive nothing (withholding). Does not throw for protocol aborts; it throws for bugs.
 * @param parties one Party per index, `parties[i].ctx.self === i`
 */
export function simulate<S, O>(
  parties: readonly Party<S, O>[],
  options: { intercept?: Interceptor; offline?: readonly PartyIndex[]; maxDeliveries?: number } = {},
): SimulationResult<O> {
  const ps = parties;
  const n = ps.length;
  const offline = new Set(options.offline ?? []);
  const queue: Delivery[] = [];
  const rejections: { to: PartyIndex; rejection: Rejection }[] = [];
  const route = (messages: readonly OutgoingMessage[]) => {
    for (const m of messages) {
      const targets = m.kind === 'p2p' ? [m.to as PartyIndex] : ps.map((_, i) => i).filter((i) => i !== m.from);
      for (const to of targets) {
        const d: Delivery = { to, message: m };
        queue.push(...(options.intercept ? options.intercept(d) : [d]));
      }
    }
  };
  for (let i = 0; i < n; i++) {
    if (offline.has(i)) continue;
    route((ps[i] as Party<S, O>).start().messages);
  }
  let delivered = 0;
  const max = options.maxDeliveries ?? 1_000_000;
  while (queue.length > 0) {
    const d = queue.shift() as Delivery;
    if (offline.has(d.to)) continue;
    if (++delivered > max) throw new Error('simulate: delivery limit exceeded');
    const step = (ps[d.to] as Party<S, O>).receive(d.message);
    if (step.rejected) rejections.push({ to: d.to, rejection: step.rejected });
    route(step.messages);
  }
  return {
    outputs: ps.map((p) => p.output),
    aborted: ps.map((p) => p.aborted),
    rejections,
    delivered,
  };
}
