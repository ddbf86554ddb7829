/**
 * `custodian mobile sign-policy` / signPolicyWithDevice against a real coordinator (HTTP socket,
 * PGlite): the phone enrolls, the administrator approves it by comparing the fingerprint the phone
 * printed (one definition: `deviceFingerprint` of @custodian/wire), then the phone signs policy
 * versions as that Admin device with its PIN-sealed key — the CLI (Admin token from the
 * environment only) and the programmatic API — and refuses what it must: a wrong PIN, a missing
 * token, no pending version, and a document that does not hash to the digest it is shown with.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deviceVerify, policyDigest } from '@custodian/wire';
import { bytesToHex } from '@noble/curves/utils.js';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userIdOf } from '../../coordinator/test/device-fixtures.js';
import { ADMIN_EMAIL, type Harness, type Json, startHarness } from '../../coordinator/test/helpers.js';
import { ADMIN_TOKEN_ENV, type MobileCliIo, registerMobileCommands } from '../src/cli.js';
import { enrollDevice } from '../src/enroll.js';
import { signPolicyWithDevice } from '../src/policy.js';
import { readVaultInfo, WrongPinError } from '../src/vault.js';

const PIN = '482916';
const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const OTHER = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';

let h: Harness;
let dir = '';
let pinFile = '';
let deviceId = '';
let devicePublicKey = '';

/** Run `custodian mobile …` in process with its output captured. */
async function cli(args: string[], env: Record<string, string | undefined>) {
  let out = '';
  let err = '';
  const io: MobileCliIo = { out: (t) => void (out += t), err: (t) => void (err += t), env };
  const program = new Command('custodian').exitOverride();
  registerMobileCommands(program, io);
  let error: Error | undefined;
  try {
    await program.parseAsync(['mobile', ...args], { from: 'user' });
  } catch (e) {
    error = e as Error;
  }
  return { out, err, error };
}

const policyPath = (id: string) => `/admin/v1/profiles/${h.profileId}/policies/${id}`;

function expectSignedBy(v: Json) {
  expect(v.status).toBe('ACTIVE');
  expect(v.signed.device_id).toBe(deviceId);
  expect(v.signed.device_public_key).toBe(devicePublicKey);
  expect(deviceVerify(v.signed.signature, policyDigest(v.document), devicePublicKey)).toBe(true);
}

beforeAll(async () => {
  h = await startHarness();
  dir = mkdtempSync(join(tmpdir(), 'custodian-phone-'));
  pinFile = join(dir, 'pin');
  writeFileSync(pinFile, `${PIN}\n`, { mode: 0o600 });
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe('mobile sign-policy (the Admin device signs policy versions)', () => {
  it('the phone prints exactly the fingerprint the admin API shows, and the administrator approves with it', async () => {
    const r = await enrollDevice({
      url: h.url,
      dataDir: join(dir, 'phone'),
      pin: PIN,
      name: 'admin phone',
      kdf: { N: 1024, r: 8, p: 1 },
    });
    expect(Object.keys(r).sort()).toEqual(['device_id', 'fingerprint', 'mpc_peer_id', 'status']);
    expect(r.fingerprint).toMatch(/^([0-9A-F]{4} ){15}[0-9A-F]{4}$/);
    const shown = await h.req('GET', `/admin/v1/devices/${r.device_id}`, { token: h.adminToken });
    expect(shown.status).toBe(200);
    expect(shown.body.fingerprint).toBe(r.fingerprint);
    expect((await readVaultInfo(join(dir, 'phone'))).fingerprint).toBe(r.fingerprint);
    const a = await h.req('POST', `/admin/v1/devices/${r.device_id}/approve`, {
      token: h.adminToken,
      body: { fingerprint: r.fingerprint, user_id: await userIdOf(h, ADMIN_EMAIL) },
    });
    expect(a.status).toBe(200);
    expect(shown.body.mpc_peer_id).toBe(r.mpc_peer_id);
    deviceId = r.device_id;
    devicePublicKey = (await readVaultInfo(join(dir, 'phone'))).devicePublicKey;
  });

  let policyId = '';

  it('CLI: shows the summary, signs the pending version with the PIN-sealed key (token from the environment)', async () => {
    const assets = await h.req('GET', `/api/v1/profiles/${h.profileId}/assets?page_size=200`, { key: h.apiKey });
    const assetId = assets.body.data.find(
      (a: Json) => a.blockchain === 'ethereum-local' && a.symbol === 'ETH',
    ).asset_id;
    const c = await h.req('POST', `/admin/v1/profiles/${h.profileId}/policies`, {
      token: h.adminToken,
      body: {
        name: 'treasury',
        scope: { wallet_ids: null, blockchain: 'ethereum-local', asset_id: assetId },
        whitelist: [DEST],
        per_transaction_limit: '1000',
        daily_limit: '5000',
        approvals: { quorum: 2, above_amount: '100' },
      },
    });
    expect(c.status).toBe(201);
    policyId = c.body.policy_id;
    const args = ['sign-policy', '--data', join(dir, 'phone'), '--url', h.url, '--profile', h.profileId];
    const noToken = await cli([...args, '--policy', policyId, '--pin-file', pinFile], {});
    expect(noToken.error?.message).toMatch(new RegExp(`set ${ADMIN_TOKEN_ENV}`));
    const r = await cli([...args, '--policy', policyId, '--pin-file', pinFile], { [ADMIN_TOKEN_ENV]: h.adminToken });
    expect(r.error).toBeUndefined();
    expect(r.err).toContain(`Policy ${policyId}, version 1 (PENDING_SIGNATURE)`);
    expect(r.err).toContain('blockchain ethereum-local');
    expect(r.err).toContain(`  - ${DEST}`);
    expect(r.err).toContain('per transaction 1000 base units');
    expect(r.err).toContain('per wallet and asset per UTC day 5000 base units');
    expect(r.err).toContain('Approvals: 2 device approvals above 100 base units, else 1');
    const printed = JSON.parse(r.out) as Json;
    expect(printed.active_version).toBe(1);
    expectSignedBy(printed.versions.find((v: Json) => v.version === 1));
    expect(r.err).toContain(`Digest: ${printed.versions[0].digest}`);
    // the coordinator's record is the one printed
    const g = await h.req('GET', policyPath(policyId), { token: h.adminToken });
    expectSignedBy(g.body.versions.find((v: Json) => v.version === 1));
    // nothing left to sign; an explicit version that is not pending is refused before the PIN
    const again = await cli([...args, '--policy', policyId, '--pin-file', pinFile], {
      [ADMIN_TOKEN_ENV]: h.adminToken,
    });
    expect(again.error?.message).toBe('no version awaits a signature');
    const v1 = await cli([...args, '--policy', policyId, '--version', '1', '--pin-file', pinFile], {
      [ADMIN_TOKEN_ENV]: h.adminToken,
    });
    expect(v1.error?.message).toBe('version 1 is ACTIVE, not awaiting a signature');
  });

  it('API: a wrong PIN sends nothing; the right PIN signs the new version (the old one is superseded)', async () => {
    const u = await h.req('PUT', policyPath(policyId), {
      token: h.adminToken,
      body: { name: 'treasury', whitelist: [DEST, OTHER], per_transaction_limit: null, daily_limit: null },
    });
    expect(u.status).toBe(200);
    const base = {
      dataDir: join(dir, 'phone'),
      url: h.url,
      profileId: h.profileId,
      policyId,
      adminToken: h.adminToken,
    };
    await expect(signPolicyWithDevice({ ...base, pin: '000000' })).rejects.toBeInstanceOf(WrongPinError);
    const pending = await h.req('GET', policyPath(policyId), { token: h.adminToken });
    expect(pending.body.versions.find((v: Json) => v.version === 2).status).toBe('PENDING_SIGNATURE');
    const summaries: string[] = [];
    const r = await signPolicyWithDevice({
      ...base,
      version: 2,
      pin: async () => PIN,
      onSummary: (s) => {
        summaries.push(s);
        return true;
      },
    });
    expect(r.version).toBe(2);
    expect(summaries[0]).toContain('Whitelist (2 addresses)');
    expect(summaries[0]).toContain('per transaction no limit');
    expect(r.signed.device_id).toBe(deviceId);
    expect(r.policy.active_version).toBe(2);
    expectSignedBy(r.policy.versions.find((v: Json) => v.version === 2));
    expect(r.policy.versions.find((v: Json) => v.version === 1).status).toBe('SUPERSEDED');
  });

  it('signs only the document it shows: a document that does not hash to the given digest is not signed', async () => {
    const u = await h.req('PUT', policyPath(policyId), {
      token: h.adminToken,
      body: { name: 'treasury', whitelist: [DEST] },
    });
    expect(u.status).toBe(200);
    // a man in the middle shows the phone another whitelist than the version's digest covers
    const tampering: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if ((init?.method ?? 'GET') !== 'GET') return res;
      const body = (await res.json()) as Json;
      for (const v of body.versions) v.document = { ...v.document, whitelist: [OTHER] };
      return new Response(JSON.stringify(body), { status: res.status, headers: res.headers });
    };
    let shown = false;
    await expect(
      signPolicyWithDevice({
        dataDir: join(dir, 'phone'),
        url: h.url,
        profileId: h.profileId,
        policyId,
        adminToken: h.adminToken,
        pin: PIN,
        fetch: tampering,
        onSummary: () => {
          shown = true;
          return true;
        },
      }),
    ).rejects.toThrow("the coordinator's digest is not the digest of the document shown: not signed");
    expect(shown).toBe(false);
    const g = await h.req('GET', policyPath(policyId), { token: h.adminToken });
    const v3 = g.body.versions.find((v: Json) => v.version === 3);
    expect(v3.status).toBe('PENDING_SIGNATURE');
    expect(v3.digest).toBe(bytesToHex(policyDigest(v3.document)));
    // cancelled at the summary: nothing is signed either
    await expect(
      signPolicyWithDevice({
        dataDir: join(dir, 'phone'),
        url: h.url,
        profileId: h.profileId,
        policyId,
        adminToken: h.adminToken,
        pin: PIN,
        onSummary: () => false,
      }),
    ).rejects.toThrow('cancelled');
    expect(
      (await h.req('GET', policyPath(policyId), { token: h.adminToken })).body.versions.find(
        (v: Json) => v.version === 3,
      ).status,
    ).toBe('PENDING_SIGNATURE');
  });
});
