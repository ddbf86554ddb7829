/**
 * Attack (issue #22 "Removing a device revokes its approval rights at the signers at the same
 * moment"): a phone is lost; the coordinator removes its device and sends RevokeApprover. A
 * coordinator (or an attacker holding the lost phone) that then presents a transfer approved by
 * that device must be refused by every signer on the very next SIGN — before any reshare removed
 * the phone's share — and the revocation must survive a restart.
 *
 * Real path: two in-process signers (real encrypted LevelDB stores, real enforcement, `runCeremony`)
 * create a CGGMP21 key whose approver devices are dev-1 and dev-2; a transfer approved by dev-1
 * signs; dev-1 is revoked (`revokeApprover`, as the daemon and the phone dispatch it); the same kind
 * of transfer approved by dev-1 is then refused, by both signers, also after a restart. Before
 * this change there was no revocation at all (the second transfer signed).
 */
import { bytesToHex } from '@custodian/crypto';
import { CeremonyKind, KeyAlgorithm, Outcome, refusalOf, signApproval } from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { afterAll, describe, expect, it } from 'vitest';
import { revokeApprover, runCeremony } from '../src/index.js';
import { adminSk, CHAINS, dev1, dev2, ethContext, intent, request, useMasterKey } from './attack-fixtures.js';
import { Cluster, held, runAt, start } from './lifecycle-harness.js';

const cluster = new Cluster({
  trustedAdminKeys: [bytesToHex(p256.getPublicKey(adminSk, true))],
  chains: CHAINS as never,
});
afterAll(() => cluster.close());

describe('attack: a revoked approver device still approves', () => {
  it('after RevokeApprover every signer refuses the device’s approval on the next SIGN, also after a restart', async () => {
    const signers = await cluster.add(2);
    for (const s of signers) await cluster.seedPrimes(s);
    const devices = [
      { deviceId: 'dev-1', publicKey: p256.getPublicKey(dev1, true) },
      { deviceId: 'dev-2', publicKey: p256.getPublicKey(dev2, true) },
    ];
    const mk = start(CeremonyKind.MASTER_KEY, signers, {
      threshold: 2,
      algorithms: [KeyAlgorithm.SECP256K1_ECDSA],
      approverDevices: devices,
    });
    const made = await runAt(runCeremony, mk, signers);
    expect(made.map((r) => r.outcome)).toEqual([Outcome.OK, Outcome.OK]);
    const keyId = made[0]?.keyId as string;
    const ecdsa = made[0]?.publicKeys?.find((k) => k.algorithm === KeyAlgorithm.SECP256K1_ECDSA);
    useMasterKey({
      ecdsa: { publicKey: ecdsa?.publicKey as Uint8Array, chainCode: ecdsa?.chainCode as Uint8Array },
      tr: { publicKey: ecdsa?.publicKey as Uint8Array, chainCode: ecdsa?.chainCode as Uint8Array },
    });
    const path = [44, 60, 0, 0, 0];
    const approvedByDev1 = () => {
      const i = intent({ key_id: keyId, derivation_path: path, created_at: new Date(Date.now() - 1000).toISOString() });
      return request(i, ethContext(path), [signApproval(i, 'APPROVE', 'dev-1', dev1, new Date().toISOString())]);
    };

    // control: dev-1's approval is accepted while dev-1 is an approver device
    const first = start(CeremonyKind.SIGN, signers, { threshold: 2, sign: approvedByDev1() });
    const ok = await runAt(runCeremony, first, signers);
    expect(
      ok.map((r) => r.outcome),
      ok.map((r) => r.error).join('; '),
    ).toEqual([Outcome.OK, Outcome.OK]);

    // the lost phone is revoked at both signers
    for (const s of signers) expect(await revokeApprover(s.ctx.store, 'dev-1', devices[0]?.publicKey, s.ctx)).toBe(1);
    // repeated: nothing left to change
    expect(await revokeApprover(signers[0]!.ctx.store, 'dev-1', undefined, signers[0]!.ctx)).toBe(0);

    const second = start(CeremonyKind.SIGN, signers, { threshold: 2, sign: approvedByDev1() });
    const refused = await runAt(runCeremony, second, signers);
    for (const r of refused) {
      expect(r.outcome).toBe(Outcome.REFUSED);
      expect(['APPROVAL_SIGNATURE_INVALID', 'INSUFFICIENT_APPROVALS']).toContain(refusalOf(r.refusal));
    }

    // durable: a restarted signer still refuses, and dev-2 remains an approver device
    await cluster.restart(signers[0]!);
    const rec = await held(signers[0]!, keyId);
    expect(rec?.approverDevices?.map((d) => d.deviceId)).toEqual(['dev-2']);
    const third = start(CeremonyKind.SIGN, signers, { threshold: 2, sign: approvedByDev1() });
    const again = await runCeremony(signers[0]!.ctx, third);
    expect(again.outcome).toBe(Outcome.REFUSED);
  });
});
