/**
 * The master key ceremony (DESIGN §3 "Master key and HD wallets"): FROST(Ed25519, SHA-512) and
 * FROST(secp256k1) for BIP340/Taproot, each with its own joint chain code (packages/frost
 * `dkgProtocol`), and, when requested (or by default when the signer has a prime pool), CGGMP21
 * ECDSA keygen + aux-info with two safe primes from the pool. Every session of the ceremony runs
 * at once; the shares and the key record are returned as ONE batch, only when all succeeded.
 */
import {
  type AuxInfo,
  auxInfoProtocol,
  type CoreKeyShare,
  keygenProtocol,
  keyShareToJson,
  validateKeyShare as validateEcdsaKeyShare,
} from '@custodian/cggmp';
import { bytesToHex, secp256k1Group } from '@custodian/crypto';
import { dkgProtocol, encodeKeyShare, type KeyShare, type SuiteName } from '@custodian/frost';
import { type CeremonyResult, KeyAlgorithm, Outcome, type StartCeremony } from '@custodian/wire';
import type { StoredPrimePool } from '../primes.js';
import type { SessionOutcome, SessionParty } from '../runner.js';
import type { StoreOp } from '../storage.js';
import { type CeremonyContext, combinedTranscript, failure, Refused, sessionId } from './context.js';
import { type KeyRecord, loadKeyRecord, publicKeys } from './keys.js';

const FROST_SUITES: readonly { suite: SuiteName; algorithm: number }[] = [
  { suite: 'ed25519', algorithm: KeyAlgorithm.ED25519 },
  { suite: 'secp256k1-tr', algorithm: KeyAlgorithm.SECP256K1_TAPROOT },
];

const enc = new TextEncoder();

/**
 * Run the master key ceremony's sessions (see the module comment).
 * @returns the result and the batch to write (the shares, the key record and the consumed primes;
 *   on failure only the primes' deletion)
 * @throws Refused for a bad threshold, an existing key id, bad approver devices or algorithms, or no primes
 */
export async function masterKey(
  ctx: CeremonyContext,
  start: StartCeremony,
  ceremonyId: Uint8Array,
  parties: SessionParty[],
  self: number,
  deadline: number,
): Promise<{ result: CeremonyResult; ops: StoreOp[] }> {
  const t = start.threshold;
  if (!Number.isSafeInteger(t) || t < 2 || t > parties.length)
    throw new Refused(`threshold: ${t} not in [2, ${parties.length}]`);
  const keyId = bytesToHex(ceremonyId);
  if (await loadKeyRecord(ctx.store, keyId)) throw new Refused('key id already exists');
  const approverDevices = (start.approverDevices ?? []).map((d, i) => {
    if (typeof d.deviceId !== 'string' || d.deviceId === '' || !(d.publicKey instanceof Uint8Array)) {
      throw new Refused(`approverDevices[${i}]: device id and public key required`);
    }
    if (d.publicKey.length !== 33) throw new Refused(`approverDevices[${i}]: 33-byte compressed P-256 key`);
    return { deviceId: d.deviceId, publicKey: bytesToHex(d.publicKey) };
  });
  const requested = start.algorithms && start.algorithms.length > 0 ? new Set(start.algorithms) : undefined;
  const frostSuites = FROST_SUITES.filter((s) => !requested || requested.has(s.algorithm));
  const ecdsa = requested ? requested.has(KeyAlgorithm.SECP256K1_ECDSA) : ctx.primePool !== undefined;
  for (const a of requested ?? []) {
    if (![KeyAlgorithm.ED25519, KeyAlgorithm.SECP256K1_TAPROOT, KeyAlgorithm.SECP256K1_ECDSA].includes(a as 1)) {
      throw new Refused(`algorithms: unknown algorithm ${a}`);
    }
  }
  let primes: { p: bigint; q: bigint; keys: string[] } | undefined;
  if (ecdsa) {
    if (!ctx.primePool)
      throw new Refused('ECDSA requested but this signer has no prime pool configured', 'PRIME_POOL_NOT_CONFIGURED');
    primes = await ctx.primePool.take();
    if (!primes) throw new Refused('prime pool empty: retry when it has refilled', 'PRIME_POOL_EMPTY');
  }
  const pool = ctx.primePool;
  const primeKeys = primes?.keys ?? [];
  try {
    const common = { parties, self, secretKey: ctx.secretKey, deadline, group: keyId };
    const frost = Promise.all(
      frostSuites.map(({ suite }) =>
        ctx.runner.run<KeyShare>({
          ...common,
          sessionId: sessionId(ceremonyId, `frost.dkg.${suite}`),
          spec: dkgProtocol({ suite, threshold: t }),
          label: `frost.dkg.${suite}`,
        }),
      ),
    );
    const cggmp = primes
      ? Promise.all([
          ctx.runner.run<CoreKeyShare>({
            ...common,
            sessionId: sessionId(ceremonyId, 'cggmp.keygen'),
            spec: keygenProtocol({ t }),
            label: 'cggmp.keygen',
          }),
          ctx.runner.run<AuxInfo>({
            ...common,
            sessionId: sessionId(ceremonyId, 'cggmp.aux'),
            spec: auxInfoProtocol({
              level: (pool as StoredPrimePool).level,
              primes: { p: primes.p, q: primes.q },
              checkPrimality: false,
            }),
            label: 'cggmp.aux',
          }),
        ] as const)
      : Promise.resolve(undefined);
    const [frostOuts, cggmpOuts] = await Promise.all([frost, cggmp]);
    const outs: SessionOutcome<unknown>[] = [...frostOuts, ...(cggmpOuts ?? [])];
    const consumed = pool ? pool.consumeOps(primeKeys) : [];
    if (!outs.every((o) => o.status === 'ok')) return { result: failure(ceremonyId, outs, parties), ops: consumed };
    const shares = frostOuts.map((o) => (o as { output: KeyShare }).output);
    const keys: { algorithm: number; suite: SuiteName | 'cggmp'; publicKey: string; chainCode: string }[] = shares.map(
      (s, i) => ({
        algorithm: (frostSuites[i] as { algorithm: number }).algorithm,
        suite: s.suite,
        publicKey: bytesToHex(s.groupPublicKey),
        chainCode: bytesToHex(s.chainCode),
      }),
    );
    const ops: StoreOp[] = [
      ...consumed,
      ...shares.map(
        (s): StoreOp => ({ type: 'put', sublevel: 'shares', key: `${keyId}/${s.suite}`, value: encodeKeyShare(s) }),
      ),
    ];
    if (cggmpOuts) {
      const ecdsaShare = validateEcdsaKeyShare({
        core: (cggmpOuts[0] as { output: CoreKeyShare }).output,
        aux: (cggmpOuts[1] as { output: AuxInfo }).output,
      });
      keys.push({
        algorithm: KeyAlgorithm.SECP256K1_ECDSA,
        suite: 'cggmp',
        publicKey: bytesToHex(secp256k1Group.encodePoint(ecdsaShare.core.publicKey)),
        chainCode: bytesToHex(ecdsaShare.core.chainCode),
      });
      ops.push({
        type: 'put',
        sublevel: 'shares',
        key: `${keyId}/cggmp`,
        value: enc.encode(JSON.stringify(keyShareToJson(ecdsaShare))),
      });
    }
    const rec: KeyRecord = {
      keyId,
      threshold: t,
      parties: parties.map((p) => p.peerId),
      keys,
      epoch: 0,
      createdAt: new Date().toISOString(),
      approverDevices,
    };
    ops.push({ type: 'put', sublevel: 'shares', key: `${keyId}/meta`, value: enc.encode(JSON.stringify(rec)) });
    return {
      result: {
        ceremonyId,
        outcome: Outcome.OK,
        keyId,
        publicKeys: publicKeys(rec),
        transcriptHash: combinedTranscript(ceremonyId, outs),
      },
      ops,
    };
  } catch (e) {
    // the primes were not consumed by a batch: give them back only if no session saw them
    if (pool) pool.release(primeKeys);
    throw e;
  }
}
