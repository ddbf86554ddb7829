/**
 * Attack (issue #20 item 10): the operator guide asks the operator to compare a server signer's
 * identity fingerprint out of band (`custodian signer init` prints it) before registering it. If
 * the coordinator stores whatever `--fingerprint` says, a swapped peer id (an attacker's node)
 * passes that check with any typed value. The fingerprint given must be the one derived from the
 * peer id's Ed25519 key, or the registration is refused — as device approval already does.
 */
import { fingerprint } from '@custodian/signer-client';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './helpers.js';

/** A signer identity as `custodian signer init` makes one: an Ed25519 libp2p key. */
async function createIdentity() {
  const key = await generateKeyPair('Ed25519');
  return { peerId: peerIdFromPrivateKey(key).toString(), publicKey: key.publicKey.raw };
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('server signer registration checks the fingerprint against the peer id', () => {
  it('refuses a fingerprint that is not the peer id key’s, and registers nothing', async () => {
    const signer = await createIdentity();
    const attacker = await createIdentity();
    const body = {
      name: 'signer-1',
      peer_id: attacker.peerId, // the peer id was swapped; the operator typed the real signer's fingerprint
      address: '/ip4/127.0.0.1/tcp/7400',
      fingerprint: fingerprint(signer.publicKey),
    };
    for (const fp of [body.fingerprint, 'ab:cd:ef:01:23:45', '0000 0000 0000 0000 0000']) {
      const r = await h.req('POST', '/admin/v1/signers', { token: h.adminToken, body: { ...body, fingerprint: fp } });
      expect(r.status).toBe(422);
      expect(r.body).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ field: 'body.fingerprint' }] });
    }
    expect((await h.req('GET', '/admin/v1/signers', { token: h.adminToken })).body.total).toBe(0);
  });

  it('registers the signer when the fingerprint is its own (spaces, colons and case ignored)', async () => {
    const signer = await createIdentity();
    const fp = fingerprint(signer.publicKey);
    const typed = fp.replace(/ /g, ':').toUpperCase();
    const r = await h.req('POST', '/admin/v1/signers', {
      token: h.adminToken,
      body: { name: 'signer-2', peer_id: signer.peerId, address: '/ip4/127.0.0.1/tcp/7401', fingerprint: typed },
    });
    expect(r.status).toBe(201);
    // stored in the canonical form the signer prints
    expect(r.body.fingerprint).toBe(fp);
  });
});
