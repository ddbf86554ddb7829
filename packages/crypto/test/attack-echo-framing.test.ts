/**
 * Attack tests of the reliable broadcast (issue [blame] part 1, docs/protocols.md "Reliable
 * broadcast with evidence"): a malicious party k must not get an honest party j named by lying in
 * its echo about j's broadcast. Before signed statements, `checkEcho` named j on k's word alone.
 */
import {
  type BroadcastAuth,
  broadcastStatementBytes,
  type Canonical,
  echoHash,
  type IncomingMessage,
  Party,
  ProtocolAbort,
  type ProtocolSpec,
  simulate,
} from '@custodian/crypto';
import { ed25519AuthsForTest, seededRandom } from '@custodian/crypto/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const TAG = 'custodian.test.echo-framing';
const sessionId = new Uint8Array(32).fill(9);

function bytes32(body: unknown): Uint8Array {
  if (!(body instanceof Uint8Array) || body.length !== 32) throw new RangeError('expected 32 bytes');
  return body;
}

/** Three broadcast rounds of 32 random bytes each; output: the XOR of everything seen. */
const xorSpec: ProtocolSpec<{ acc: Uint8Array; rng: (n: number) => Uint8Array }, Uint8Array> = {
  name: TAG,
  start(ctx) {
    const v = ctx.rng(32);
    return { state: { acc: Uint8Array.from(v), rng: ctx.rng }, send: { broadcast: v } };
  },
  rounds: [0, 1].map((r) => ({
    name: `${TAG}.round${r + 1}`,
    broadcast: bytes32,
    process(state: { acc: Uint8Array; rng: (n: number) => Uint8Array }, received: Map<number, { broadcast: unknown }>) {
      for (const [, m] of received) {
        const b = m.broadcast as Uint8Array;
        for (let i = 0; i < 32; i++) (state.acc as Uint8Array)[i] ^= b[i] as number;
      }
      if (r === 1) return { output: state.acc };
      const v = state.rng(32);
      for (let i = 0; i < 32; i++) (state.acc as Uint8Array)[i] ^= v[i] as number;
      return { state, send: { broadcast: v } };
    },
  })) as never,
};

function parties(n: number, signed: boolean) {
  const { auths } = ed25519AuthsForTest(n);
  const ps = Array.from(
    { length: n },
    (_, i) =>
      new Party(xorSpec, {
        self: i,
        n,
        sessionId,
        rng: seededRandom(`p${i}`),
        ...(signed ? { auth: auths[i] } : {}),
      }),
  );
  return { ps, auths };
}

/** A transport evidence stand-in per message: the sender and round it came from. */
function tagged(m: IncomingMessage): IncomingMessage {
  return { ...m, evidence: Uint8Array.of(0xe0, m.from, m.round, m.kind === 'broadcast' ? 0 : 1) };
}

function resign(auth: BroadcastAuth, m: IncomingMessage): IncomingMessage {
  const hash = echoHash(m.sessionId, m.round, m.from, m.body as Canonical);
  return { ...m, statementSignature: auth.sign(broadcastStatementBytes(TAG, m.sessionId, m.round, m.from, hash)) };
}

describe('reliable broadcast: a false echo cannot frame an honest party', () => {
  it('unsigned run: k lies about honest j to receiver 0 → nobody is named (base named j)', () => {
    const { ps } = parties(3, false);
    const res = simulate(ps, {
      intercept: (d) => {
        const m = d.message;
        if (m.from !== 2 || m.round !== 1 || !m.echo || d.to !== 0) return [d];
        return [{ ...d, message: { ...m, echo: m.echo.map((h, j) => (j === 1 ? new Uint8Array(32).fill(7) : h)) } }];
      },
    });
    expect(res.aborted[0]).toBeDefined();
    expect(res.aborted[0]?.culprits).toEqual([]);
    expect(res.aborted[0]?.reason).toMatch(/nobody can be named/);
    for (const a of res.aborted) for (const c of a?.culprits ?? []) expect(c.party).not.toBe(1);
  });

  it('signed run: a false echo with j’s missing or garbage signature names the liar k (echo.false)', () => {
    for (const sig of [new Uint8Array(64), new Uint8Array(64).fill(0xab), Uint8Array.of(1)]) {
      const { ps } = parties(3, true);
      const res = simulate(ps, {
        intercept: (d) => {
          const m = d.message;
          if (m.from !== 2 || m.round !== 1 || !m.echo || d.to !== 0) return [{ ...d, message: tagged(m) }];
          const echo = m.echo.map((h, j) => (j === 1 ? new Uint8Array(32).fill(7) : h));
          const echoSignatures = (m.echoSignatures ?? []).map((s, j) => (j === 1 ? sig : s));
          return [{ ...d, message: tagged({ ...m, echo, echoSignatures }) }];
        },
      });
      const c = res.aborted[0]?.culprits;
      expect(c).toHaveLength(1);
      expect(c?.[0]).toMatchObject({ party: 2, check: 'echo.false', round: 1 });
      expect(c?.[0]?.evidence?.messages).toEqual([Uint8Array.of(0xe0, 2, 1, 0)]);
    }
  });

  it('signed run: replaying j’s signed statement of another round in the echo names k', () => {
    const { ps } = parties(3, true);
    let round0: IncomingMessage | undefined;
    const res = simulate(ps, {
      intercept: (d) => {
        const m = d.message;
        if (m.from === 1 && m.round === 0 && m.kind === 'broadcast') round0 = m;
        if (m.from !== 2 || m.round !== 2 || !m.echo || d.to !== 0 || !round0) return [d];
        // j's round-0 statement (hash and valid signature) presented as its round-1 one
        const h0 = echoHash(sessionId, 0, 1, round0.body as Canonical);
        const echo = m.echo.map((h, j) => (j === 1 ? h0 : h));
        const echoSignatures = (m.echoSignatures ?? []).map((s, j) =>
          j === 1 ? (round0?.statementSignature as Uint8Array) : s,
        );
        return [{ ...d, message: { ...m, echo, echoSignatures } }];
      },
    });
    expect(res.aborted[0]?.culprits).toMatchObject([{ party: 2, check: 'echo.false' }]);
    expect(res.outputs[0]).toBeUndefined();
  });

  it('signed run: a broadcaster that signs two different round-0 broadcasts is named with both statements', () => {
    const { ps, auths } = parties(3, true);
    const res = simulate(ps, {
      intercept: (d) => {
        const m = tagged(d.message);
        if (m.from !== 0 || m.round !== 0 || d.to !== 2) return [{ ...d, message: m }];
        return [{ ...d, message: resign(auths[0] as BroadcastAuth, { ...m, body: new Uint8Array(32).fill(0xee) }) }];
      },
    });
    for (const i of [1, 2]) {
      const c = res.aborted[i]?.culprits;
      expect(c).toHaveLength(1);
      expect(c?.[0]).toMatchObject({ party: 0, check: 'echo.equivocation', round: 0 });
      const st = c?.[0]?.evidence?.statements ?? [];
      expect(st).toHaveLength(2);
      expect(st[0]?.hash).not.toEqual(st[1]?.hash);
      // both statements verify under party 0's key: a third party can check the blame itself
      for (const s of st) {
        const bytes = broadcastStatementBytes(s.protocol, s.sessionId, s.round, s.sender, s.hash);
        expect((auths[1] as BroadcastAuth).verify(0, bytes, s.signature)).toBe(true);
      }
      // evidence: party 0's broadcast as received here, then the echoer's message
      expect(c?.[0]?.evidence?.messages[0]).toEqual(Uint8Array.of(0xe0, 0, 0, 0));
    }
  });

  it('signed run: a broadcast without (or with a wrong) statement signature names its sender at once', () => {
    const { ps } = parties(3, true);
    const res = simulate(ps, {
      intercept: (d) => {
        const m = tagged(d.message);
        if (m.from !== 1 || m.round !== 1 || m.kind !== 'broadcast') return [{ ...d, message: m }];
        const { statementSignature: _s, ...rest } = m;
        return [{ ...d, message: d.to === 0 ? rest : { ...m, statementSignature: new Uint8Array(64) } }];
      },
    });
    for (const i of [0, 2]) {
      expect(res.aborted[i]?.culprits).toMatchObject([{ party: 1, check: 'echo.malformed', round: 1 }]);
      expect(res.aborted[i]?.culprits[0]?.evidence?.messages).toEqual([Uint8Array.of(0xe0, 1, 1, 0)]);
    }
  });

  it('signed run: dropped or truncated echoSignatures name their sender (echo.malformed)', () => {
    const { ps } = parties(3, true);
    const res = simulate(ps, {
      intercept: (d) => {
        const m = d.message;
        if (m.from !== 2 || m.round !== 1) return [d];
        if (d.to === 0) {
          const { echoSignatures: _e, ...rest } = m;
          return [{ ...d, message: rest }];
        }
        return [{ ...d, message: { ...m, echoSignatures: (m.echoSignatures ?? []).slice(0, 2) } }];
      },
    });
    for (const i of [0, 1]) expect(res.aborted[i]?.culprits).toMatchObject([{ party: 2, check: 'echo.malformed' }]);
  });

  it('two different messages in one slot: message.conflict with both messages as evidence', () => {
    const { ps, auths } = parties(3, true);
    const res = simulate(ps, {
      intercept: (d) => {
        const m = tagged(d.message);
        if (m.from !== 1 || m.round !== 0 || d.to !== 0) return [{ ...d, message: m }];
        const other = resign(auths[1] as BroadcastAuth, {
          ...m,
          body: new Uint8Array(32).fill(3),
          evidence: Uint8Array.of(0xff),
        });
        return [
          { ...d, message: m },
          { ...d, message: other },
        ];
      },
    });
    const c = res.aborted[0]?.culprits;
    expect(c).toMatchObject([{ party: 1, check: 'message.conflict', round: 0 }]);
    expect(c?.[0]?.evidence?.messages).toEqual([Uint8Array.of(0xe0, 1, 0, 0), Uint8Array.of(0xff)]);
  });

  it('a malformed body: message.malformed with that message as evidence; a round culprit gets its round', () => {
    const { ps } = parties(3, true);
    const { auths } = ed25519AuthsForTest(3);
    const res = simulate(ps, {
      intercept: (d) => {
        const m = tagged(d.message);
        if (m.from !== 1 || m.round !== 1) return [{ ...d, message: m }];
        return [{ ...d, message: resign(auths[1] as BroadcastAuth, { ...m, body: Uint8Array.of(1, 2) }) }];
      },
    });
    for (const i of [0, 2]) {
      expect(res.aborted[i]?.culprits).toMatchObject([{ party: 1, check: 'message.malformed', round: 1 }]);
      expect(res.aborted[i]?.culprits[0]?.evidence?.messages).toEqual([Uint8Array.of(0xe0, 1, 1, 0)]);
    }
  });

  it('an honest run with signed statements finishes with equal outputs', () => {
    const { ps } = parties(4, true);
    const res = simulate(ps);
    expect(res.aborted.every((a) => a === undefined)).toBe(true);
    for (const o of res.outputs) expect(o).toEqual(res.outputs[0]);
  });

  it('a culprit named by a round without evidence gets that round and its messages of the round', () => {
    const picky: ProtocolSpec<null, number> = {
      name: `${TAG}.picky`,
      start: () => ({
        state: null,
        send: {
          broadcast: new Uint8Array(32),
          p2p: new Map([
            [0, 7n],
            [1, 7n],
            [2, 7n],
          ]),
        },
      }),
      rounds: [
        {
          name: `${TAG}.picky.round1`,
          broadcast: bytes32,
          p2p: (b) => b,
          process(_s, received) {
            for (const [j, m] of received)
              if ((m.broadcast as Uint8Array)[0] === 1) throw new ProtocolAbort({ party: j, reason: 'odd' });
            return { output: 1 };
          },
        },
      ],
    };
    const { auths } = ed25519AuthsForTest(3);
    // party 2's validly signed broadcast fails the round's own check: it gets round 0 and its messages of round 0
    const ps2 = [0, 1, 2].map(
      (i) => new Party(picky, { self: i, n: 3, sessionId, rng: seededRandom(`q${i}`), auth: auths[i] }),
    );
    const res2 = simulate(ps2, {
      intercept: (d) => {
        const m = tagged(d.message);
        if (m.from !== 2 || m.kind !== 'broadcast') return [{ ...d, message: m }];
        const body = new Uint8Array(32);
        body[0] = 1;
        const hash = echoHash(m.sessionId, 0, 2, body);
        const statementSignature = (auths[2] as BroadcastAuth).sign(
          broadcastStatementBytes(picky.name, m.sessionId, 0, 2, hash),
        );
        return [{ ...d, message: { ...m, body, statementSignature } }];
      },
    });
    for (const i of [0, 1]) {
      const c = res2.aborted[i]?.culprits;
      expect(c).toMatchObject([{ party: 2, reason: 'odd', round: 0 }]);
      expect(c?.[0]?.check).toBeUndefined();
      expect(c?.[0]?.evidence?.messages).toEqual([Uint8Array.of(0xe0, 2, 0, 0), Uint8Array.of(0xe0, 2, 0, 1)]);
    }
  });

  it('fuzz: junk statement signatures, echo signatures and echo rounds never throw', () => {
    const junk = fc.oneof(
      fc.constant(undefined),
      fc.constant(null),
      fc.uint8Array({ maxLength: 80 }),
      fc.array(fc.oneof(fc.uint8Array({ maxLength: 70 }), fc.constant(null), fc.string()), { maxLength: 5 }),
      fc.integer(),
      fc.string(),
    );
    fc.assert(
      fc.property(junk, junk, junk, fc.integer({ min: 0, max: 2 }), (a, b, c, which) => {
        const { ps } = parties(3, true);
        simulate(ps, {
          intercept: (d) => {
            const m = d.message;
            if (m.from !== 1 || d.to !== 0) return [d];
            const field = (['statementSignature', 'echoSignatures', 'echoRound'] as const)[which] as string;
            return [{ ...d, message: { ...m, [field]: which === 0 ? a : which === 1 ? b : c } as never }];
          },
        });
        for (const p of ps) expect(['done', 'aborted', 'running']).toContain(p.status);
        for (const cul of ps[0]?.aborted?.culprits ?? []) expect(cul.party).toBe(1);
      }),
      { numRuns: 60, seed: 7 },
    );
  });
});
