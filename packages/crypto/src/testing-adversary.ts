/**
 * TEST-ONLY: a broadcast adversary for the in-memory simulator (reliable broadcast with evidence,
 * issue [blame]). It controls a set of cheating parties and, following a plan, rewrites only the
 * messages those parties send: equivocate a broadcast to some receivers (validly re-signed, as a
 * party holding its own key can), send a false echo hash (keeping, garbling or replaying another
 * round's signature), drop or truncate the echo signatures, garble a statement signature, or send a
 * conflicting duplicate. Honest parties' messages are never touched (the transport authenticates
 * senders). Exposed through `@custodian/crypto/testing`.
 */
import { broadcastStatementBytes, echoHash, Party } from './runtime/party.js';
import { type Delivery, type Interceptor, type SimulationResult, simulate } from './runtime/simulator.js';
import type { BroadcastAuth, IncomingMessage, PartyIndex, ProtocolSpec } from './runtime/types.js';
import { ed25519AuthsForTest, seededRandom } from './testing.js';

/** One cheat. */
export type CheatKind =
  | 'equivocate'
  | 'false-echo'
  | 'false-echo-garbage-sig'
  | 'replay-statement'
  | 'drop-echo-signatures'
  | 'bad-statement-signature'
  | 'conflicting-duplicate';

/** Every {@link CheatKind}, for generators. */
export const CHEAT_KINDS: readonly CheatKind[] = [
  'equivocate',
  'false-echo',
  'false-echo-garbage-sig',
  'replay-statement',
  'drop-echo-signatures',
  'bad-statement-signature',
  'conflicting-duplicate',
];

/** A cheat by `cheater` on its messages of `round`, to the receivers whose bit is set in `receivers`. */
export interface Cheat {
  readonly cheater: PartyIndex;
  readonly round: number;
  readonly kind: CheatKind;
  /** Bit i set: the cheat applies to the delivery to party i. */
  readonly receivers: number;
  /** The party an echo lie is about (taken modulo n; the cheater itself is skipped). */
  readonly about: number;
}

/** What the adversary did, for the assertions. */
export interface AdversaryLog {
  /** Cheaters that sent, to at least one receiver, a broadcast body other than their real one, validly signed. */
  readonly equivocated: Set<PartyIndex>;
  /** Number of deliveries rewritten. */
  applied: number;
}

/** Flip one bit of the first byte string found in a canonical value (depth-first); else wrap it. */
function mutate(body: unknown): unknown {
  let done = false;
  const walk = (v: unknown): unknown => {
    if (done) return v;
    if (v instanceof Uint8Array && v.length > 0) {
      done = true;
      const c = Uint8Array.from(v);
      c[c.length - 1] = (c[c.length - 1] as number) ^ 1;
      return c;
    }
    if (typeof v === 'bigint') {
      done = true;
      return v + 1n;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object' && !(v instanceof Uint8Array)) {
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, walk(x)]));
    }
    return v;
  };
  const out = walk(body);
  return done ? out : { altered: true };
}

/**
 * The interceptor of a plan of cheats. `auths[i]` is party i's BroadcastAuth (the adversary uses
 * only the cheaters' to sign). `protocol` is the ProtocolSpec name (statements are bound to it).
 */
export function broadcastAdversaryForTest(
  protocol: string,
  n: number,
  auths: readonly BroadcastAuth[],
  plan: readonly Cheat[],
): { intercept: Interceptor; log: AdversaryLog } {
  const log: AdversaryLog = { equivocated: new Set(), applied: 0 };
  /** Statement (hash, signature) of every broadcast seen, by `${round}/${from}`. */
  const seen = new Map<string, { hash: Uint8Array; signature: Uint8Array }>();
  const sign = (m: IncomingMessage, body: unknown): IncomingMessage => {
    const hash = echoHash(m.sessionId, m.round, m.from, body as never);
    const auth = auths[m.from] as BroadcastAuth;
    return {
      ...m,
      body: body as never,
      statementSignature: auth.sign(broadcastStatementBytes(protocol, m.sessionId, m.round, m.from, hash)),
    };
  };
  const intercept: Interceptor = (d: Delivery) => {
    const m = d.message;
    if (m.kind === 'broadcast' && m.statementSignature) {
      seen.set(`${m.round}/${m.from}`, {
        hash: echoHash(m.sessionId, m.round, m.from, m.body),
        signature: m.statementSignature,
      });
    }
    const cheat = plan.find((c) => c.cheater === m.from && c.round === m.round && (c.receivers >> d.to) & 1);
    if (!cheat) return [d];
    let about = ((cheat.about % n) + n) % n;
    if (about === m.from) about = (about + 1) % n;
    const echo = m.echo ? [...m.echo] : undefined;
    const sigs = m.echoSignatures ? [...m.echoSignatures] : undefined;
    const out = (message: IncomingMessage): Delivery[] => {
      log.applied++;
      return [{ to: d.to, message }];
    };
    switch (cheat.kind) {
      case 'equivocate':
        if (m.kind !== 'broadcast') return [d];
        log.equivocated.add(m.from);
        return out(sign(m, mutate(m.body)));
      case 'false-echo':
      case 'false-echo-garbage-sig':
      case 'replay-statement': {
        if (!echo || echo.length !== n) return [d];
        echo[about] = new Uint8Array(32).fill(0x5a);
        if (cheat.kind === 'false-echo-garbage-sig' && sigs) sigs[about] = new Uint8Array(64).fill(0xa5);
        if (cheat.kind === 'replay-statement') {
          if (!sigs) return [d];
          const other = [...seen.entries()].find(
            ([k]) => k.endsWith(`/${about}`) && k !== `${m.echoRound ?? -1}/${about}`,
          )?.[1];
          if (!other) return [d];
          echo[about] = other.hash;
          sigs[about] = other.signature;
        }
        return out({ ...m, echo, ...(sigs ? { echoSignatures: sigs } : {}) });
      }
      case 'drop-echo-signatures': {
        if (!sigs) return [d];
        const { echoSignatures: _dropped, ...rest } = m;
        return out(d.to % 2 === 0 ? rest : { ...m, echoSignatures: sigs.slice(1) });
      }
      case 'bad-statement-signature':
        if (m.kind !== 'broadcast') return [d];
        return out({ ...m, statementSignature: new Uint8Array(64).fill(0x33) });
      case 'conflicting-duplicate': {
        log.applied++;
        const other = m.kind === 'broadcast' ? sign(m, mutate(m.body)) : { ...m, body: mutate(m.body) as never };
        return [d, { to: d.to, message: other }];
      }
    }
  };
  return { intercept, log };
}

/**
 * The violations of "no adversary can get an honest party named" in one simulated run (empty: none):
 * an honest party aborted naming an honest party, or naming nobody (with signed statements every
 * abort names someone); no honest party finished or aborted although some are still waiting; a run
 * without any cheat applied did not finish everywhere.
 */
export function blameViolationsForTest(
  result: SimulationResult<unknown>,
  cheaters: readonly PartyIndex[],
  log: AdversaryLog,
  statuses: readonly string[],
): string[] {
  const bad: string[] = [];
  const cheat = new Set(cheaters);
  const honest = statuses.map((_, i) => i).filter((i) => !cheat.has(i));
  for (const i of honest) {
    const a = result.aborted[i];
    if (!a) continue;
    if (a.culprits.length === 0) bad.push(`honest ${i} aborted naming nobody: ${a.reason}`);
    for (const c of a.culprits) {
      if (!cheat.has(c.party)) bad.push(`honest ${i} named honest ${c.party}: ${c.reason} (${c.check})`);
    }
  }
  const settled = honest.filter((i) => statuses[i] === 'done' || statuses[i] === 'aborted');
  if (settled.length === 0) bad.push('every honest party is left waiting');
  if (log.applied === 0 && honest.some((i) => statuses[i] !== 'done')) bad.push('an honest run did not finish');
  return bad;
}

/**
 * Run `n` parties of `spec(i)` with real Ed25519 statements ({@link ed25519AuthsForTest}) under the
 * adversary of `plan`, and return {@link blameViolationsForTest} (empty: no honest party named).
 */
export function adversarialRunForTest<S, O>(
  spec: (i: PartyIndex) => ProtocolSpec<S, O>,
  n: number,
  sessionId: Uint8Array,
  cheaters: readonly PartyIndex[],
  plan: readonly Cheat[],
  seed: string,
): string[] {
  const { auths } = ed25519AuthsForTest(n);
  const parties = Array.from(
    { length: n },
    (_, i) => new Party(spec(i), { self: i, n, sessionId, rng: seededRandom(`${seed}:${i}`), auth: auths[i] }),
  );
  const { intercept, log } = broadcastAdversaryForTest(spec(0).name, n, auths, plan);
  const result = simulate(parties, { intercept });
  return blameViolationsForTest(
    result as SimulationResult<unknown>,
    cheaters,
    log,
    parties.map((p) => p.status),
  );
}
