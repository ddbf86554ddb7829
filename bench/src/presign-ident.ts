/**
 * CGGMP21 presigning identification (packages/cggmp/src/presign-ident.ts): an honest 3-party
 * presign (2-of-3 key, signers 0, 1, 2) against one where party 1 broadcasts δ_1 + 1 and then takes
 * part in identification (rounds 3–4: Πaff-p publication, Πdec) until every honest party names it.
 * Samples alternate (honest, cheating, honest, …) in one process so both see the same machine
 * state. All parties run in one process (a figure is the sum of every party's CPU time).
 * Run: `pnpm build && node bench/dist/presign-ident.js` (BENCH_N=… samples per case, default 5).
 * Uses the committed TEST-ONLY key shares (SECURITY_112).
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { type KeyShare, keyShareFromJson, type Presignature, presignProtocol } from '@custodian/cggmp';
import {
  type Canonical,
  secp256k1Group as G,
  Party,
  type ProtocolSpec,
  simulate,
  systemRandom,
} from '@custodian/crypto';
import { report, summarise } from './harness.js';

const fixture = JSON.parse(
  readFileSync(new URL('../../packages/cggmp/test/fixtures/test-only-key-shares.json', import.meta.url), 'utf8'),
) as { sets: Record<string, unknown[]> };
const shares = (fixture.sets['2of3'] as unknown[]).map((j) => keyShareFromJson(j));
const signers = [0, 1, 2];

/** Party 1's spec when cheating: δ_1 + 1 in its round-2 broadcast and in its own state. */
function cheating(spec: ProtocolSpec<unknown, Presignature>): ProtocolSpec<unknown, Presignature> {
  return {
    ...spec,
    rounds: spec.rounds.map((r, k) =>
      k !== 1
        ? r
        : {
            ...r,
            process(state, received, ctx) {
              const res = r.process(state, received, ctx);
              if (res.output !== undefined) return res;
              const st = res.state as { delta: bigint };
              st.delta = G.mod(st.delta + 1n);
              const broadcast = {
                ...(res.send.broadcast as Record<string, Canonical>),
                delta: G.encodeScalar(st.delta),
              };
              return { state: st, send: { ...res.send, broadcast } };
            },
          },
    ),
  };
}

function presign(cheat: boolean): void {
  const sessionId = systemRandom(32);
  const parties = signers.map((s, pos) => {
    const spec = presignProtocol({ share: shares[s] as KeyShare, signers }) as ProtocolSpec<unknown, Presignature>;
    return new Party(cheat && pos === 1 ? cheating(spec) : spec, {
      self: pos,
      n: signers.length,
      sessionId,
      rng: systemRandom,
    });
  });
  const res = simulate(parties);
  if (cheat) {
    const named = res.aborted[0]?.culprits.map((c) => c.party) ?? [];
    if (named.length !== 1 || named[0] !== 1) throw new Error(`identification did not name party 1: ${named}`);
  } else if (res.aborted.some(Boolean)) {
    throw new Error(res.aborted.find(Boolean)?.reason);
  }
}

const N = Number(process.env.BENCH_N ?? 5);
presign(false);
presign(true);
const honest: number[] = [];
const ident: number[] = [];
for (let k = 0; k < N; k++) {
  for (const [cheat, into] of [
    [false, honest],
    [true, ident],
  ] as const) {
    const t0 = performance.now();
    presign(cheat);
    into.push(performance.now() - t0);
  }
}
report(summarise('cggmp.presign.s112.3parties.honest', honest));
report(summarise('cggmp.presign.s112.3parties.identification', ident, 'ms', { cheater: 1, check: 'proof.dec' }));
