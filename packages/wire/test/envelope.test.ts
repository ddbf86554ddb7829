import { type Canonical, canonicalEncode, equalBytes, type OutgoingMessage, Party } from '@custodian/crypto';
import { seededRandom } from '@custodian/crypto/testing';
import { dkgProtocol, type KeyShare, signProtocol } from '@custodian/frost';
import { ed25519 } from '@noble/curves/ed25519.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bytesToCanonical,
  canonicalToBytes,
  DEFAULT_LIMITS,
  messageType,
  openEnvelope,
  SessionWire,
  sealEnvelope,
  type WireLimits,
} from '../src/index.js';

const keys = [1, 2, 3].map((i) => {
  const secretKey = new Uint8Array(32).fill(i);
  return { secretKey, publicKey: ed25519.getPublicKey(secretKey) };
});
const parties = keys.map((k) => k.publicKey);
const sessionId = new TextEncoder().encode('session-0123456789abcdef');
const wire = (self: number, over: Partial<ConstructorParameters<typeof SessionWire>[0]> = {}) =>
  new SessionWire({
    sessionId,
    protocol: 'custodian.test',
    rounds: 3,
    parties,
    self,
    secretKey: (keys[self] as { secretKey: Uint8Array }).secretKey,
    ...over,
  });

const body: Canonical = {
  a: new Uint8Array([1, 2, 3]),
  big: -(2n ** 200n) + 7n,
  list: [1, 'x', true, null, [new Uint8Array(0), 0n]],
  nested: { k: 'v' },
};
const msg = (over: Partial<OutgoingMessage> = {}): OutgoingMessage => ({
  sessionId,
  round: 1,
  kind: 'broadcast',
  from: 0,
  body,
  ...over,
});

describe('Value fallback converter', () => {
  it('round-trips Canonical values exactly (canonical encoding equal)', () => {
    const Value = messageType('custodian.v1.Value');
    const canon: fc.Arbitrary<Canonical> = fc.letrec<{ v: Canonical }>((tie) => ({
      v: fc.oneof(
        { depthSize: 'small' },
        fc.uint8Array({ maxLength: 40 }),
        fc.bigInt(),
        fc.string(),
        fc.nat(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('v'), { maxLength: 4 }),
        fc.dictionary(
          fc.string({ minLength: 1 }).filter((k) => k !== '__proto__'),
          tie('v'),
          { maxKeys: 4 },
        ),
      ),
    })).v;
    fc.assert(
      fc.property(canon, (v) => {
        const r = bytesToCanonical(Value, canonicalToBytes(Value, v));
        expect(r.ok).toBe(true);
        if (r.ok) expect(equalBytes(canonicalEncode(r.value), canonicalEncode(v))).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});

describe('SessionWire: sign, encrypt, verify', () => {
  it('broadcast and p2p round-trip; a relay cannot read p2p', () => {
    const b = wire(0).seal(msg());
    const got = wire(1).open(b);
    expect(got.ok).toBe(true);
    if (got.ok) expect(equalBytes(canonicalEncode(got.value.message.body), canonicalEncode(body))).toBe(true);

    const secret = new TextEncoder().encode('the-secret-share-bytes');
    const p = wire(0).seal(msg({ kind: 'p2p', to: 2, body: { s: secret } }));
    expect(Buffer.from(p).includes(Buffer.from(secret))).toBe(false);
    const at2 = wire(2).open(p);
    expect(at2.ok && equalBytes((at2.value.message.body as { s: Uint8Array }).s, secret)).toBe(true);
    // party 1 (or a relay) is not the receiver
    const at1 = wire(1).open(p);
    expect(at1.ok).toBe(false);
    if (!at1.ok) expect(at1.rejection).toMatchObject({ code: 'wrong-receiver', party: 0, authenticated: true });
  });

  it('rejects a tampered envelope (any bit flip) with a typed rejection', () => {
    const b = wire(0).seal(msg({ kind: 'p2p', to: 1, body: { s: new Uint8Array(32).fill(9) } }));
    fc.assert(
      fc.property(fc.nat(b.length * 8 - 1), (bit) => {
        const t = Uint8Array.from(b);
        t[bit >> 3] = (t[bit >> 3] as number) ^ (1 << (bit & 7));
        const r = wire(1).open(t);
        expect(r.ok).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('rejects a wrong signing key, naming the claimed sender as unauthenticated', () => {
    const forged = sealEnvelope({
      sessionId,
      protocol: 'custodian.test',
      round: 1,
      sender: 0,
      payload: canonicalToBytes(messageType('custodian.v1.Value'), body),
      senderSecretKey: new Uint8Array(32).fill(77),
    });
    const r = wire(1).open(forged);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.rejection).toMatchObject({ code: 'bad-signature', party: 0, authenticated: false });
  });

  it('rejects p2p ciphertext re-signed by another party (cannot be moved between senders)', () => {
    const p = wire(0).seal(msg({ kind: 'p2p', to: 1, body: { s: new Uint8Array(4) } }));
    const opened = openEnvelope(p, {
      sessionId,
      parties,
      self: 1,
      selfSecretKey: (keys[1] as { secretKey: Uint8Array }).secretKey,
    });
    expect(opened.ok).toBe(true);
    // party 2 takes the ciphertext and sends it as its own: the AAD binds sender 0
    const Env = messageType('custodian.v1.Envelope');
    const Signed = messageType('custodian.v1.SignedEnvelope');
    const inner = Env.decode((Signed.decode(p) as unknown as { envelope: Uint8Array }).envelope) as unknown as Record<
      string,
      unknown
    >;
    const moved = sealEnvelope({
      sessionId,
      protocol: 'custodian.test',
      round: 1,
      sender: 2,
      receiver: 1,
      receiverPublicKey: parties[1] as Uint8Array,
      payload: new Uint8Array(0),
      senderSecretKey: (keys[2] as { secretKey: Uint8Array }).secretKey,
    });
    const movedInner = Env.decode(
      (Signed.decode(moved) as unknown as { envelope: Uint8Array }).envelope,
    ) as unknown as Record<string, unknown>;
    movedInner.payload = inner.payload;
    movedInner.ephemeralKey = inner.ephemeralKey;
    const envBytes = Env.encode(Env.fromObject(movedInner)).finish();
    const sig = ed25519.sign(
      new Uint8Array([...new TextEncoder().encode('custodian/v1/envelope'), 0, ...envBytes]),
      (keys[2] as { secretKey: Uint8Array }).secretKey,
    );
    const resigned = Signed.encode(Signed.fromObject({ envelope: envBytes, signature: sig })).finish();
    const r = wire(1).open(resigned);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.rejection).toMatchObject({ code: 'decrypt-failed', party: 2 });
  });

  it('rejects replays, wrong session, wrong protocol, unknown sender, oversize', () => {
    const w1 = wire(1);
    const b = wire(0).seal(msg());
    expect(w1.open(b).ok).toBe(true);
    const again = w1.open(b);
    expect(!again.ok && again.rejection.code).toBe('replay');

    const other = wire(0, { sessionId: new TextEncoder().encode('another-session-0123456') }).seal(msg());
    const ws = wire(1).open(other);
    expect(!ws.ok && ws.rejection).toMatchObject({ code: 'wrong-session', party: 0, authenticated: true });

    const otherProto = wire(0, { protocol: 'custodian.other' }).seal(msg());
    const wp = wire(1).open(otherProto);
    expect(!wp.ok && wp.rejection.code).toBe('wrong-protocol');

    const outsider = new SessionWire({
      sessionId,
      protocol: 'custodian.test',
      rounds: 3,
      parties: [...parties, ed25519.getPublicKey(new Uint8Array(32).fill(9))],
      self: 3,
      secretKey: new Uint8Array(32).fill(9),
    }).seal(msg({ from: 3 }));
    const wu = wire(1).open(outsider);
    expect(!wu.ok && wu.rejection.code).toBe('unknown-sender');

    const limits: WireLimits = { ...DEFAULT_LIMITS, maxMessageBytes: 64 };
    const wo = wire(1, { limits }).open(b);
    expect(!wo.ok && wo.rejection.code).toBe('oversize');
    const fieldLimits: WireLimits = { ...DEFAULT_LIMITS, maxFieldBytes: 2 };
    const wf = wire(1, { limits: fieldLimits }).open(wire(0).seal(msg({ round: 2 })));
    expect(!wf.ok && wf.rejection).toMatchObject({ code: 'schema', party: 0 });
  });

  it('fuzz: arbitrary bytes never throw, only typed rejections', () => {
    const w = wire(1);
    const valid = wire(0).seal(msg());
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 600 }),
          fc
            .tuple(fc.nat(valid.length), fc.uint8Array({ maxLength: 40 }))
            .map(([i, junk]) => Uint8Array.from([...valid.slice(0, i), ...junk, ...valid.slice(i)])),
        ),
        (bytes) => {
          const r = w.open(bytes);
          if (!r.ok) expect(typeof r.rejection.code).toBe('string');
        },
      ),
      { numRuns: 1000 },
    );
    for (const bad of [undefined, null, 'x', 42, {}, new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x0f])]) {
      const r = w.open(bad);
      expect(r.ok).toBe(false);
    }
  });
});

describe('FROST ceremonies over the wire (typed round schemas)', () => {
  it('DKG 2-of-3 and signing with every message sealed and opened', () => {
    const sid = new TextEncoder().encode('frost-dkg-session-over-wire');
    const run = <O>(
      make: (i: number) => Party<unknown, O>,
      idx: number[],
      protocol: string,
      rounds: number,
      sess: Uint8Array,
    ) => {
      const ps = idx.map((_, k) => make(k));
      const pk = idx.map((i) => parties[i] as Uint8Array);
      const ws = idx.map(
        (i, k) =>
          new SessionWire({
            sessionId: sess,
            protocol,
            rounds,
            parties: pk,
            self: k,
            secretKey: (keys[i] as { secretKey: Uint8Array }).secretKey,
          }),
      );
      const queue: { to: number; bytes: Uint8Array }[] = [];
      const route = (from: number, out: readonly OutgoingMessage[]) => {
        for (const m of out) {
          const bytes = (ws[from] as SessionWire).seal(m);
          const targets = m.kind === 'p2p' ? [m.to as number] : ps.map((_, j) => j).filter((j) => j !== from);
          for (const to of targets) queue.push({ to, bytes });
        }
      };
      for (const [k, p] of ps.entries()) route(k, p.start().messages);
      while (queue.length) {
        const { to, bytes } = queue.shift() as { to: number; bytes: Uint8Array };
        const opened = (ws[to] as SessionWire).open(bytes);
        if (!opened.ok) throw new Error(opened.rejection.reason);
        const step = (ps[to] as Party<unknown, O>).receive(opened.value.message);
        if (step.rejected) throw new Error(step.rejected.reason);
        route(to, step.messages);
      }
      return ps.map((p) => {
        if (p.aborted) throw new Error(p.aborted.reason);
        return p.output as O;
      });
    };
    const shares = run(
      (k) =>
        new Party(dkgProtocol({ suite: 'ed25519', threshold: 2 }), {
          self: k,
          n: 3,
          sessionId: sid,
          rng: seededRandom(`w${k}`),
        }) as Party<unknown, KeyShare>,
      [0, 1, 2],
      'custodian.frost.dkg',
      3,
      sid,
    );
    expect(equalBytes(shares[0]?.groupPublicKey as Uint8Array, shares[2]?.groupPublicKey as Uint8Array)).toBe(true);
    const message = new TextEncoder().encode('hello over the wire');
    const ssid = new TextEncoder().encode('frost-sign-session-over-wire');
    const sigs = run(
      (k) =>
        new Party(signProtocol({ keyShare: shares[[0, 2][k] as number] as KeyShare, signers: [1n, 3n], message }), {
          self: k,
          n: 2,
          sessionId: ssid,
          rng: seededRandom(`s${k}`),
        }) as Party<unknown, { signature: Uint8Array; verifyingKey: Uint8Array }>,
      [0, 2],
      'custodian.frost.sign',
      2,
      ssid,
    );
    expect(ed25519.verify(sigs[0]?.signature as Uint8Array, message, sigs[0]?.verifyingKey as Uint8Array)).toBe(true);
  });
});
