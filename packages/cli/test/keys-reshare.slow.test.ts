/**
 * The key lifecycle from the operator's command line across real signer processes (issue #22):
 * five signer daemons (`custodian signer start`, each its own process group), a coordinator on a
 * real socket, `custodian admin keys …` in process. A 3-of-4 master key among s1–s4;
 * `replace-signer` s4 → s5 (3-of-4 → 3-of-4); `reshare` to 2-of-3 among s1, s2, s5; `reshare` 2-of-3
 * → 3-of-5 among all five (s4 joins again as a new party); after each, the public keys are
 * unchanged and a drill among the new set verifies a signature per key type; then every signer is
 * backed up (`custodian signer backup create` of the stopped signer) and the drill passes.
 * FROST keys (Ed25519, Taproot): see keys-harness.ts for why not ECDSA here.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSigner } from '../../signer/test/cluster.js';
import { type KeysHarness, startKeysHarness } from './keys-harness.js';

let k: KeysHarness;
beforeAll(async () => {
  buildSigner();
  k = await startKeysHarness({ processes: true, count: 5, parties: 4, threshold: 3 });
}, 300_000);
afterAll(async () => {
  await k?.close();
});

interface Mk {
  master_key_id: string;
  threshold: number;
  parties: { kind: string; id: string }[];
  secp256k1_public_key: string;
  ed25519_public_key: string;
}

async function masterKey(): Promise<Mk> {
  const r = await k.cli('--json', 'master-keys', 'list');
  const mk = (JSON.parse(r.out) as { data: Mk[] }).data.find((m) => m.master_key_id === k.masterKeyId);
  if (mk === undefined) throw new Error('no master key');
  return mk;
}

const ids = (...n: number[]) => n.map((i) => k.signers[i - 1]!.signerId);

/** The drill's JSON answer: every signature verified, signed by the current set. */
async function drill(): Promise<{ passed: boolean; result: { signers: { id: string; backup_current: boolean }[] } }> {
  const r = await k.cli('--json', 'keys', 'drill', k.masterKeyId, '--wait');
  const v = JSON.parse(r.out);
  expect(v.status, r.out).toBe('SUCCEEDED');
  expect(v.result.signatures.length).toBe(2);
  for (const s of v.result.signatures) expect(s.verified, JSON.stringify(s)).toBe(true);
  return v;
}

describe('custodian admin keys across signer processes', () => {
  it('3-of-4 replace-signer, 3-of-4 → 2-of-3 and 2-of-3 → 3-of-5 reshares, then the drill passes', async () => {
    const start = await masterKey();
    expect(start.threshold).toBe(3);
    expect(start.parties.map((p) => p.id)).toEqual(ids(1, 2, 3, 4));
    const same = async (t: number, parties: string[]) => {
      const mk = await masterKey();
      expect(mk.threshold).toBe(t);
      expect(mk.parties.map((p) => p.id).sort()).toEqual([...parties].sort());
      expect(mk.secp256k1_public_key).toBe(start.secp256k1_public_key);
      expect(mk.ed25519_public_key).toBe(start.ed25519_public_key);
      const d = await drill();
      // the drill names parties of the new set only
      for (const s of d.result.signers) expect(parties).toContain(s.id);
    };

    const replaced = await k.cli(
      'keys',
      'replace-signer',
      k.masterKeyId,
      `server:${ids(4)[0]}`,
      `server:${ids(5)[0]}`,
      '--device-key',
      k.adminDeviceKeyFile,
      '--wait',
    );
    expect(replaced.code, `${replaced.out}\n${replaced.err}`).toBe(0);
    expect(replaced.out).toMatch(/old set: 3-of-4/);
    expect(replaced.out).toMatch(/new set: 3-of-4/);
    await same(3, ids(1, 2, 3, 5));

    const down = await k.cli(
      '--json',
      'keys',
      'reshare',
      k.masterKeyId,
      '--threshold',
      '2',
      '--signers',
      ['s1', 's2', 's5'].join(','), // names, looked up
      '--device-key',
      k.adminDeviceKeyFile,
      '--wait',
    );
    expect(down.code, `${down.out}\n${down.err}`).toBe(0);
    expect(JSON.parse(down.out)).toMatchObject({ reason: 'reshare', status: 'SUCCEEDED' });
    await same(2, ids(1, 2, 5));

    const up = await k.cli(
      'keys',
      'reshare',
      k.masterKeyId,
      '--threshold',
      '3',
      '--signers',
      ids(1, 2, 3, 4, 5)
        .map((id) => `server:${id}`)
        .join(','),
      '--device-key',
      k.adminDeviceKeyFile,
      '--wait',
    );
    expect(up.code, `${up.out}\n${up.err}`).toBe(0);
    expect(up.out).toMatch(/old set: 2-of-3/);
    expect(up.out).toMatch(/new set: 3-of-5/);
    await same(3, ids(1, 2, 3, 4, 5));

    // never backed up: the drill signs but does not pass; backed up at this epoch: it passes
    expect((await drill()).passed).toBe(false);
    const recovery = join(k.dir, 'offline');
    expect((await k.signerCli('backup', 'keygen', '--out', recovery)).code).toBe(0);
    for (const s of k.signers) await k.backup(s, join(recovery, 'recovery.pub'));
    const d = await drill();
    expect(d.passed).toBe(true);
    expect(d.result.signers.every((s) => s.backup_current)).toBe(true);
    const table = await k.cli('keys', 'drill', k.masterKeyId, '--wait');
    expect(table.code).toBe(0);
    expect(table.out).toMatch(/drill passed/);
  }, 900_000);
});
