import { broadcastStatementBytes, echoHash } from '@custodian/crypto';
import { dkgProtocol, type KeyShare } from '@custodian/frost';
import {
  bytesToCanonical,
  canonicalToBytes,
  messageType,
  runSessionId,
  sealEnvelope,
  sessionAuth,
} from '@custodian/wire';
import { ed25519 } from '@noble/curves/ed25519.js';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { blameOf } from '../src/ceremonies/context.js';
import { CeremonyRunner, type SessionParty } from '../src/index.js';

/** In-memory transport: delivers asynchronously, in a shuffled order, between runners. */
function network(
  n: number,
  opts: {
    drop?: (from: number, to: number) => boolean;
    tamper?: (from: number, to: number, b: Uint8Array, secret: Uint8Array) => Uint8Array;
    /** Collect every runner's log lines (debug and up) here. */
    logLines?: string[];
  } = {},
) {
  const runners: CeremonyRunner[] = [];
  const secrets = Array.from({ length: n }, () => ed25519.utils.randomSecretKey());
  const parties: SessionParty[] = secrets.map((s, i) => ({ peerId: `peer${i}`, publicKey: ed25519.getPublicKey(s) }));
  for (let i = 0; i < n; i++) {
    runners.push(
      new CeremonyRunner(
        {
          async send(peer, bytes) {
            const to = Number(peer.slice(4));
            if (opts.drop?.(i, to)) return;
            const out = opts.tamper ? opts.tamper(i, to, bytes, secrets[i] as Uint8Array) : bytes;
            setTimeout(() => runners[to]?.deliver(`peer${i}`, out), Math.floor(Math.random() * 5));
          },
        },
        opts.logLines
          ? pino({ level: 'debug' }, { write: (line: string) => opts.logLines?.push(line) })
          : pino({ level: 'silent' }),
      ),
    );
  }
  return { runners, secrets, parties };
}

describe('CeremonyRunner over an in-memory transport', () => {
  it('runs two FROST DKG sessions concurrently among 3 parties, messages reordered', async () => {
    const { runners, secrets, parties } = network(3);
    const deadline = Date.now() + 30_000;
    const run = (suite: 'ed25519' | 'secp256k1-tr', sid: number) =>
      Promise.all(
        runners.map((r, i) =>
          r.run<KeyShare>({
            sessionId: new Uint8Array(32).fill(sid),
            spec: dkgProtocol({ suite, threshold: 2 }),
            parties,
            self: i,
            secretKey: secrets[i] as Uint8Array,
            deadline,
          }),
        ),
      );
    const [a, b] = await Promise.all([run('ed25519', 1), run('secp256k1-tr', 2)]);
    for (const o of [...a, ...b]) expect(o.status).toBe('ok');
    const hashes = a.map((o) => (o.status === 'ok' ? Buffer.from(o.transcriptHash).toString('hex') : ''));
    expect(new Set(hashes).size).toBe(1);
  });

  it('releaseAfter: nothing leaves a party until it resolves; if it rejects, the session is cancelled unsent', async () => {
    const sent = [0, 0, 0];
    const { runners, secrets, parties } = network(3, {
      drop: (from) => {
        sent[from] = (sent[from] ?? 0) + 1;
        return false;
      },
    });
    const deadline = Date.now() + 30_000;
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const run = (sid: number, i: number, releaseAfter?: Promise<unknown>) =>
      (runners[i] as CeremonyRunner).run<KeyShare>({
        sessionId: new Uint8Array(32).fill(sid),
        spec: dkgProtocol({ suite: 'ed25519', threshold: 2 }),
        parties,
        self: i,
        secretKey: secrets[i] as Uint8Array,
        deadline,
        ...(releaseAfter ? { releaseAfter } : {}),
      });
    const outs = Promise.all([run(7, 0, held), run(7, 1), run(7, 2)]);
    await new Promise((r) => setTimeout(r, 50));
    expect(sent[0]).toBe(0); // party 0 computed its round-1 messages, but they wait
    expect((sent[1] ?? 0) + (sent[2] ?? 0)).toBeGreaterThan(0);
    release();
    for (const o of await outs) expect(o.status).toBe('ok');
    expect(sent[0]).toBeGreaterThan(0);

    sent.fill(0);
    const short = Date.now() + 300;
    const refused = (runners[0] as CeremonyRunner).run<KeyShare>({
      sessionId: new Uint8Array(32).fill(8),
      spec: dkgProtocol({ suite: 'ed25519', threshold: 2 }),
      parties,
      self: 0,
      secretKey: secrets[0] as Uint8Array,
      deadline: short,
      releaseAfter: Promise.reject(new Error('write failed')),
    });
    const out = await refused;
    expect(out.status).toBe('cancelled');
    expect(out.status === 'cancelled' && out.reason).toMatch(/not released: write failed/);
    await new Promise((r) => setTimeout(r, 20));
    expect(sent[0]).toBe(0);
    expect(runners[0]?.active).toBe(0);
  });

  it("beforeRelease: a step's messages and the output wait for its promise, in order; a rejection cancels the session unsent", async () => {
    const sent: number[][] = [[], [], []];
    const { runners, secrets, parties } = network(3, {
      drop: (from) => {
        sent[from]?.push(Date.now());
        return false;
      },
    });
    const deadline = Date.now() + 30_000;
    const gates: { resolve: () => void; reject: (e: Error) => void }[] = [];
    const beforeRelease = () =>
      new Promise<void>((resolve, reject) => {
        gates.push({ resolve, reject });
      });
    const run = (sid: number, i: number, gated: boolean) =>
      (runners[i] as CeremonyRunner).run<KeyShare>({
        sessionId: new Uint8Array(32).fill(sid),
        spec: dkgProtocol({ suite: 'ed25519', threshold: 2 }),
        parties,
        self: i,
        secretKey: secrets[i] as Uint8Array,
        deadline,
        ...(gated ? { beforeRelease } : {}),
      });
    const outs = Promise.all([run(9, 0, true), run(9, 1, false), run(9, 2, false)]);
    while (gates.length < 2) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 20));
    // the start step and the round-1 step (the others' round 0 arrived): both held
    expect(gates.length).toBe(2);
    expect(sent[0]?.length).toBe(0);
    gates[1]?.resolve(); // a later step released first still waits for the earlier one
    await new Promise((r) => setTimeout(r, 20));
    expect(sent[0]?.length).toBe(0);
    gates[0]?.resolve();
    gates.splice(0, 2);
    // each later step of party 0 is held by its own promise until the test releases it
    while (
      (await Promise.race([outs.then(() => 'done'), new Promise((r) => setTimeout(() => r('tick'), 20))])) === 'tick'
    )
      for (const g of gates.splice(0)) g.resolve();
    for (const o of await outs) expect(o.status).toBe('ok');

    sent[0] = [];
    const refused = (runners[0] as CeremonyRunner).run<KeyShare>({
      sessionId: new Uint8Array(32).fill(10),
      spec: dkgProtocol({ suite: 'ed25519', threshold: 2 }),
      parties,
      self: 0,
      secretKey: secrets[0] as Uint8Array,
      deadline: Date.now() + 1_000,
      beforeRelease: () => Promise.reject(new Error('ledger write failed')),
    });
    const out = await refused;
    expect(out.status === 'cancelled' && out.reason).toMatch(/not released: ledger write failed/);
    await new Promise((r) => setTimeout(r, 20));
    expect(sent[0]?.length).toBe(0);
  });

  it("the wire session id binds the party order; cancel() takes the caller's session id", async () => {
    const Signed = messageType('custodian.v1.SignedEnvelope');
    const Env = messageType('custodian.v1.Envelope');
    const seen: Uint8Array[] = [];
    // party 0 alone runs the session: its messages are recorded (the others buffer them), nothing comes back
    const { runners, secrets, parties } = network(3, {
      drop: (from) => from !== 0,
      tamper: (_from, _to, bytes) => {
        const env = Env.decode((Signed.decode(bytes) as unknown as { envelope: Uint8Array }).envelope) as unknown as {
          sessionId: Uint8Array;
        };
        seen.push(Uint8Array.from(env.sessionId));
        return bytes;
      },
    });
    const r0 = runners[0] as CeremonyRunner;
    const callerSid = new Uint8Array(32).fill(9);
    const out = r0.run<KeyShare>({
      sessionId: callerSid,
      spec: dkgProtocol({ suite: 'ed25519', threshold: 2 }),
      parties,
      self: 0,
      secretKey: secrets[0] as Uint8Array,
      deadline: Date.now() + 30_000,
    });
    expect(seen.length).toBeGreaterThan(0);
    const wireSid = runSessionId(
      callerSid,
      parties.map((p) => p.peerId),
    );
    for (const sid of seen) expect(sid).toEqual(wireSid);
    // another order of the same peers is another session id
    const swapped = [parties[1], parties[0], parties[2]].map((p) => (p as SessionParty).peerId);
    expect(runSessionId(callerSid, swapped)).not.toEqual(wireSid);
    expect(runSessionId(callerSid, swapped.slice(0, 2))).not.toEqual(wireSid);
    r0.cancel(callerSid, 'operator abort');
    await expect(out).resolves.toEqual({ status: 'cancelled', reason: 'operator abort' });
    expect(r0.active).toBe(0);
  });

  it('a silent party makes the others miss the deadline, with no output', async () => {
    const { runners, secrets, parties } = network(3, { drop: (from) => from === 2 });
    const deadline = Date.now() + 500;
    const outs = await Promise.all(
      runners.slice(0, 2).map((r, i) =>
        r.run<KeyShare>({
          sessionId: new Uint8Array(32).fill(3),
          spec: dkgProtocol({ suite: 'ed25519', threshold: 2 }),
          parties,
          self: i,
          secretKey: secrets[i] as Uint8Array,
          deadline,
        }),
      ),
    );
    for (const o of outs) expect(o.status).toBe('deadline');
    expect(runners[0]?.active).toBe(0);
  });

  it('an equivocating party (different, validly signed round-0 broadcasts to different parties) is named by the honest parties', async () => {
    const Signed = messageType('custodian.v1.SignedEnvelope');
    const Env = messageType('custodian.v1.Envelope');
    const R0 = messageType('custodian.v1.frost.DkgRound0Broadcast');
    const logLines: string[] = [];
    const { runners, secrets, parties } = network(3, {
      logLines,
      tamper(from, to, bytes, secret) {
        if (from !== 2 || to !== 1) return bytes;
        const env = Env.decode(
          (Signed.decode(bytes) as unknown as { envelope: Uint8Array }).envelope,
        ) as unknown as Record<string, unknown>;
        if (env.round !== 0) return bytes;
        const body = bytesToCanonical(R0, env.payload);
        if (!body.ok) throw new Error('test: decode');
        const b = body.value as Record<string, Uint8Array>;
        const cc = Uint8Array.from(b.chainCodeCommitment as Uint8Array);
        cc[0] = (cc[0] as number) ^ 1;
        const altered = { ...b, chainCodeCommitment: cc };
        const sid = env.sessionId as Uint8Array;
        // the cheater signs its second statement too (it holds its identity key)
        const auth = sessionAuth({ parties: parties.map((p) => p.publicKey), self: 2, secretKey: secret });
        const hash = echoHash(sid, 0, 2, altered);
        return sealEnvelope({
          sessionId: sid,
          protocol: env.protocol as string,
          round: 0,
          sender: 2,
          payload: canonicalToBytes(R0, altered),
          statementSignature: auth.sign(broadcastStatementBytes(env.protocol as string, sid, 0, 2, hash)),
          senderSecretKey: secret,
        });
      },
    });
    const deadline = Date.now() + 5_000;
    const outs = await Promise.all(
      runners.map((r, i) =>
        r.run<KeyShare>({
          sessionId: new Uint8Array(32).fill(4),
          spec: dkgProtocol({ suite: 'ed25519', threshold: 2 }),
          parties,
          self: i,
          secretKey: secrets[i] as Uint8Array,
          deadline,
        }),
      ),
    );
    for (const o of outs.slice(0, 2)) {
      expect(o.status).toBe('aborted');
      if (o.status !== 'aborted') continue;
      expect(o.aborted.culprits.map((c) => c.party)).toEqual([2]);
      expect(o.aborted.culprits[0]?.check).toBe('echo.equivocation');
      expect(o.aborted.culprits[0]?.evidence?.statements).toHaveLength(2);
      expect(o.protocol).toBe('custodian.frost.dkg');
      const blame = blameOf(o, parties);
      expect(blame).toHaveLength(1);
      expect(blame[0]).toMatchObject({ party: 2, peerId: parties[2]?.peerId, check: 'echo.equivocation', round: 0 });
      expect(blame[0]?.messages).toHaveLength(2);
      expect(blame[0]?.statements).toHaveLength(2);
      expect(blame[0]?.sessionParties).toEqual(parties.map((p) => p.peerId));
      // the wire session id: the caller's id bound to the run's ordered peer ids
      expect(blame[0]?.sessionId).toEqual(
        runSessionId(
          new Uint8Array(32).fill(4),
          parties.map((p) => p.peerId),
        ),
      );
    }
    // the abort is logged with party, check and round, never with the evidence (its p2p message
    // keys open payloads that may carry shares)
    const aborts = logLines.filter((l) => l.includes('echo.equivocation'));
    expect(aborts.length).toBeGreaterThan(0);
    for (const l of logLines) expect(l).not.toMatch(/"(evidence|statements|messages|signedEnvelope|messageKey)"/);
  });
});
