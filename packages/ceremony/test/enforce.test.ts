/**
 * Signer-side enforcement (enforce.ts) against a real encrypted LevelDB store: the coordinator-
 * compromise cases (non-whitelisted destination, forged / foreign / too few approvals, a rejecting
 * approver, a tampered or untrusted policy, digests not matching the fields), the daily limit from
 * the signer's own ledger (including concurrent requests), and the re-signing rules.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { type EthereumContext, ethereumAddress, recomputeEthereumDigests } from '@custodian/chains';
import { bytesToHex, deriveSecp256k1 } from '@custodian/crypto';
import {
  assetId,
  KeyAlgorithm,
  type PolicyDocument,
  type SignedPolicy,
  type SignRequest,
  signApproval,
  signPolicy,
  type TransferIntent,
  walletIdOf,
} from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EnforcementTrust, EvidenceRefused, enforceTransferEvidence } from '../src/index.js';
import { SecureStore } from '../src/level-store/index.js';
import { intent as fixtureIntent } from './attack-fixtures.js';
import { tempDir } from './helpers.js';

const adminSk = p256.utils.randomSecretKey();
const otherAdminSk = p256.utils.randomSecretKey();
const dev1 = p256.utils.randomSecretKey();
const dev2 = p256.utils.randomSecretKey();
const strangerSk = p256.utils.randomSecretKey();
const pub = (sk: Uint8Array) => bytesToHex(p256.getPublicKey(sk, true));
// the key record's ECDSA master key: the sender is derived from it (issue #20)
const master = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true);
const chainCode = randomBytes(32);
const trust: EnforcementTrust = {
  trustedAdminKeys: [pub(adminSk)],
  approverKeys: new Map([
    ['dev-1', pub(dev1)],
    ['dev-2', pub(dev2)],
  ]),
  chains: { 'ethereum-local': { family: 'ethereum', chainId: 31337, maxFee: '10000000000000000' } },
  keys: [{ suite: 'cggmp', publicKey: bytesToHex(master), chainCode: bytesToHex(chainCode) }],
};

const path = [44, 60, 0, 0, 0];
const fromPub = deriveSecp256k1(master, chainCode, path).publicKey;
const from = ethereumAddress(fromPub);
const dest = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const other = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';
const profile = '11111111-1111-4111-8111-111111111111';
const wallet = walletIdOf('key-1', 0); // the wallet of `path`
// the directory id of ETH on ethereum-local (signers check it: ASSET_MISMATCH)
const asset = assetId('ethereum-local', 'ETH');

const policyDoc: PolicyDocument = {
  policy_id: '44444444-4444-4444-8444-444444444444',
  version: 1,
  profile_id: profile,
  scope: { wallet_ids: null, blockchain: 'ethereum-local', asset_id: null },
  whitelist: [dest],
  per_transaction_limit: '1000',
  daily_limit: '1500',
  approvals: { quorum: 2, above_amount: '500' },
  created_at: '2026-01-01T00:00:00.000Z',
};
const policy = signPolicy(policyDoc, 'admin-phone', adminSk);

let n = 0;
/** A fresh intent (attack-fixtures' builder) from `from` at `path` to `dest`, in `wallet` and `asset`, unless `over` names them. */
function intent(over: Partial<TransferIntent> = {}): TransferIntent {
  n++;
  return fixtureIntent({
    profile_id: profile,
    wallet_id: wallet,
    asset_id: asset,
    source_address: from,
    destination_address: dest,
    derivation_path: path,
    ...over,
  });
}

function context(nonce: number, fee = '2000000000'): EthereumContext {
  return {
    chainId: 31337,
    from,
    fromPublicKey: bytesToHex(fromPub),
    fromPath: path,
    nonce,
    gas: '21000',
    maxFeePerGas: fee,
    maxPriorityFeePerGas: '1000000000',
  };
}

function request(
  i: TransferIntent,
  opts: {
    policy?: SignedPolicy | null;
    approvals?: ReturnType<typeof signApproval>[];
    ctx?: EthereumContext;
    digestsFrom?: TransferIntent;
  } = {},
): SignRequest {
  const ctx = opts.ctx ?? context(n);
  const src = opts.digestsFrom ?? i;
  const digests = recomputeEthereumDigests(
    { asset: { kind: 'native' }, destination: src.destination_address, amount: BigInt(src.amount) },
    ctx,
  ).map((d) => d.digest);
  const approvals = opts.approvals ?? [
    signApproval(i, 'APPROVE', 'dev-1', dev1, '2026-03-04T10:00:01.000Z'),
    ...(BigInt(i.amount) > 500n ? [signApproval(i, 'APPROVE', 'dev-2', dev2, '2026-03-04T10:00:02.000Z')] : []),
  ];
  return {
    keyId: 'key-1',
    algorithm: KeyAlgorithm.SECP256K1_ECDSA,
    derivationPath: path,
    digests,
    evidence: {
      intentJson: JSON.stringify(i),
      policyJson: opts.policy === null ? '' : JSON.stringify(opts.policy ?? policy),
      approvalsJson: approvals.map((a) => JSON.stringify(a)),
      chainContextJson: JSON.stringify(ctx),
    },
  };
}

let store: SecureStore;
let dir = '';
beforeAll(async () => {
  dir = tempDir('enforce');
  store = await SecureStore.open(join(dir, 'db'), 'pass', { N: 1 << 10, r: 8, p: 1 });
});
afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The real check; 'ACCEPTED' or the refusal code. `now`: the signer's clock (default: the real one). */
async function refusal(req: SignRequest, now?: Date): Promise<string> {
  try {
    const v = await enforceTransferEvidence(store, req, trust, now);
    v.release();
    return 'ACCEPTED';
  } catch (e) {
    expect(e).toBeInstanceOf(EvidenceRefused);
    return (e as EvidenceRefused).code;
  }
}

/** Accept and commit (as the ceremony does after a produced signature). */
async function signAndCommit(req: SignRequest, now?: Date): Promise<void> {
  const v = await enforceTransferEvidence(store, req, trust, now);
  await store.batch(v.ledgerOps);
  v.release();
}

describe('signer-side enforcement (coordinator-compromise cases)', () => {
  it('accepts a whitelisted transfer within limits with one valid approval', async () => {
    expect(await refusal(request(intent()))).toBe('ACCEPTED');
  });

  it('refuses a destination outside the whitelist', async () => {
    expect(await refusal(request(intent({ destination_address: other })))).toBe('DESTINATION_NOT_WHITELISTED');
  });

  it('refuses above the per-transaction limit', async () => {
    const i = intent({ amount: '1001' });
    const a = [signApproval(i, 'APPROVE', 'dev-1', dev1, 'x'), signApproval(i, 'APPROVE', 'dev-2', dev2, 'x')];
    expect(await refusal(request(i, { approvals: a }))).toBe('TRANSACTION_LIMIT_EXCEEDED');
  });

  it('refuses forged, foreign and too few approvals, and a rejection', async () => {
    const i = intent({ amount: '600' });
    const good = signApproval(i, 'APPROVE', 'dev-1', dev1, 'x');
    // quorum 2 above 500: one approval is not enough
    expect(await refusal(request(i, { approvals: [good] }))).toBe('INSUFFICIENT_APPROVALS');
    // the same device twice counts once
    expect(await refusal(request(i, { approvals: [good, good] }))).toBe('INSUFFICIENT_APPROVALS');
    // a forged signature (bytes flipped)
    const forged = { ...signApproval(i, 'APPROVE', 'dev-2', dev2, 'x') };
    const sig = forged.signature;
    const bad = { ...forged, signature: `${sig.slice(0, 10)}${sig[10] === '0' ? '1' : '0'}${sig.slice(11)}` };
    expect(await refusal(request(i, { approvals: [good, bad] }))).toBe('APPROVAL_SIGNATURE_INVALID');
    // a device not among the key's approvers, claiming an approver's id
    const stranger = signApproval(i, 'APPROVE', 'dev-2', strangerSk, 'x');
    expect(await refusal(request(i, { approvals: [good, stranger] }))).toBe('APPROVAL_SIGNATURE_INVALID');
    // an approval of another transfer
    const elsewhere = signApproval(intent(), 'APPROVE', 'dev-2', dev2, 'x');
    expect(await refusal(request(i, { approvals: [good, elsewhere] }))).toBe('APPROVAL_SIGNATURE_INVALID');
    // no approval at all
    expect(await refusal(request(i, { approvals: [] }))).toBe('INSUFFICIENT_APPROVALS');
    // an approver rejects
    const no = signApproval(i, 'REJECT', 'dev-2', dev2, 'x');
    expect(await refusal(request(i, { approvals: [good, no] }))).toBe('REJECTED_BY_APPROVER');
    // both approve: accepted
    const yes = signApproval(i, 'APPROVE', 'dev-2', dev2, 'x');
    expect(await refusal(request(i, { approvals: [good, yes] }))).toBe('ACCEPTED');
  });

  it('refuses a tampered policy, an untrusted admin device, and no policy', async () => {
    const tampered: SignedPolicy = { ...policy, document: { ...policy.document, whitelist: [dest, other] } };
    expect(await refusal(request(intent({ destination_address: other }), { policy: tampered }))).toBe(
      'POLICY_SIGNATURE_VERIFICATION_FAILED',
    );
    const raised: SignedPolicy = { ...policy, document: { ...policy.document, per_transaction_limit: null } };
    expect(await refusal(request(intent(), { policy: raised }))).toBe('POLICY_SIGNATURE_VERIFICATION_FAILED');
    const untrusted = signPolicy(policyDoc, 'rogue', otherAdminSk);
    expect(await refusal(request(intent(), { policy: untrusted }))).toBe('POLICY_SIGNATURE_VERIFICATION_FAILED');
    expect(await refusal(request(intent(), { policy: null }))).toBe('NO_POLICY_FOUND');
    const otherChain = signPolicy({ ...policyDoc, scope: { ...policyDoc.scope, blockchain: 'tron' } }, 'a', adminSk);
    expect(await refusal(request(intent(), { policy: otherChain }))).toBe('POLICY_OUT_OF_SCOPE');
  });

  it('refuses digests that do not match the transfer fields', async () => {
    const i = intent();
    // digests of a transfer to another address, evidence for the whitelisted one
    expect(await refusal(request(i, { digestsFrom: { ...i, destination_address: other } }))).toBe('DIGEST_MISMATCH');
    // digests of a larger amount
    expect(await refusal(request(i, { digestsFrom: { ...i, amount: '999' } }))).toBe('DIGEST_MISMATCH');
    // a context whose sender is not the intent's source
    const req = request(i);
    const forgedCtx = { ...context(1), from: other };
    expect(await refusal({ ...req, evidence: { ...req.evidence, chainContextJson: JSON.stringify(forgedCtx) } })).toBe(
      'DIGEST_MISMATCH',
    );
    // another key path than the intent
    expect(await refusal({ ...req, derivationPath: [44, 60, 0, 0, 1] })).toBe('DIGEST_MISMATCH');
    // another key
    expect(await refusal({ ...req, keyId: 'key-2' })).toBe('DIGEST_MISMATCH');
    // no evidence at all
    expect(await refusal({ ...req, evidence: undefined })).toBe('EVIDENCE_MISSING');
  });
});

describe('daily limit from the signer ledger (signer clock)', () => {
  it('counts what this signer signed on the UTC day of its own clock, whatever the created_at', async () => {
    const at = new Date('2026-05-06T12:00:00.000Z');
    await signAndCommit(request(intent({ amount: '1000', created_at: '2026-05-06T11:59:00.000Z' })), at);
    expect(await refusal(request(intent({ amount: '501' })), at)).toBe('DAILY_LIMIT_EXCEEDED');
    expect(await refusal(request(intent({ amount: '500' })), at)).toBe('ACCEPTED');
    // created on another day: counted on the day the signer signs it
    expect(await refusal(request(intent({ amount: '501', created_at: '2026-05-05T23:00:00.000Z' })), at)).toBe(
      'DAILY_LIMIT_EXCEEDED',
    );
    // the next UTC day on the signer's clock: a fresh sum
    expect(await refusal(request(intent({ amount: '1000' })), new Date('2026-05-07T00:00:00.000Z'))).toBe('ACCEPTED');
  });

  it('a transfer counts once, on the day of its first signature: a retry or a replacement the next day adds nothing', async () => {
    const d1 = new Date('2026-05-20T23:59:00.000Z');
    const d2 = new Date('2026-05-21T00:01:00.000Z');
    const i = intent({ amount: '1000', created_at: '2026-05-20T23:58:00.000Z' });
    const first = request(i, { ctx: context(3) });
    await signAndCommit(first, d1);
    await signAndCommit(first, d2); // a retry after midnight
    const fresh = [
      signApproval(i, 'APPROVE', 'dev-1', dev1, '2026-05-21T00:00:30.000Z'),
      signApproval(i, 'APPROVE', 'dev-2', dev2, '2026-05-21T00:00:31.000Z'),
    ];
    await signAndCommit(request(i, { ctx: context(3, '3000000000'), approvals: fresh }), d2); // a fee bump
    expect(await refusal(request(intent({ amount: '1000' })), d2)).toBe('ACCEPTED');
    expect(await refusal(request(intent({ amount: '501' })), d1)).toBe('DAILY_LIMIT_EXCEEDED');
    const sums = (await store.keys('ledger', 'd/')).filter((k) => k.endsWith(`/${i.transfer_id}`));
    expect(sums).toHaveLength(1);
    expect(sums[0]).toContain('/2026-05-20/');
  });

  it('serialises concurrent requests: 20 parallel transfers never exceed the limit', async () => {
    const at = new Date('2026-06-01T08:00:00.000Z');
    const reqs = Array.from({ length: 20 }, () => request(intent({ amount: '100' })));
    const verdicts = await Promise.allSettled(reqs.map((r) => enforceTransferEvidence(store, r, trust, at)));
    const ok = verdicts.filter((v) => v.status === 'fulfilled');
    expect(ok.length).toBe(15); // 1500 / 100
    for (const v of verdicts) {
      if (v.status === 'rejected') expect((v.reason as EvidenceRefused).code).toBe('DAILY_LIMIT_EXCEEDED');
    }
    for (const v of ok) await store.batch(v.value.ledgerOps);
    for (const v of ok) v.value.release();
    expect(await refusal(request(intent({ amount: '1' })), at)).toBe('DAILY_LIMIT_EXCEEDED');
  });
});

describe('re-signing one transfer', () => {
  it('allows the identical request again, a fee replacement only with fresh approvals, nothing else', async () => {
    const at = new Date('2026-07-01T01:00:00.000Z');
    const i = intent({ created_at: '2026-07-01T00:00:00.000Z' });
    const first = request(i, { ctx: context(7) });
    await signAndCommit(first, at);
    // retry of the same digests (the coordinator lost the result): accepted
    expect(await refusal(first, at)).toBe('ACCEPTED');
    // another nonce: a second transaction for the same transfer
    expect(await refusal(request(i, { ctx: context(8) }), at)).toBe('TRANSFER_ALREADY_SIGNED');
    // fee bump (same nonce, higher fee) with the approvals already used: refused
    const bumpCtx = context(7, '3000000000');
    expect(await refusal(request(i, { ctx: bumpCtx }), at)).toBe('INSUFFICIENT_APPROVALS');
    // with a fresh approval: accepted, and the amount is still counted once
    const fresh = signApproval(i, 'APPROVE', 'dev-2', dev2, '2026-07-01T00:05:00.000Z');
    await signAndCommit(request(i, { ctx: bumpCtx, approvals: [fresh] }), at);
    expect(await refusal(request(intent({ amount: '1000', created_at: '2026-07-01T01:00:00.000Z' })), at)).toBe(
      'ACCEPTED',
    );
    // another intent under the same transfer id, also with other labels or another creation time
    expect(await refusal(request({ ...i, amount: '101' }, { ctx: context(7) }), at)).toBe('TRANSFER_ALREADY_SIGNED');
    expect(await refusal(request({ ...i, created_at: '2026-06-30T00:00:00.000Z' }, { ctx: context(9) }), at)).toBe(
      'TRANSFER_ALREADY_SIGNED',
    );
  });
});

describe('a transfer being signed', () => {
  it('a second request while the first is in flight is refused SIGNING_IN_PROGRESS (transient), accepted once it ended', async () => {
    const at = new Date('2026-07-02T01:00:00.000Z');
    const i = intent({ created_at: '2026-07-02T00:00:00.000Z' });
    const req = request(i, { ctx: context(7) });
    const running = await enforceTransferEvidence(store, req, trust, at);
    // the same transfer, the same digests, while the first ceremony holds the reservation
    expect(await refusal(req, at)).toBe('SIGNING_IN_PROGRESS');
    // the first ceremony ended without a signature (nothing written): the retry goes through
    running.release();
    expect(await refusal(req, at)).toBe('ACCEPTED');
  });
});

describe('policy versions only move forward', () => {
  it('after signing under version 2, the superseded version 1 is refused', async () => {
    const v2 = signPolicy({ ...policyDoc, version: 2, daily_limit: '100000' }, 'admin-phone', adminSk);
    const d = '2026-08-01T00:00:00.000Z';
    expect(await refusal(request(intent({ created_at: d }), { policy }))).toBe('ACCEPTED');
    await signAndCommit(request(intent({ created_at: d }), { policy: v2 }), new Date('2026-08-01T00:01:00.000Z'));
    expect(await refusal(request(intent({ created_at: d }), { policy }))).toBe('POLICY_VERSION_SUPERSEDED');
    expect(await refusal(request(intent({ created_at: d }), { policy: v2 }))).toBe('ACCEPTED');
    // an unsigned "version 9" does not move the signer's view forward
    const fake: SignedPolicy = { ...v2, document: { ...v2.document, version: 9 } };
    expect(await refusal(request(intent({ created_at: d }), { policy: fake }))).toBe(
      'POLICY_SIGNATURE_VERIFICATION_FAILED',
    );
    expect(await refusal(request(intent({ created_at: d }), { policy: v2 }))).toBe('ACCEPTED');
  });
});
