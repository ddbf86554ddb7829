#!/usr/bin/env node
// Regenerates packages/cggmp/test/fixtures/test-only-key-shares.json: CGGMP21 key shares (2-of-2, 2-of-3
// and 3-of-5, SECURITY_112) built from the committed TEST-ONLY safe primes with deterministic randomness.
// TEST ONLY: the primes and shares are public. Run after `pnpm build`:
//   node scripts/generate-cggmp-fixtures.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import { auxInfoProtocol, keygenProtocol, keyShareToJson, validateKeyShare } from '../packages/cggmp/dist/index.js';
import { Party, simulate } from '../packages/crypto/dist/index.js';
import { seededRandom } from '../packages/crypto/dist/testing.js';
import { SECURITY_112 } from '../packages/paillier/dist/index.js';

const primes = JSON.parse(
  readFileSync(new URL('../packages/paillier/test/fixtures/test-only-safe-primes.json', import.meta.url)),
);
const prime = (k) => BigInt(`0x${primes.safePrimes1024[k]}`);
const run = (make, n, label) => {
  const sessionId = seededRandom(`fixture-sid-${label}`)(32);
  const res = simulate(
    Array.from(
      { length: n },
      (_, i) => new Party(make(i), { self: i, n, sessionId, rng: seededRandom(`fixture-${label}-${i}`) }),
    ),
  );
  if (res.aborted.some(Boolean)) throw new Error(`${label}: aborted`);
  return res.outputs;
};

const out = {
  WARNING: 'TEST ONLY. Key shares built from public test primes and deterministic randomness. Never use outside tests.',
  generatedBy: 'scripts/generate-cggmp-fixtures.mjs',
  format: 'custodian.cggmp.key-share v1 (first released format; kept for compatibility tests)',
  sets: {},
};
for (const [t, n] of [
  [2, 2],
  [2, 3],
  [3, 5],
]) {
  const t0 = Date.now();
  const cores = run(() => keygenProtocol({ t }), n, `kg-${t}-${n}`);
  const aux = run(
    (i) =>
      auxInfoProtocol({ level: SECURITY_112, primes: { p: prime(2 * i), q: prime(2 * i + 1) }, checkPrimality: false }),
    n,
    `aux-${n}`,
  );
  out.sets[`${t}of${n}`] = cores.map((core, i) => keyShareToJson(validateKeyShare({ core, aux: aux[i] })));
  console.error(`${t}-of-${n}: ${Date.now() - t0} ms`);
}
writeFileSync(
  new URL('../packages/cggmp/test/fixtures/test-only-key-shares.json', import.meta.url),
  `${JSON.stringify(out, null, 1)}\n`,
);
