/**
 * Hostile coordinator (issue #20): two real signer processes with enforcement on (the Admin device
 * pinned, `chains` configured for ethereum-local, litecoin-regtest and tron-nile), a real 2-of-2
 * master key (CGGMP21 at SECURITY_112 with the committed TEST-ONLY safe primes), and this test
 * holding the coordinator's identity key: it IS the compromised coordinator. It sends forged but
 * validly signed control requests, each carrying a policy signed by the Admin device and an
 * approval of an approver device over the intent the approvers saw, for each chain family: wrong
 * change key, foreign input key, other chain id / network, fee over the cap, another wallet's
 * sender, and a reused presignature id. Every one is refused with its code; after the processes
 * stop, each signer's own encrypted store holds no ledger entry of any refused transfer.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { ethereumAddress, tronAddress } from '@custodian/chains';
import { bytesToHex } from '@custodian/crypto';
import {
  CeremonyKind,
  type CeremonyResult,
  KeyAlgorithm,
  Outcome,
  type SignRequest,
  type StartCeremony,
  type TransferIntent,
} from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '@custodian/signer-client/polyfills';
import type { LedgerEntry } from '@custodian/ceremony';
import { SecureStore } from '@custodian/ceremony/level-store';
import { ControlClient, PresignaturePoolKeeper } from '@custodian/signer-client';
import {
  adminSk,
  CHAINS,
  child,
  dev1,
  ethContext,
  intent,
  ltcContext,
  ltcIntent,
  masterKey,
  mk,
  request,
  TRON_DEST,
  TRON_USDT,
  tronContext,
  useMasterKey,
  utxoInput,
} from '../../ceremony/test/attack-fixtures.js';
import { buildSigner, type NodeSpec, PASS, startSeededNodes, stopNode, tempDir } from './cluster.js';

let nodes: NodeSpec[] = [];
let client: ControlClient;
let dir = '';
let keyId = '';
const enc = new TextEncoder();
/** Transfer ids of every forged request (none may reach a ledger). */
const refusedTransfers: string[] = [];
/** Transfer id of the one honest, signed transfer. */
let signedTransfer = '';

function start(sign: SignRequest): StartCeremony {
  return {
    ceremonyId: sha256(enc.encode(`hostile:${Math.random()}`)).subarray(0, 24),
    kind: CeremonyKind.SIGN,
    threshold: 2,
    deadlineUnixMs: Date.now() + 60_000,
    parties: nodes.map((n) => ({ peerId: n.peerId })),
    sign,
  };
}

/** Send one forged request to every signer; returns each signer's result. */
async function send(i: TransferIntent, sign: SignRequest): Promise<CeremonyResult[]> {
  return Promise.all(
    client.startCeremonies(
      nodes.map((n) => n.peerId),
      start({ ...sign, keyId: i.key_id }),
      90_000,
    ),
  );
}

/** Every signer refuses with `code` (the result's error starts with it); the transfer is remembered. */
async function expectRefused(i: TransferIntent, sign: SignRequest, code: string): Promise<void> {
  refusedTransfers.push(i.transfer_id);
  const results = await send(i, sign);
  for (const r of results) {
    expect(r.outcome, r.error).toBe(Outcome.REFUSED);
    expect(r.error?.split(':')[0]).toBe(code);
  }
}

beforeAll(async () => {
  buildSigner();
  dir = tempDir('hostile');
  const coordKey = await generateKeyPair('Ed25519');
  nodes = await startSeededNodes(dir, 2, peerIdFromPrivateKey(coordKey).toString(), {
    trustedAdminDevices: [{ deviceId: 'admin-phone', publicKey: bytesToHex(p256.getPublicKey(adminSk, true)) }],
    chains: CHAINS,
  });
  client = await ControlClient.create(
    coordKey,
    new Map(nodes.map((n) => [n.peerId, [`/ip4/127.0.0.1/tcp/${n.port}`]])),
  );
  const results = await Promise.all(
    client.startCeremonies(
      nodes.map((n) => n.peerId),
      {
        ceremonyId: sha256(enc.encode(`mk:${Math.random()}`)).subarray(0, 16),
        kind: CeremonyKind.MASTER_KEY,
        parties: nodes.map((n) => ({ peerId: n.peerId })),
        threshold: 2,
        deadlineUnixMs: Date.now() + 240_000,
        algorithms: [KeyAlgorithm.SECP256K1_ECDSA],
        approverDevices: [{ deviceId: 'dev-1', publicKey: p256.getPublicKey(dev1, true) }],
      },
      260_000,
    ),
  );
  for (const r of results) expect(r.outcome, r.error).toBe(Outcome.OK);
  keyId = results[0]?.keyId as string;
  const ek = results[0]?.publicKeys?.find((k) => k.algorithm === KeyAlgorithm.SECP256K1_ECDSA);
  // the requests below are built for the signers' real key (the Taproot key is not used here)
  useMasterKey({
    ecdsa: { publicKey: ek?.publicKey as Uint8Array, chainCode: ek?.chainCode as Uint8Array },
    tr: masterKey().tr,
  });
}, 300_000);

let stopped = false;
afterAll(async () => {
  if (!stopped) await client?.stop();
  await Promise.all(nodes.map((n) => stopNode(n)));
  if (dir && !process.env.CUSTODIAN_KEEP_TEST_DIR) rmSync(dir, { recursive: true, force: true });
});

const ETH = [44, 60, 0, 0, 0];
const TRX = [44, 1, 0, 0, 0]; // Nile: a test network, coin type 1
const LTC = [44, 1, 0, 0, 0];
const COIN = 100_000_000n;

function ethIntent(over: Partial<TransferIntent> = {}): TransferIntent {
  return intent({ key_id: keyId, source_address: ethereumAddress(child(mk.ecdsa, ETH)), ...over });
}
function tronIntent(over: Partial<TransferIntent> = {}): TransferIntent {
  return intent({
    key_id: keyId,
    blockchain: 'tron-nile',
    asset_symbol: 'TRX',
    asset_decimals: 6,
    source_address: tronAddress(child(mk.ecdsa, TRX)),
    destination_address: TRON_DEST,
    derivation_path: TRX,
    max_fee: '50000000',
    ...over,
  });
}
/** A Litecoin-regtest intent of the signers' key (wallet 0's P2WPKH source, derived at call time). */
function litecoinIntent(over: Partial<TransferIntent> = {}): TransferIntent {
  return ltcIntent({ key_id: keyId, ...over });
}

describe('a compromised coordinator against real signer processes', () => {
  it("EVM: other chain id, fee over the cap, another wallet as sender, native decimals not the chain's — refused", async () => {
    let i = ethIntent();
    await expectRefused(i, request(i, ethContext(ETH, { chainId: 1 })), 'CHAIN_MISMATCH');
    i = ethIntent({ max_fee: '1000000000000000' });
    await expectRefused(i, request(i, ethContext(ETH, { maxFeePerGas: '100000000000' })), 'FEE_ABOVE_CAP');
    // approvers saw wallet 0's address; the path (the signing key) is wallet 1's
    i = ethIntent({ derivation_path: [44, 60, 1, 0, 0] });
    await expectRefused(i, request(i, { ...ethContext(ETH), fromPath: [44, 60, 1, 0, 0] }), 'SENDER_MISMATCH');
    // the phone would show 10⁻¹² of the amount
    i = ethIntent({ asset_decimals: 30 });
    await expectRefused(i, request(i, ethContext(ETH)), 'ASSET_MISMATCH');
  }, 120_000);

  it('Bitcoin family: wrong change key, foreign input key, fee over the cap, another wallet as sender — refused', async () => {
    const src = () => utxoInput(child(mk.ecdsa, LTC), LTC, COIN);
    const attacker = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true);
    const base = () => litecoinIntent();
    let i = base();
    await expectRefused(
      i,
      request(i, ltcContext(i, [src()], { pk: attacker, path: [44, 1, 0, 1, 0], value: COIN - 105_000n })),
      'CHANGE_MISMATCH',
    );
    i = base();
    await expectRefused(
      i,
      request(
        i,
        ltcContext(i, [src(), utxoInput(attacker, LTC, 10n * COIN)], {
          pk: child(mk.ecdsa, LTC),
          path: LTC,
          value: 11n * COIN - 105_000n,
        }),
      ),
      'INPUT_KEY_MISMATCH',
    );
    i = base();
    await expectRefused(i, request(i, ltcContext(i, [src()], null)), 'FEE_ABOVE_CAP');
    const w1 = [44, 1, 1, 0, 0];
    i = litecoinIntent({ derivation_path: w1 }); // source address: wallet 0's
    await expectRefused(
      i,
      request(
        i,
        ltcContext(i, [utxoInput(child(mk.ecdsa, w1), w1, COIN)], {
          pk: child(mk.ecdsa, w1),
          path: w1,
          value: COIN - 105_000n,
        }),
      ),
      'SENDER_MISMATCH',
    );
  }, 120_000);

  it('TRON: other network, TRC-20 fee limit over the cap, another wallet as sender, another token, the mainnet key — refused', async () => {
    let i = tronIntent();
    await expectRefused(i, request(i, tronContext(TRX, { network: 'mainnet' })), 'CHAIN_MISMATCH');
    i = tronIntent({ asset_symbol: 'USDT', asset_contract: TRON_USDT, max_fee: '30000000' });
    await expectRefused(i, request(i, tronContext(TRX, { feeLimit: '90000000' })), 'FEE_ABOVE_CAP');
    i = tronIntent({ derivation_path: [44, 1, 1, 0, 0] });
    await expectRefused(i, request(i, { ...tronContext(TRX), fromPath: [44, 1, 1, 0, 0] }), 'SENDER_MISMATCH');
    // "USDT" (its id, symbol, decimals) with a contract that is not the configured USDT
    i = tronIntent({ asset_symbol: 'USDT', asset_contract: TRON_DEST, max_fee: '30000000' });
    await expectRefused(i, request(i, tronContext(TRX, { feeLimit: '30000000' })), 'ASSET_MISMATCH');
    // a Nile approval signed with the mainnet key (coin type 195)
    const mainnet = [44, 195, 0, 0, 0];
    i = tronIntent({ derivation_path: mainnet, source_address: tronAddress(child(mk.ecdsa, mainnet)) });
    await expectRefused(i, request(i, tronContext(mainnet)), 'SENDER_MISMATCH');
  }, 120_000);

  it('a pooled request naming a presignature already consumed is refused', async () => {
    const keeper = new PresignaturePoolKeeper(
      client,
      keyId,
      nodes.map((n) => n.peerId),
      1,
      1,
    );
    await keeper.refill();
    const id = keeper.take() as string;
    // an honest transfer signs with the presignature (and is the only ledger entry)
    const honest = ethIntent();
    signedTransfer = honest.transfer_id;
    const ok = await send(honest, { ...request(honest, ethContext(ETH)), presignatureId: id });
    for (const r of ok) expect(r.outcome, r.error).toBe(Outcome.OK);
    // another approved transfer naming the same presignature: refused, nothing signed
    const reuse = ethIntent();
    refusedTransfers.push(reuse.transfer_id);
    const again = await send(reuse, { ...request(reuse, ethContext(ETH)), presignatureId: id });
    for (const r of again) {
      expect(r.outcome).toBe(Outcome.REFUSED);
      expect(r.error).toMatch(/unknown or already used/);
    }
  }, 180_000);

  it("after the processes stop, no signer's ledger holds any refused transfer", async () => {
    stopped = true;
    await client.stop();
    await Promise.all(nodes.map((n) => stopNode(n)));
    for (const n of nodes) {
      const store = await SecureStore.open(join(n.dataDir, 'db'), PASS, { N: 1 << 14, r: 8, p: 1 });
      try {
        const entries: LedgerEntry[] = [];
        // per-transfer entries (t/<transfer_id>); d/… are the daily sums, policy/… the version floors
        for (const k of await store.keys('ledger', 't/')) {
          const v = await store.get('ledger', k);
          if (v) entries.push(JSON.parse(new TextDecoder().decode(v)) as LedgerEntry);
        }
        // only the honest pooled transfer (when that test ran) was signed
        expect(entries.map((e) => e.transfer_id)).toEqual(signedTransfer ? [signedTransfer] : []);
        const sums = await store.keys('ledger', 'd/');
        expect(sums.map((k) => k.slice(k.lastIndexOf('/') + 1))).toEqual(signedTransfer ? [signedTransfer] : []);
        for (const t of refusedTransfers) expect(entries.some((e) => e.transfer_id === t)).toBe(false);
      } finally {
        await store.close();
      }
    }
  }, 60_000);
});
