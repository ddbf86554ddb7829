/**
 * Attack (issue #22): a compromised coordinator moves a master key to a party set of its choosing
 * (its own signers, a lower threshold, or an extra party) by starting a RESHARE that no Admin
 * signed, that a key other than a trusted Admin device signed, or whose request differs from the
 * signed key change. Every signer — old parties and the party new to the key alike — must refuse
 * before any protocol message leaves, and keep nothing (no pending shares, no consumed primes).
 *
 * Real path: in-process signers with enforcement (a trusted Admin key), real LevelDB stores,
 * `runCeremony`. Before this change RESHARE was an unsupported kind: refused for that reason only;
 * these requests now pass or fail on their authorization.
 */
import { CeremonyKind, Outcome, refusalOf, signKeyChange } from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { afterAll, describe, expect, it } from 'vitest';
import { runCeremony } from '../src/index.js';
import { Cluster, held, keyChange, reshareStart, runAt, start, testDevices } from './lifecycle-harness.js';

const cluster = new Cluster(true);
afterAll(() => cluster.close());

describe('attack: a RESHARE without a trusted Admin signature, or unlike the signed change', () => {
  it('is refused by every signer, old and new, and nothing is stored', async () => {
    const signers = await cluster.add(5);
    const [a, b, c, d, e] = signers as [
      (typeof signers)[0],
      (typeof signers)[0],
      (typeof signers)[0],
      (typeof signers)[0],
      (typeof signers)[0],
    ];
    for (const s of signers) await cluster.seedPrimes(s);
    const made = await runAt(runCeremony, start(CeremonyKind.MASTER_KEY, [a, b, c], { threshold: 2 }), [a, b, c]);
    expect(made.map((r) => r.outcome)).toEqual([Outcome.OK, Outcome.OK, Outcome.OK]);
    const keyId = made[0]?.keyId as string;
    const rec = await held(a, keyId);
    if (!rec) throw new Error('no key');
    const devices = testDevices(2);
    const session = [a, b, c, d];
    const doc = keyChange(rec, [a, b, d], 2, devices);
    const snapshot = async () =>
      Promise.all(
        signers.map(async (s) => ({
          shares: (await s.ctx.store.keys('shares')).length,
          pending: (await s.ctx.store.keys('pending')).length,
          primes: (await s.ctx.store.keys('primes')).length,
        })),
      );
    const before = await snapshot();

    const untrusted = p256.utils.randomSecretKey();
    const cases: { name: string; req: ReturnType<typeof reshareStart>; code: string }[] = [
      {
        name: 'unsigned',
        req: reshareStart(doc, session, [a, b, d], devices, {
          document: doc,
          device_id: '',
          device_public_key: '',
          signature: '',
        }),
        code: 'KEY_CHANGE_NOT_AUTHORIZED',
      },
      {
        name: 'signed by a device that is no trusted Admin',
        req: reshareStart(doc, session, [a, b, d], devices, signKeyChange(doc, 'intruder', untrusted)),
        code: 'KEY_CHANGE_NOT_AUTHORIZED',
      },
      {
        name: 'a signed change for another key',
        req: { ...reshareStart({ ...doc, key_id: 'cd'.repeat(16) }, session, [a, b, d], devices), keyId },
        code: 'REQUEST_INVALID',
      },
    ];
    // the request adds a party (e) that the signed document does not have
    const added = reshareStart(doc, [...session, e], [a, b, d, e], devices);
    cases.push({ name: 'a party added to the signed new set', req: added, code: 'REQUEST_INVALID' });
    // the request raises the threshold, or swaps the approver devices
    const t3 = reshareStart(doc, session, [a, b, d], devices);
    cases.push({
      name: 'another threshold',
      req: { ...t3, reshare: { ...(t3.reshare as NonNullable<typeof t3.reshare>), newThreshold: 3 } },
      code: 'REQUEST_INVALID',
    });
    const other = testDevices(1);
    const dv = reshareStart(doc, session, [a, b, d], devices);
    cases.push({
      name: 'other approver devices',
      req: {
        ...dv,
        reshare: {
          ...(dv.reshare as NonNullable<typeof dv.reshare>),
          approverDevices: [{ deviceId: other[0]!.deviceId, publicKey: other[0]!.publicKey }],
        },
      },
      code: 'REQUEST_INVALID',
    });
    // the document's public keys are not the key's (an old party notices)
    const forged = { ...doc, public_keys: doc.public_keys.map((k) => ({ ...k, chain_code: '00'.repeat(32) })) };
    cases.push({
      name: 'other public keys',
      req: reshareStart(forged, session, [a, b, d], devices),
      code: 'REQUEST_INVALID',
    });

    for (const { name, req, code } of cases) {
      const at = req.parties.map((p) => signers.find((s) => s.id.peerId === p.peerId) as (typeof signers)[0]);
      // the forged public keys are checked by the parties that hold the key; d (new) learns them from the document
      const refusing = name === 'other public keys' ? at.filter((s) => s !== d) : at;
      const res = await runAt(runCeremony, req, refusing);
      for (const r of res) {
        expect(r.outcome, `${name}: ${r.error}`).toBe(Outcome.REFUSED);
        expect(refusalOf(r.refusal), name).toBe(code);
      }
    }
    expect(await snapshot()).toEqual(before);
  });
});
