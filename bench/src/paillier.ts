/**
 * Paillier benchmarks (issue 3): modular exponentiation alternatives, ring-Pedersen commitments
 * (plain vs fixed-base tables vs CRT), key generation with and without a prime pool, Enc/Dec, and
 * every proof's prove and verify at SECURITY_112 (2048-bit) and SECURITY_128 (3072-bit).
 *
 * Keys for the proof figures come from the TEST-ONLY fixture primes of packages/paillier (public
 * values: fine for timing, never for custody). Run: `npx tsc -b && node bench/dist/paillier.js`
 * (`--quick` skips key generation without a pool, which takes tens of seconds per key; `--proofs`
 * runs only the proof figures).
 */
import { readFileSync } from 'node:fs';
import { secp256k1Group as G, Transcript } from '@custodian/crypto';
import {
  decWitnessBound,
  FixedBaseTable,
  fixedBaseMultiExp,
  generatePaillierKey,
  modPow,
  PaillierSecretKey,
  PrimePool,
  proveAffG,
  proveAffP,
  proveDec,
  proveEnc,
  proveFac,
  proveLogStar,
  proveMod,
  provePrm,
  RingPedersen,
  ringPedersenFromKey,
  SECURITY_112,
  SECURITY_128,
  type SecurityLevel,
  verifyAffG,
  verifyAffP,
  verifyDec,
  verifyEnc,
  verifyFac,
  verifyLogStar,
  verifyMod,
  verifyPrm,
} from '@custodian/paillier';
import { bench } from './harness.js';

const quick = process.argv.includes('--quick');
const proofsOnly = process.argv.includes('--proofs');
const fixture = JSON.parse(
  readFileSync(new URL('../../packages/paillier/test/fixtures/test-only-safe-primes.json', import.meta.url), 'utf8'),
) as { safePrimes1024: string[]; safePrimes1536: string[] };

function primes(level: SecurityLevel): bigint[] {
  return (level === SECURITY_112 ? fixture.safePrimes1024 : fixture.safePrimes1536).map((h) => BigInt(`0x${h}`));
}

function key(level: SecurityLevel, i: number): PaillierSecretKey {
  const ps = primes(level);
  return PaillierSecretKey.fromPrimes(ps[2 * i] as bigint, ps[2 * i + 1] as bigint, level, { checkPrimality: false });
}

/** Binary square-and-multiply: the baseline. */
function powBinary(b: bigint, e: bigint, m: bigint): bigint {
  let r = 1n;
  b %= m;
  while (e > 0n) {
    if (e & 1n) r = (r * b) % m;
    b = (b * b) % m;
    e >>= 1n;
  }
  return r;
}

/** Montgomery multiplication with native bigint (mask/shift instead of division), 5-bit sliding window: an alternative we tried. */
function powMontgomery(base: bigint, exp: bigint, N: bigint): bigint {
  const k = BigInt(N.toString(2).length);
  const R = 1n << k;
  const mask = R - 1n;
  let inv = 1n;
  for (let bits = 1n; bits < k; bits <<= 1n) inv = (inv * (2n - N * inv)) & mask;
  inv = (inv * (2n - N * inv)) & mask;
  const Np = (R - inv) & mask;
  const redc = (T: bigint) => {
    const m = ((T & mask) * Np) & mask;
    const t = (T + m * N) >> k;
    return t >= N ? t - N : t;
  };
  const R2 = (R * R) % N;
  const b = redc((base % N) * R2);
  let r = redc(R2);
  const b2 = redc(b * b);
  const odd = [b];
  for (let i = 1; i < 16; i++) odd.push(redc((odd[i - 1] as bigint) * b2));
  const bits = exp.toString(2);
  let i = 0;
  while (i < bits.length) {
    if (bits[i] === '0') {
      r = redc(r * r);
      i++;
      continue;
    }
    let j = Math.min(i + 5, bits.length) - 1;
    while (bits[j] === '0') j--;
    for (let q = i; q <= j; q++) r = redc(r * r);
    r = redc(r * (odd[Number.parseInt(bits.slice(i, j + 1), 2) >> 1] as bigint));
    i = j + 1;
  }
  return redc(r);
}

function ctx(prover: number, verifier: number | null) {
  const transcript = Transcript.create('custodian.bench.paillier', {
    sessionId: new TextEncoder().encode('bench-session-000001'),
    parties: [1n, 2n],
    round: 1,
  });
  return { transcript, prover, verifier };
}

async function modexpBenches(): Promise<void> {
  for (const level of [SECURITY_112, SECURITY_128]) {
    const k = key(level, 0);
    const N = k.N;
    const N2 = k.publicKey.N2;
    const tag = level.name;
    const base = N2 - 1234567n;
    // Enc's ρ^N mod N²: the dominant modexp (|N|-bit exponent, 2|N|-bit modulus)
    await bench(`modexp/${tag}/rho^N mod N^2/sliding-window (modPow)`, () => modPow(base, N, N2), { n: 10 });
    await bench(`modexp/${tag}/rho^N mod N^2/binary`, () => powBinary(base, N, N2), { n: 5 });
    await bench(`modexp/${tag}/rho^N mod N^2/montgomery-bigint`, () => powMontgomery(base, N, N2), { n: 5 });
    await bench(`modexp/${tag}/rho^N mod N^2/CRT p^2,q^2 (key owner)`, () => k.crtN2.pow(base, N), { n: 10 });
    // ring-Pedersen s^x t^y mod N̂ with x ~ ℓ+ε bits, y ~ ℓ+ε+|N̂| bits (Πenc/Πaff-g/Πlog* commitments)
    const aux = ringPedersenFromKey(key(level, 1));
    const { s, t, N: Nh } = aux.params;
    const x = (1n << BigInt(level.ell + level.epsilon)) - 12345n;
    const y = (1n << BigInt(level.ell + level.epsilon + 8 * level.kappa)) - 6789n;
    await bench(`ring-pedersen/${tag}/s^x t^y/two modPow`, () => (modPow(s, x, Nh) * modPow(t, y, Nh)) % Nh, { n: 10 });
    for (const w of [4, 6, 8]) {
      const ts = new FixedBaseTable(s, Nh, w);
      const tt = new FixedBaseTable(t, Nh, w);
      await bench(
        `ring-pedersen/${tag}/s^x t^y/fixed-base Yao window ${w}`,
        () =>
          fixedBaseMultiExp([
            [ts, x],
            [tt, y],
          ]),
        { n: 20 },
      );
    }
    const owner = RingPedersen.fromSecret(aux.params, aux.secret);
    await bench(`ring-pedersen/${tag}/s^x t^y/CRT (owner of N̂)`, () => owner.commit(x, y), { n: 20 });
  }
}

async function paillierBenches(level: SecurityLevel): Promise<void> {
  const tag = level.name;
  const k = key(level, 0);
  const pk = k.publicKey;
  const m = 123456789n;
  const { c, rho } = pk.encrypt(m);
  await bench(`paillier/${tag}/Enc (public key)`, () => pk.encryptWithNonce(m, rho), { n: 10 });
  await bench(`paillier/${tag}/Enc (CRT, key owner)`, () => k.encryptWithNonce(m, rho), { n: 10 });
  await bench(`paillier/${tag}/Dec (CRT)`, () => k.decrypt(c), { n: 10 });
  await bench(`paillier/${tag}/Dec (textbook, no CRT)`, () => k.decryptPlain(c), { n: 5 });
  await bench(`paillier/${tag}/Dec with nonce (CRT)`, () => k.decryptWithNonce(c), { n: 10 });
  await bench(`paillier/${tag}/mul (k ⊙ c, 256-bit k)`, () => pk.mul(c, (1n << 256n) - 1n), { n: 10 });

  const ps = primes(level);
  await bench(
    `keygen/${tag}/with pool (2 primes ready)`,
    async () => {
      const pool = PrimePool.restore(
        { version: 1, bits: 4 * level.kappa, primes: [ps[0], ps[1]].map((p) => (p as bigint).toString(16)) },
        { target: 2 },
      );
      await generatePaillierKey(level, { primePool: pool });
    },
    { n: 5, warmup: 1 },
  );
  if (!quick) {
    await bench(`keygen/${tag}/without pool (node:crypto safe primes)`, () => generatePaillierKey(level), {
      n: level === SECURITY_112 ? 5 : 3,
      warmup: 0,
    });
  }
}

async function proofBenches(level: SecurityLevel): Promise<void> {
  const tag = level.name;
  const n = level === SECURITY_112 ? 5 : 3;
  const pi = key(level, 0);
  const pj = key(level, 2);
  const auxData = ringPedersenFromKey(key(level, 1));
  const auxPub = RingPedersen.fromParams(auxData.params, level);
  const auxOwner = RingPedersen.fromSecret(auxData.params, auxData.secret);
  const bc = ctx(1, null);
  const c = ctx(1, 2);

  const mod = proveMod(bc, level, { N: pi.N }, pi);
  await bench(`proof/${tag}/Πmod/prove`, () => proveMod(bc, level, { N: pi.N }, pi), { n, warmup: 1 });
  await bench(`proof/${tag}/Πmod/verify`, () => verifyMod(bc, level, { N: pi.N }, mod), { n, warmup: 1 });
  const prm = provePrm(bc, level, auxData.params, auxData.secret);
  await bench(`proof/${tag}/Πprm/prove`, () => provePrm(bc, level, auxData.params, auxData.secret), { n, warmup: 1 });
  await bench(`proof/${tag}/Πprm/verify`, () => verifyPrm(bc, level, auxData.params, prm), { n, warmup: 1 });
  const fac = proveFac(c, level, auxPub, { N: pi.N }, pi);
  await bench(`proof/${tag}/Πfac/prove`, () => proveFac(c, level, auxPub, { N: pi.N }, pi), { n });
  await bench(`proof/${tag}/Πfac/verify (CRT)`, () => verifyFac(c, level, auxOwner, { N: pi.N }, fac), { n });
  await bench(`proof/${tag}/Πfac/verify (no secret)`, () => verifyFac(c, level, auxPub, { N: pi.N }, fac), { n });

  const kk = -987654321n;
  const K = pi.encrypt(kk);
  const encSt = { N0: pi.N, K: K.c };
  const enc = proveEnc(c, level, auxPub, encSt, { k: kk, rho: K.rho }, undefined, { secretKey: pi });
  await bench(
    `proof/${tag}/Πenc/prove`,
    () => proveEnc(c, level, auxPub, encSt, { k: kk, rho: K.rho }, undefined, { secretKey: pi }),
    { n },
  );
  await bench(`proof/${tag}/Πenc/verify`, () => verifyEnc(c, level, auxOwner, encSt, enc), { n });

  const lsSt = { N0: pi.N, C: K.c, X: G.encodePoint(G.mulBase(G.mod(kk))) };
  const ls = proveLogStar(c, level, auxPub, lsSt, { x: kk, rho: K.rho }, undefined, { secretKey: pi });
  await bench(
    `proof/${tag}/Πlog*/prove`,
    () => proveLogStar(c, level, auxPub, lsSt, { x: kk, rho: K.rho }, undefined, { secretKey: pi }),
    { n },
  );
  await bench(`proof/${tag}/Πlog*/verify`, () => verifyLogStar(c, level, auxOwner, lsSt, ls), { n });

  const x = 123456n;
  const y = -(1n << 840n);
  const C = pj.publicKey.encrypt(77n).c;
  const ey = pj.publicKey.encrypt(y);
  const Y = pi.encrypt(y);
  const affSt = {
    N0: pj.N,
    N1: pi.N,
    C,
    D: pj.publicKey.add(pj.publicKey.mul(C, x), ey.c),
    Y: Y.c,
    X: G.encodePoint(G.mulBase(x)),
  };
  const w = { x, y, rho: ey.rho, rhoY: Y.rho };
  const aff = proveAffG(c, level, auxPub, affSt, w, undefined, { secretKey: pi });
  await bench(`proof/${tag}/Πaff-g/prove`, () => proveAffG(c, level, auxPub, affSt, w, undefined, { secretKey: pi }), {
    n,
  });
  await bench(`proof/${tag}/Πaff-g/verify`, () => verifyAffG(c, level, auxOwner, affSt, aff, { secretKey: pj }), { n });

  // Πaff-p as Πaff-g but X = Enc_N₁(x): prover owns N₁, verifier owns N₀
  const X = pi.encrypt(x);
  const affPSt = { ...affSt, X: X.c };
  const wp = { ...w, rhoX: X.rho };
  const affP = proveAffP(c, level, auxPub, affPSt, wp, undefined, { secretKey: pi });
  await bench(
    `proof/${tag}/Πaff-p/prove`,
    () => proveAffP(c, level, auxPub, affPSt, wp, undefined, { secretKey: pi }),
    { n },
  );
  await bench(`proof/${tag}/Πaff-p/verify`, () => verifyAffP(c, level, auxOwner, affPSt, affP, { secretKey: pj }), {
    n,
  });
  // Πaff-p with N₀ = N₁ = N_i (Πmul's role: H = K^γ·Enc(0; ρ)); the verifier owns neither modulus
  const gamma = (1n << 255n) - 19n;
  const z = pi.encrypt(0n);
  const Yz = pi.encrypt(0n);
  const Gi = pi.encrypt(gamma);
  const mulSt = {
    N0: pi.N,
    N1: pi.N,
    C: K.c,
    D: pi.publicKey.add(pi.publicKey.mul(K.c, gamma), z.c),
    Y: Yz.c,
    X: Gi.c,
  };
  const mulW = { x: gamma, y: 0n, rho: z.rho, rhoX: Gi.rho, rhoY: Yz.rho };
  const mul = proveAffP(c, level, auxPub, mulSt, mulW, undefined, { secretKey: pi });
  await bench(
    `proof/${tag}/Πaff-p (N₀ = N₁)/prove`,
    () => proveAffP(c, level, auxPub, mulSt, mulW, undefined, { secretKey: pi }),
    { n },
  );
  await bench(`proof/${tag}/Πaff-p (N₀ = N₁)/verify`, () => verifyAffP(c, level, auxOwner, mulSt, mul), { n });

  // Πdec on y at the witness bound 2^(ℓ'+ε+8) (the widest α), base G
  const yd = -decWitnessBound(level) + 99n;
  const Cd = pi.encrypt(yd);
  const decSt = { N0: pi.N, C: Cd.c, X: G.encodePoint(G.mulBase(G.mod(yd))), B: G.encodePoint(G.G) };
  const dec = proveDec(c, level, auxPub, decSt, { y: yd, rho: Cd.rho }, undefined, { secretKey: pi });
  await bench(
    `proof/${tag}/Πdec/prove`,
    () => proveDec(c, level, auxPub, decSt, { y: yd, rho: Cd.rho }, undefined, { secretKey: pi }),
    { n },
  );
  await bench(`proof/${tag}/Πdec/verify`, () => verifyDec(c, level, auxOwner, decSt, dec), { n });
}

if (!proofsOnly) await modexpBenches();
for (const level of [SECURITY_112, SECURITY_128]) {
  if (!proofsOnly) await paillierBenches(level);
  await proofBenches(level);
}
