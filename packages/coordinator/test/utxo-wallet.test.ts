/**
 * UTXO wallets with several addresses (issue #28 [utxo]) on PGlite: P2TR addresses derive from
 * the Taproot master key (and are refused without one), a transfer's sources are every address of
 * the wallet on the chain, change goes to a fresh internal address that two concurrent builds
 * never share, and {@link PgUtxoSource} offers the unconfirmed change of the coordinator's own
 * sent transfers up to the configured depth.
 */
import { randomUUID } from 'node:crypto';
import { UTXO_NETWORKS, utxoAddress } from '@custodian/chains';
import { deriveSecp256k1 } from '@custodian/crypto';
import { ControlClient } from '@custodian/signer-client';
import { type CeremonyResult, KeyAlgorithm, Outcome, type StartCeremony } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { randomBytes } from '@noble/hashes/utils.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assetId, BLOCKCHAINS, blockchainId } from '../src/directory.js';
import { createMasterKeyClient } from '../src/signing/master-key.js';
import { PgUtxoSource } from '../src/transfers/chains.js';
import { perDigestKeys } from '../src/transfers/signing-attempt.js';
import {
  ChangeAddressTakenError,
  nextChangeAddress,
  recordChangeAddress,
  walletKeys,
  walletSources,
} from '../src/transfers/utxo-sources.js';
import { WatchList } from '../src/wallets/watch-list.js';
import { type Harness, type Json, startHarness, testMasterKey } from './helpers.js';

const BTC = blockchainId('bitcoin-mainnet');
const BTC_DEF = BLOCKCHAINS.find((b) => b.key === 'bitcoin-mainnet')!;
const BITCOIN = UTXO_NETWORKS.find((n) => n.id === 'bitcoin')!;
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const unhex = (s: string) => Uint8Array.from(Buffer.from(s, 'hex'));
const idem = () => ({ 'idempotency-key': randomUUID() });

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

async function createWallet(hh: Harness = h): Promise<Json> {
  const r = await hh.req('POST', `/api/v1/profiles/${hh.profileId}/wallets`, {
    key: hh.apiKey,
    headers: idem(),
    body: { blockchain_ids: [BTC] },
  });
  expect(r.status).toBe(201);
  return r.body;
}

async function addAddress(walletId: string, type: 'p2wpkh' | 'p2tr', hh: Harness = h) {
  return hh.req('POST', `/api/v1/profiles/${hh.profileId}/wallets/${walletId}/addresses`, {
    key: hh.apiKey,
    headers: idem(),
    body: { blockchain_id: BTC, address_type: type },
  });
}

/** A change address allocated as a build does: derive the next index, store it, rebuild on a lost race. */
async function allocateChange(walletId: string): Promise<string> {
  for (;;) {
    try {
      return await h.c.db.tx(async (q) => {
        const c = await nextChangeAddress(q, await walletKeys(q, walletId), BTC, BTC_DEF);
        await recordChangeAddress(q, walletId, BTC, c, new Date());
        return c.address;
      });
    } catch (e) {
      if (!(e instanceof ChangeAddressTakenError)) throw e;
    }
  }
}

describe('P2TR addresses (Taproot master key)', () => {
  it('derives P2TR addresses from the Taproot master key and P2WPKH addresses from the ECDSA key', async () => {
    const w = await createWallet();
    const tr = await addAddress(w.wallet_id, 'p2tr');
    expect(tr.status).toBe(201);
    const mk = (
      await h.c.db.query<Record<string, string>>(
        'SELECT m.* FROM master_keys m JOIN wallets w USING (master_key_id) WHERE w.wallet_id = $1',
        [w.wallet_id],
      )
    )[0]!;
    // the Taproot key as the signers hold it: 33-byte compressed, with its Y parity
    expect(mk.taproot_public_key).toMatch(/^0[23][0-9a-f]{64}$/);
    const fromTaproot = deriveSecp256k1(
      unhex(mk.taproot_public_key!),
      unhex(mk.taproot_chain_code!),
      tr.body.derivation_path,
    );
    expect(tr.body.public_key).toBe(hex(fromTaproot.publicKey));
    expect(tr.body.address).toBe(utxoAddress(BITCOIN, fromTaproot.publicKey, 'p2tr'));
    const fromEcdsa = deriveSecp256k1(
      unhex(mk.secp256k1_public_key!),
      unhex(mk.secp256k1_chain_code!),
      tr.body.derivation_path,
    );
    expect(tr.body.public_key).not.toBe(hex(fromEcdsa.publicKey));
    const first = w.addresses[0];
    expect(first.address_type).toBe('p2wpkh');
    expect(first.public_key).toBe(
      hex(
        deriveSecp256k1(unhex(mk.secp256k1_public_key!), unhex(mk.secp256k1_chain_code!), first.derivation_path)
          .publicKey,
      ),
    );
  });

  it('refuses a P2TR address with 422 when the master key has no Taproot key; P2WPKH still works', async () => {
    const h2 = await startHarness({ masterKey: false });
    try {
      const { taproot: _none, ...legacy } = testMasterKey();
      await h2.c.signers.masterKeys.insertMasterKey(legacy);
      const w = await createWallet(h2);
      const tr = await addAddress(w.wallet_id, 'p2tr', h2);
      expect(tr.status).toBe(422);
      expect(tr.body).toMatchObject({ code: 'VALIDATION_FAILED' });
      expect(tr.body.detail).toMatch(/Taproot/);
      expect((await addAddress(w.wallet_id, 'p2wpkh', h2)).status).toBe(201);
    } finally {
      await h2.close();
    }
  });

  it('refuses to record a Taproot key that is not a 33-byte compressed curve point (x-only loses the parity)', async () => {
    const mk = testMasterKey();
    await expect(
      h.c.signers.masterKeys.insertMasterKey({
        ...mk,
        taproot: { ...mk.taproot, publicKey: mk.taproot.publicKey.subarray(1) },
      }),
    ).rejects.toThrow(/33 bytes/);
    await expect(
      h.c.signers.masterKeys.insertMasterKey({ ...mk, taproot: { ...mk.taproot, publicKey: new Uint8Array(33) } }),
    ).rejects.toThrow(/taproot\.publicKey/);
  });
});

describe('spend sources and change addresses', () => {
  it('spends from every address of the wallet on the chain: deposit, change and archived ones, each with its key', async () => {
    const w = await createWallet();
    const second = (await addAddress(w.wallet_id, 'p2wpkh')).body;
    const tr = (await addAddress(w.wallet_id, 'p2tr')).body;
    const change = await allocateChange(w.wallet_id);
    await h.c.db.query('UPDATE addresses SET archived_at = now() WHERE address = $1', [second.address]);
    const sources = await walletSources(h.c.db, w.wallet_id, BTC);
    expect(sources.map((s) => s.address)).toEqual([w.addresses[0].address, second.address, tr.address, change]);
    const p2tr = sources[2]!;
    expect(hex(p2tr.publicKey)).toBe(tr.public_key);
    expect(p2tr.path).toEqual(tr.derivation_path.replace(/^m\//, '').split('/').map(Number));
    expect(sources[3]!.path[3]).toBe(1); // internal branch
  });

  it('change goes to a fresh internal P2WPKH address; two concurrent builds never get the same one', async () => {
    const w = await createWallet();
    // both builds derive before either stores: the same index; the second store loses
    const keys = await walletKeys(h.c.db, w.wallet_id);
    const a = await nextChangeAddress(h.c.db, keys, BTC, BTC_DEF);
    const b = await nextChangeAddress(h.c.db, keys, BTC, BTC_DEF);
    expect(b.index).toBe(a.index);
    await h.c.db.tx((q) => recordChangeAddress(q, w.wallet_id, BTC, a, new Date()));
    await expect(h.c.db.tx((q) => recordChangeAddress(q, w.wallet_id, BTC, b, new Date()))).rejects.toBeInstanceOf(
      ChangeAddressTakenError,
    );
    const retried = await nextChangeAddress(h.c.db, keys, BTC, BTC_DEF);
    expect(retried.index).toBe(a.index + 1);
    expect(retried.derivationPath).toMatch(/\/1\/1$/);
    expect(retried.address).toMatch(/^bc1q/);
    // truly concurrent allocations: all different
    const many = await Promise.all(Array.from({ length: 4 }, () => allocateChange(w.wallet_id)));
    expect(new Set([a.address, ...many]).size).toBe(5);
  });

  it('change addresses are watched but not listed as deposit addresses', async () => {
    const w = await createWallet();
    const change = await allocateChange(w.wallet_id);
    const list = await h.req('GET', `/api/v1/profiles/${h.profileId}/wallets/${w.wallet_id}/addresses`, {
      key: h.apiKey,
    });
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(1);
    expect(list.body.data.map((a: Json) => a.address)).not.toContain(change);
    const one = await h.req('GET', `/admin/v1/profiles/${h.profileId}/wallets/${w.wallet_id}`, {
      token: h.adminToken,
    });
    expect(one.status).toBe(200);
    expect(one.body.addresses.map((a: Json) => a.address)).toEqual([w.addresses[0].address]);
    expect(await new WatchList({ db: h.c.db }).addresses('bitcoin-mainnet')).toContain(change);
  });
});

describe('PgUtxoSource', () => {
  /** A transfer of wallet `w` in `status` spending `inputs`, with change `change` (txid `txHash`). */
  async function insertTransfer(
    w: Json,
    status: string,
    txHash: string,
    inputs: string[],
    change: { address: string; value: string } | null,
    feeBump: unknown = null,
  ) {
    const mk = (
      await h.c.db.query<{ master_key_id: string }>('SELECT master_key_id FROM wallets WHERE wallet_id = $1', [
        w.wallet_id,
      ])
    )[0]!;
    const now = new Date();
    const context = {
      inputs: inputs.map((o) => ({ txid: o.split(':')[0], vout: Number(o.split(':')[1]) })),
      change: change === null ? null : { ...change, kind: 'p2wpkh' },
    };
    await h.c.db.query(
      `INSERT INTO transfers (transfer_id, profile_id, wallet_id, asset_id, blockchain_id, master_key_id, source_address,
         destination_address, amount, status, day, intent, intent_digest, unsigned, tx_hash, fee_bump, created_at, updated_at)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$7,1,$8,$9,'{}'::jsonb,'x',$10::jsonb,$11,$12::jsonb,$13,$13)`,
      [
        randomUUID(),
        h.profileId,
        w.wallet_id,
        assetId('bitcoin-mainnet', 'BTC'),
        BTC,
        mk.master_key_id,
        w.addresses[0].address,
        status,
        now.toISOString().slice(0, 10),
        JSON.stringify({ context }),
        txHash,
        feeBump === null ? null : JSON.stringify(feeBump),
        now,
      ],
    );
  }

  const txid = () => hex(crypto.getRandomValues(new Uint8Array(32)));
  const list = (depth: number, addrs: string[]) =>
    new PgUtxoSource(h.c.db, 'bitcoin', 'bitcoin-mainnet', depth)
      .listUnspent(addrs)
      .then((u) => u.map((x) => `${x.txid}:${x.vout}=${x.value}`).sort());

  it('offers the unconfirmed change of own SENT transfers up to the depth limit, never twice', async () => {
    const w = await createWallet();
    const deposit = w.addresses[0].address;
    const c1 = await allocateChange(w.wallet_id);
    const c2 = await allocateChange(w.wallet_id);
    const addrs = [deposit, c1, c2];
    const funding = txid();
    await h.c.db.query(
      `INSERT INTO watcher_utxos (chain, outpoint, address, value, height) VALUES ('bitcoin',$1,$2,9000,5)`,
      [`${funding}:0`, deposit],
    );
    const other = `${txid()}:0`; // a confirmed output of someone else, spent by t1
    const h1 = txid();
    await insertTransfer(w, 'SENT', h1, [other], { address: c1, value: '5000' });
    const conf = `${funding}:0=9000`;
    expect(await list(2, addrs)).toEqual([`${h1}:1=5000`, conf].sort());
    expect(await list(1, addrs)).toEqual([conf]);
    expect(await list(0, addrs)).toEqual([conf]);
    // t2 spends t1's change: t1's change is taken; t2 (depth 2) is offered only with a limit of 3
    const h2 = txid();
    await insertTransfer(w, 'SENT', h2, [`${h1}:1`], { address: c2, value: '4000' });
    expect(await list(2, addrs)).toEqual([conf]);
    expect(await list(3, addrs)).toEqual([`${h2}:1=4000`, conf].sort());
    // once the watcher has t2's change as confirmed it is listed once
    await h.c.db.query(
      `INSERT INTO watcher_utxos (chain, outpoint, address, value, height) VALUES ('bitcoin',$1,$2,4000,6)`,
      [`${h2}:1`, c2],
    );
    expect(await list(3, addrs)).toEqual([`${h2}:1=4000`, conf].sort());
  });

  it('offers no change of a failed transfer, or of one whose fee bump is in progress', async () => {
    const w = await createWallet();
    const c1 = await allocateChange(w.wallet_id);
    const c2 = await allocateChange(w.wallet_id);
    await insertTransfer(w, 'FAILED', txid(), [`${txid()}:0`], { address: c1, value: '5000' });
    const bumped = txid();
    await insertTransfer(
      w,
      'SENT',
      bumped,
      [`${txid()}:0`],
      { address: c2, value: '6000' },
      { status: 'PENDING_APPROVAL' },
    );
    expect(await list(2, [c1, c2])).toEqual([]);
    await h.c.db.query(`UPDATE transfers SET fee_bump = '{"status":"DONE"}'::jsonb WHERE tx_hash = $1`, [bumped]);
    expect(await list(2, [c1, c2])).toEqual([`${bumped}:1=6000`]);
  });

  it('a transfer delivered before the watcher saw its block: its inputs are not offered again, its change is', async () => {
    const w = await createWallet();
    const deposit = w.addresses[0].address;
    const c1 = await allocateChange(w.wallet_id);
    const spent = `${txid()}:0`;
    await h.c.db.query(
      `INSERT INTO watcher_utxos (chain, outpoint, address, value, height) VALUES ('bitcoin',$1,$2,9000,5)`,
      [spent, deposit],
    );
    const h1 = txid();
    await insertTransfer(w, 'SENT', h1, [spent], { address: c1, value: '5000' });
    await h.c.db.query('UPDATE transfers SET delivered_at = now() WHERE tx_hash = $1', [h1]);
    expect(await list(0, [deposit, c1])).toEqual([`${h1}:1=5000`]);
  });
});

describe('per-digest keys of a signing request', () => {
  const key = (path: number[]) => ({ publicKey: new Uint8Array(33), path });
  const d = (scheme: 'ecdsa' | 'schnorr', path: number[]) => ({
    digest: new Uint8Array(32),
    scheme,
    key: key(path),
    inputIndex: 0,
  });

  it('names each digest key when a transaction spends several addresses (ECDSA and Taproot)', () => {
    const src = [44, 0, 0, 0, 0];
    const keys = perDigestKeys(
      { digests: [d('ecdsa', src), d('ecdsa', [44, 0, 0, 1, 3]), d('schnorr', [44, 0, 0, 0, 2])] },
      'SECP256K1_ECDSA',
      src,
    );
    expect(keys).toEqual([
      { algorithm: 'SECP256K1_ECDSA', derivationPath: src },
      { algorithm: 'SECP256K1_ECDSA', derivationPath: [44, 0, 0, 1, 3] },
      { algorithm: 'SECP256K1_TAPROOT', derivationPath: [44, 0, 0, 0, 2] },
    ]);
  });

  it('sends none when every digest is the intent key', () => {
    const src = [44, 0, 0, 0, 0];
    expect(perDigestKeys({ digests: [d('ecdsa', src), d('ecdsa', src)] }, 'SECP256K1_ECDSA', src)).toBeUndefined();
    // the same path under the other scheme is another key
    expect(perDigestKeys({ digests: [d('schnorr', src)] }, 'SECP256K1_ECDSA', src)).toHaveLength(1);
  });
});

/** A Taproot group key as the FROST signers hold and report it (33-byte compressed) of the given Y parity. */
function taprootKeyOfParity(prefix: 2 | 3): Uint8Array {
  for (;;) {
    const publicKey = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true);
    if (publicKey[0] === prefix) return publicKey;
  }
}

/**
 * Run the coordinator's master key ceremony client against device parties that all report the
 * given Taproot key (as its bytes come over the wire) next to fresh ECDSA and Ed25519 keys.
 */
async function ceremonyReporting(taproot: Uint8Array, ccT: Uint8Array) {
  const control = await ControlClient.create(await generateKeyPair('Ed25519'), new Map());
  try {
    const ecdsa = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true);
    const edKey = ed25519.getPublicKey(ed25519.utils.randomSecretKey());
    const [ccE, ccD, transcript] = [randomBytes(32), randomBytes(32), randomBytes(32)];
    const master = createMasterKeyClient({
      control,
      devicePeerId: async (id) => `peer-${id}`,
      devices: {
        async startCeremony(_id, start: StartCeremony): Promise<CeremonyResult> {
          return {
            ceremonyId: start.ceremonyId,
            outcome: Outcome.OK,
            error: '',
            publicKeys: [
              { algorithm: KeyAlgorithm.ED25519, publicKey: edKey, chainCode: ccD },
              { algorithm: KeyAlgorithm.SECP256K1_TAPROOT, publicKey: taproot, chainCode: ccT },
              { algorithm: KeyAlgorithm.SECP256K1_ECDSA, publicKey: ecdsa, chainCode: ccE },
            ],
            transcriptHash: transcript,
          } as CeremonyResult;
        },
        async abortCeremony() {},
      },
    });
    const out = await master.runDkg({
      ceremonyId: randomUUID(),
      threshold: 2,
      parties: ['d1', 'd2', 'd3'].map((id) => ({ kind: 'device' as const, id, peer: id, address: null })),
      deadline: new Date(Date.now() + 60_000),
      signal: new AbortController().signal,
      onProgress() {},
    });
    return { out, ecdsa };
  } finally {
    await control.host.node.stop();
  }
}

describe('master key ceremony records the Taproot key', () => {
  it('takes the FROST/Taproot key (33-byte compressed, with its parity) and chain code from the parties and stores them', async () => {
    // FROST keys (master-key.ts on the signers) are 33-byte points; every party reports the same
    const taproot = taprootKeyOfParity(3);
    const ccT = randomBytes(32);
    const { out, ecdsa } = await ceremonyReporting(taproot, ccT);
    expect(out.secp256k1.publicKey).toEqual(ecdsa);
    expect(out.taproot).toEqual({ publicKey: taproot, chainCode: ccT });
    const mk = await h.c.signers.masterKeys.insertMasterKey({
      ceremonyId: null,
      threshold: 2,
      parties: [],
      secp256k1: out.secp256k1,
      ed25519: out.ed25519,
      ...(out.taproot ? { taproot: out.taproot } : {}),
    });
    expect(mk.taproot_public_key).toBe(hex(taproot));
    expect(mk.taproot_chain_code).toBe(hex(ccT));
  });

  it('refuses a ceremony whose parties report the Taproot key x-only (its Y parity unknown)', async () => {
    const taproot = taprootKeyOfParity(3);
    await expect(ceremonyReporting(taproot.subarray(1), randomBytes(32))).rejects.toThrow(/Taproot key/);
  });

  it('odd-Y Taproot master key: the P2TR address handed out is the one the signers derive and sign for', async () => {
    const h2 = await startHarness({ masterKey: false });
    try {
      // the key as the signers hold it (their key record: the FROST group key, 03‖x)
      const signerRecordKey = taprootKeyOfParity(3);
      const chainCode = randomBytes(32);
      const { out } = await ceremonyReporting(signerRecordKey, chainCode);
      await h2.c.signers.masterKeys.insertMasterKey({
        ceremonyId: null,
        threshold: 2,
        parties: [],
        secp256k1: out.secp256k1,
        ed25519: out.ed25519,
        ...(out.taproot ? { taproot: out.taproot } : {}),
      });
      const w = await createWallet(h2);
      for (let k = 0; k < 2; k++) {
        const tr = await addAddress(w.wallet_id, 'p2tr', h2);
        expect(tr.status).toBe(201);
        const signers = deriveSecp256k1(signerRecordKey, chainCode, tr.body.derivation_path).publicKey;
        expect(tr.body.public_key).toBe(hex(signers));
        expect(tr.body.address).toBe(utxoAddress(BITCOIN, signers, 'p2tr'));
      }
    } finally {
      await h2.close();
    }
  });
});
