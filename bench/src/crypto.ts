/**
 * Benchmarks of @custodian/crypto: Feldman VSS deal/verify, Πsch prove/verify, point encoding, HD derivation.
 * Run: `pnpm build && node bench/dist/crypto.js` — prints one JSON figure per line (ms).
 */
import {
  deriveEd25519,
  deriveSecp256k1,
  ed25519Group,
  schProveFresh,
  schVerify,
  secp256k1Group,
  systemRandom,
  Transcript,
  vssDeal,
  vssVerifyShare,
} from '@custodian/crypto';
import { bench } from './harness.js';

const rng = systemRandom;
const sessionId = rng(32);

for (const [t, n] of [
  [2, 3],
  [3, 5],
] as const) {
  const ids = Array.from({ length: n }, (_, i) => BigInt(i + 1));
  const secret = secp256k1Group.randomScalar(rng);
  await bench(`vss.deal.secp256k1.${t}of${n}`, () => vssDeal(secp256k1Group, secret, t, ids, rng), { n: 50 });
  const d = vssDeal(secp256k1Group, secret, t, ids, rng);
  await bench(
    `vss.verify.secp256k1.${t}of${n}`,
    () => vssVerifyShare(secp256k1Group, d.commitments, 1n, d.shares[0] as bigint),
    {
      n: 50,
    },
  );
}

for (const g of [secp256k1Group, ed25519Group] as const) {
  // biome-ignore lint/suspicious/noExplicitAny: generic over both groups
  const group = g as any;
  const x = g.randomScalar(rng);
  const X = group.mulBase(x);
  const t = () => Transcript.create('custodian.bench.sch', { sessionId, parties: [1n, 2n, 3n] });
  await bench(`sch.prove.${g.name}`, () => schProveFresh(group, t(), X, x, rng), { n: 50 });
  const proof = schProveFresh(group, t(), X, x, rng);
  await bench(`sch.verify.${g.name}`, () => schVerify(group, t(), X, proof), { n: 50 });
  // fresh projective points (Z ≠ 1), as a sum leaves them (noble memoizes a point's affine form, so
  // each run takes a new one): noble's own toBytes against encodePoint, which normalizes first
  const fresh = () => {
    const pts = Array.from({ length: 550 }, () => X.add(group.mulBase(g.randomScalar(rng))));
    let i = 0;
    return () => pts[i++];
  };
  const a = fresh();
  await bench(`point.toBytes.noble.projective.${g.name}`, () => a().toBytes(true), { n: 500, warmup: 50 });
  const b = fresh();
  await bench(`point.encode.projective.${g.name}`, () => group.encodePoint(b()), { n: 500, warmup: 50 });
}

const chainCode = rng(32);
const pk = secp256k1Group.encodePoint(secp256k1Group.mulBase(secp256k1Group.randomScalar(rng)));
await bench('hd.derive.secp256k1.depth5', () => deriveSecp256k1(pk, chainCode, 'm/44/60/0/0/7'), { n: 50 });
const edPk = ed25519Group.encodePoint(ed25519Group.mulBase(ed25519Group.randomScalar(rng)));
await bench('hd.derive.ed25519.depth5', () => deriveEd25519(edPk, chainCode, 'm/44/501/0/0/7'), { n: 50 });
