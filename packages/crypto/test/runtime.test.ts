import {
  type BroadcastAuth,
  broadcastStatementBytes,
  type Canonical,
  commit,
  echoHash,
  equalBytes,
  type IncomingMessage,
  Party,
  ProtocolAbort,
  type ProtocolSpec,
  simulate,
  verifyCommitment,
} from '@custodian/crypto';
import { ed25519AuthsForTest, seededRandom } from '@custodian/crypto/testing';
import { describe, expect, it } from 'vitest';

// A small commit–reveal coin toss with a mixed round (broadcast + p2p), exercising every runtime feature.
interface S {
  r: Uint8Array;
  randomness: Uint8Array;
  commitments: Map<number, Uint8Array>;
  p2pSum: bigint;
}
const TAG = 'custodian.test.cointoss';
const sessionId = new Uint8Array(32).fill(1);

function parseBytes32(body: unknown): Uint8Array {
  if (!(body instanceof Uint8Array) || body.length !== 32) throw new RangeError('expected 32 bytes');
  return body;
}

const coinToss: ProtocolSpec<S, Uint8Array> = {
  name: TAG,
  start(ctx) {
    const r = ctx.rng(32);
    const { commitment, randomness } = commit({ tag: TAG, sessionId: ctx.sessionId, committer: ctx.self }, r, ctx.rng);
    const p2p = new Map<number, Canonical>();
    for (let j = 0; j < ctx.n; j++) if (j !== ctx.self) p2p.set(j, BigInt(ctx.self * 10 + j));
    return { state: { r, randomness, commitments: new Map(), p2pSum: 0n }, send: { broadcast: commitment, p2p } };
  },
  rounds: [
    {
      name: `${TAG}.round1`,
      broadcast: parseBytes32,
      p2p: (body) => {
        if (typeof body !== 'bigint') throw new TypeError('expected bigint');
        return body;
      },
      process(state, received) {
        for (const [j, m] of received) {
          state.commitments.set(j, m.broadcast as Uint8Array);
          state.p2pSum += m.p2p as bigint;
        }
        return { state, send: { broadcast: { r: state.r, u: state.randomness } } };
      },
    },
    {
      name: `${TAG}.round2`,
      broadcast: (body) => {
        const b = body as { r?: unknown; u?: unknown };
        return { r: parseBytes32(b?.r), u: parseBytes32(b?.u) };
      },
      process(state, received, ctx) {
        const out = Uint8Array.from(state.r);
        for (const [j, m] of received) {
          const { r, u } = m.broadcast as { r: Uint8Array; u: Uint8Array };
          if (
            !verifyCommitment({ tag: TAG, sessionId: ctx.sessionId, committer: j }, state.commitments.get(j)!, r, u)
          ) {
            throw new ProtocolAbort({ party: j, reason: 'bad decommitment' });
          }
          for (let k = 0; k < 32; k++) out[k] = (out[k] as number) ^ (r[k] as number);
        }
        return { output: out };
      },
    },
  ],
};

function parties(n: number, sid = sessionId, signed = false) {
  const { auths } = ed25519AuthsForTest(n);
  return Array.from(
    { length: n },
    (_, i) =>
      new Party(coinToss, {
        self: i,
        n,
        sessionId: sid,
        rng: seededRandom(`party-${i}`),
        ...(signed ? { auth: auths[i] } : {}),
      }),
  );
}

describe('round runtime: honest runs', () => {
  it.each([2, 3, 5])('n=%i parties agree on the output', (n) => {
    const res = simulate(parties(n));
    expect(res.aborted.every((a) => a === undefined)).toBe(true);
    const first = res.outputs[0] as Uint8Array;
    expect(first).toBeInstanceOf(Uint8Array);
    for (const o of res.outputs) expect(equalBytes(o as Uint8Array, first)).toBe(true);
    expect(res.rejections).toEqual([]);
  });

  it('buffers messages of future rounds delivered out of order', () => {
    const ps = parties(3);
    const queue: IncomingMessage[][] = [[], [], []];
    const deliverAll = (msgs: readonly IncomingMessage[]) => {
      for (const m of msgs) {
        for (let to = 0; to < 3; to++) {
          if (to === m.from || (m.kind === 'p2p' && m.to !== to)) continue;
          queue[to]?.push(m);
        }
      }
    };
    for (const p of ps) deliverAll(p.start().messages);
    // deliver everything newest-first for party 2, normal order for others, until quiet
    for (let guard = 0; guard < 100; guard++) {
      let progressed = false;
      for (let to = 0; to < 3; to++) {
        const q = queue[to] as IncomingMessage[];
        while (q.length) {
          const m = (to === 2 ? q.pop() : q.shift()) as IncomingMessage;
          const step = ps[to]?.receive(m);
          expect(step?.rejected).toBeUndefined();
          deliverAll(step?.messages ?? []);
          progressed = true;
        }
      }
      if (!progressed) break;
    }
    expect(ps.map((p) => p.status)).toEqual(['done', 'done', 'done']);
  });
});

describe('round runtime: input collector', () => {
  function started() {
    const ps = parties(3);
    const first = ps.map((p) => p.start().messages);
    const toParty1 = first.flatMap((ms) => ms.filter((m) => m.from !== 1 && (m.kind === 'broadcast' || m.to === 1)));
    return { ps, first, toParty1 };
  }

  it('rejects a message of another session', () => {
    const { ps, toParty1 } = started();
    const m = { ...(toParty1[0] as IncomingMessage), sessionId: new Uint8Array(32).fill(9) };
    expect(ps[1]?.receive(m).rejected?.reason).toBe('wrong session');
  });

  it('rejects unknown senders and messages from self', () => {
    const { ps, toParty1 } = started();
    const m = toParty1[0] as IncomingMessage;
    expect(ps[1]?.receive({ ...m, from: 7 }).rejected?.reason).toBe('unknown sender');
    expect(ps[1]?.receive({ ...m, from: -1 }).rejected?.reason).toBe('unknown sender');
    expect(ps[1]?.receive({ ...m, from: 1 }).rejected?.reason).toBe('message from self');
  });

  it('rejects unknown rounds, wrong kinds and misaddressed p2p', () => {
    const { ps, toParty1 } = started();
    const m = toParty1[0] as IncomingMessage;
    expect(ps[1]?.receive({ ...m, round: 9 }).rejected?.reason).toBe('unknown round');
    expect(ps[1]?.receive({ ...m, round: 1, kind: 'p2p', to: 1 }).rejected?.reason).toBe('round 1 has no p2p part');
    const p2p = toParty1.find((x) => x.kind === 'p2p') as IncomingMessage;
    expect(ps[1]?.receive({ ...p2p, to: 2 }).rejected?.reason).toBe('p2p message not addressed to this party');
    expect(ps[1]?.receive({ ...m, kind: 'nope' as 'p2p' }).rejected?.reason).toBe('unknown kind');
    expect(ps[1]?.receive(null as unknown as IncomingMessage).rejected?.reason).toBe('not a message');
  });

  it('rejects an identical duplicate and a stale replay, and aborts on a conflicting duplicate', () => {
    const { ps, toParty1 } = started();
    const m = toParty1[0] as IncomingMessage;
    expect(ps[1]?.receive(m).rejected).toBeUndefined();
    expect(ps[1]?.receive(m).rejected?.reason).toBe('duplicate message');
    // deliver the rest: party 1 moves to round 1, so a replay of round 0 is stale
    for (const x of toParty1.slice(1)) ps[1]?.receive(x);
    expect(ps[1]?.round).toBe(1);
    expect(ps[1]?.receive(m).rejected?.reason).toBe('stale round (replay or late duplicate)');

    const { ps: ps2, toParty1: t2 } = started();
    const b = t2.find((x) => x.kind === 'broadcast' && x.from === 0) as IncomingMessage;
    ps2[1]?.receive(b);
    const step = ps2[1]?.receive({ ...b, body: new Uint8Array(32).fill(3) });
    expect(step?.aborted?.culprits).toMatchObject([
      { party: 0, reason: 'sent two different broadcast messages in round 0' },
    ]);
  });

  it('aborts naming the sender of a malformed body', () => {
    const res = simulate(parties(3), {
      intercept: (d) =>
        d.message.from === 2 && d.message.kind === 'broadcast' && d.message.round === 0
          ? [{ ...d, message: { ...d.message, body: new Uint8Array(5) } }]
          : [d],
    });
    for (const i of [0, 1]) {
      expect(res.aborted[i]?.culprits[0]?.party).toBe(2);
      expect(res.aborted[i]?.culprits[0]?.reason).toMatch(/malformed message/);
    }
  });

  it('names the party whose decommitment fails', () => {
    const res = simulate(parties(3), {
      intercept: (d) =>
        d.message.from === 1 && d.message.round === 1
          ? [{ ...d, message: { ...d.message, body: { r: new Uint8Array(32), u: new Uint8Array(32) } } }]
          : [d],
    });
    expect(res.aborted[0]?.culprits).toMatchObject([{ party: 1, reason: 'bad decommitment' }]);
    expect(res.aborted[2]?.culprits).toMatchObject([{ party: 1, reason: 'bad decommitment' }]);
  });
});

/** A cheater's re-signed broadcast: the statement signature of `m`'s (new) body under `auth`. */
function resign(auth: BroadcastAuth, m: IncomingMessage): IncomingMessage {
  const hash = echoHash(m.sessionId, m.round, m.from, m.body);
  return { ...m, statementSignature: auth.sign(broadcastStatementBytes(TAG, m.sessionId, m.round, m.from, hash)) };
}

describe('round runtime: reliable broadcast by echo', () => {
  it('detects a broadcast equivocated in round 0 and names the sender (signed statements)', () => {
    // party 0 sends one commitment to party 1 and another to party 2, each validly signed
    const { auths } = ed25519AuthsForTest(3);
    const res = simulate(parties(3, sessionId, true), {
      intercept: (d) =>
        d.message.from === 0 && d.message.kind === 'broadcast' && d.message.round === 0 && d.to === 2
          ? [
              {
                ...d,
                message: resign(auths[0] as BroadcastAuth, { ...d.message, body: new Uint8Array(32).fill(0xee) }),
              },
            ]
          : [d],
    });
    for (const i of [1, 2]) {
      expect(res.aborted[i]?.culprits.map((c) => c.party)).toEqual([0]);
      expect(res.aborted[i]?.culprits[0]?.check).toBe('echo.equivocation');
      expect(res.aborted[i]?.culprits[0]?.evidence?.statements).toHaveLength(2);
      expect(res.aborted[i]?.culprits[0]?.reason).toMatch(/equivocated broadcast in round 0/);
    }
    expect(res.outputs).toEqual([undefined, undefined, undefined]);
  });

  it('holds the output of a final broadcast round until every echo agrees', () => {
    // party 0 sends a wrong decommitment to party 2 only, in the final round: party 2 names it,
    // and party 1 (which saw a valid one) never releases an output without party 2's echo.
    const res = simulate(parties(3), {
      intercept: (d) =>
        d.message.from === 0 && d.message.round === 1 && d.to === 2
          ? [{ ...d, message: { ...d.message, body: { r: new Uint8Array(32), u: new Uint8Array(32) } } }]
          : [d],
    });
    expect(res.aborted[2]?.culprits).toMatchObject([{ party: 0, reason: 'bad decommitment' }]);
    expect(res.outputs[1]).toBeUndefined();
    expect(res.outputs[0]).toBeUndefined();
  });

  it('a party that lies in its echo about our own broadcast is named', () => {
    const res = simulate(parties(3), {
      intercept: (d) => {
        if (d.message.from !== 2 || d.message.round !== 1 || !d.message.echo) return [d];
        const echo = d.message.echo.map((h, j) => (j === d.to ? new Uint8Array(32).fill(7) : h));
        return [{ ...d, message: { ...d.message, echo } }];
      },
    });
    expect(res.aborted[0]?.culprits[0]).toMatchObject({
      party: 2,
      reason: 'false broadcast echo for party 0 in round 1',
    });
    expect(res.aborted[1]?.culprits[0]?.party).toBe(2);
  });

  it('a missing echo is blamed on its sender', () => {
    const res = simulate(parties(3), {
      intercept: (d) => {
        if (d.message.from !== 1 || d.message.round !== 1) return [d];
        const { echo: _echo, ...rest } = d.message;
        return [{ ...d, message: rest }];
      },
    });
    expect(res.aborted[0]?.culprits[0]?.party).toBe(1);
    expect(res.aborted[0]?.culprits[0]?.reason).toMatch(/echo/);
  });
});

describe('round runtime: lifecycle', () => {
  it('the step that completes the protocol carries the output', () => {
    const ps = parties(2);
    const queue = ps.flatMap((p) => p.start().messages);
    const outputs: unknown[] = [];
    while (queue.length) {
      const m = queue.shift() as IncomingMessage;
      const to = m.kind === 'p2p' ? (m.to as number) : 1 - m.from;
      const step = ps[to]!.receive(m);
      if (step.output !== undefined) outputs.push(step.output);
      queue.push(...step.messages);
    }
    expect(outputs).toHaveLength(2);
    expect(outputs[0]).toEqual(ps[0]!.output);
  });

  it('refuses to start twice and ignores messages after completion', () => {
    const ps = parties(2);
    const res = simulate(ps);
    expect(res.outputs[0]).toBeDefined();
    expect(() => ps[0]?.start()).toThrow(/already started/);
    const stray = { sessionId, round: 0, kind: 'broadcast', from: 1, body: new Uint8Array(32) } as const;
    expect(ps[0]?.receive(stray).rejected?.reason).toBe('protocol is done');
  });

  it('bugs in a round propagate instead of being reported as aborts', () => {
    const buggy: ProtocolSpec<null, number> = {
      name: 'buggy',
      start: () => ({ state: null, send: { broadcast: 1 } }),
      rounds: [
        {
          name: 'r1',
          broadcast: (b) => b,
          process() {
            throw new Error('bug');
          },
        },
      ],
    };
    const ps = [0, 1].map((i) => new Party(buggy, { self: i, n: 2, sessionId, rng: seededRandom('x') }));
    expect(() => simulate(ps)).toThrow('bug');
  });
});
