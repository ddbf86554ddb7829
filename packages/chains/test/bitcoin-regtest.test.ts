/**
 * Bitcoin family end to end on a real node: litecoind -regtest (Bitcoin Core 0.21 fork with
 * segwit and taproot active). Deposits to P2WPKH and P2TR addresses, a spend of both (BIP143 and
 * BIP341 digests) with change to a fresh change address, an RBF bump, and the watcher across a
 * restart. `makeHolder` supplies the signer: threshold signatures, CGGMP21 (2-of-3) for the P2WPKH
 * inputs and FROST `secp256k1-tr` (2-of-3) for the P2TR inputs (test/helpers/threshold-signer.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Transaction } from '@scure/btc-signer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addressPath,
  BitcoinAdapter,
  type DigestSigner,
  InsufficientFundsError,
  InvalidSignatureError,
  JsonFileWatcherStore,
  LITECOIN_REGTEST,
  parseUnits,
  RBF_SEQUENCE,
  recomputeBitcoinDigests,
  UtxoWatcher,
} from '../src/index.js';
import { type LitecoindNode, startLitecoind } from './helpers/litecoind.js';
import { type KeyHolder, signAll, type ThresholdKeyHolder, thresholdKeyHolder } from './helpers/threshold-signer.js';

const isThreshold = (h: KeyHolder): h is ThresholdKeyHolder => 'ecdsaOutputs' in h;

function utxoSuite(name: string, makeHolder: () => KeyHolder) {
  describe(`Litecoin regtest (${name})`, () => {
    let node: LitecoindNode;
    let adapter: BitcoinAdapter;
    let dir: string;
    const holder = makeHolder();
    const sign: DigestSigner = holder.sign;
    const ct = LITECOIN_REGTEST.coinType;

    beforeAll(async () => {
      node = await startLitecoind();
      adapter = new BitcoinAdapter({ network: LITECOIN_REGTEST, rpc: node.rpc });
      dir = mkdtempSync(join(tmpdir(), 'chains-ltc-store-'));
    });
    afterAll(async () => {
      await node?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('detects P2WPKH and P2TR deposits, spends both with change, bumps by RBF, and matches the node after a restart', async () => {
      const wpkh = holder.source(addressPath(ct, 0, 0), (p) => adapter.addressFromPublicKey(p, 'p2wpkh'));
      const tr = holder.source(addressPath(ct, 0, 1), (p) => adapter.addressFromPublicKey(p, 'p2tr'), 'schnorr');
      const change = holder.source(addressPath(ct, 0, 0, 1), (p) => adapter.addressFromPublicKey(p, 'p2wpkh'));
      expect(wpkh.address.startsWith('rltc1q')).toBe(true);
      expect(tr.address.startsWith('rltc1p')).toBe(true);
      const storePath = join(dir, 'watcher.json');
      const startHeight = (await node.rpc.call<number>('getblockcount')) + 1;
      const makeWatcher = () => {
        const w = new UtxoWatcher({
          network: LITECOIN_REGTEST,
          rpc: node.rpc,
          store: new JsonFileWatcherStore(storePath),
          confirmations: 2,
          startHeight,
        });
        for (const a of [wpkh, tr, change]) w.watch(a.address);
        return w;
      };
      let watcher = makeWatcher();
      expect(await watcher.poll()).toEqual([]);

      const dep1 = await node.walletCall<string>('sendtoaddress', [wpkh.address, 1.0]);
      const dep2 = await node.walletCall<string>('sendtoaddress', [tr.address, 0.5]);
      let events = await watcher.poll();
      // Mempool order is the node's: compare as sets.
      expect(
        events
          .map((e) => (e.type === 'transaction_detected' ? `${e.txid} ${e.address} ${e.block_height}` : e.type))
          .sort(),
      ).toEqual([`${dep1} ${wpkh.address} null`, `${dep2} ${tr.address} null`].sort());
      await node.mine(1);
      expect(await watcher.poll()).toEqual([]); // 1 confirmation of 2; already detected
      await node.mine(1);
      events = await watcher.poll();
      expect(events.map((e) => (e.type === 'balance_updated' ? [e.address, e.balance] : e.type))).toEqual([
        [wpkh.address, '100000000'],
        [tr.address, '50000000'],
      ]);

      // Fee estimate at three levels.
      const dest = await node.walletCall<string>('getnewaddress', ['', 'bech32']);
      const fields = { asset: { kind: 'native' as const }, destination: dest, amount: parseUnits('1.2', 8) };
      const request = { fields, sources: [wpkh, tr], change, feeLevel: 'SLOW' as const };
      const fees = await Promise.all(
        (['SLOW', 'STANDARD', 'FAST'] as const).map((l) => adapter.estimateFee(request, l)),
      );
      expect(fees.map((f) => f.fee_currency)).toEqual(['LTC', 'LTC', 'LTC']);
      expect(fees.map((f) => f.fee_value_usd)).toEqual([null, null, null]); // no price configured
      expect(Number(fees[0]!.fee_value)).toBeLessThan(Number(fees[2]!.fee_value));

      // Spend 1.2 LTC: needs both inputs (one P2WPKH → ECDSA/BIP143, one P2TR → Schnorr/BIP341).
      const unsigned = await adapter.buildTransfer(request);
      expect(unsigned.context.inputs.map((i) => i.kind).sort()).toEqual(['p2tr', 'p2wpkh']);
      expect(unsigned.context.sequence).toBe(RBF_SEQUENCE);
      expect(unsigned.context.change?.address).toBe(change.address);
      expect(recomputeBitcoinDigests(LITECOIN_REGTEST, fields, unsigned.context)).toEqual(unsigned.digests);
      expect(unsigned.digests.map((d) => d.scheme).sort()).toEqual(['ecdsa', 'schnorr']);
      // A signer recomputing from other fields gets other digests.
      const tampered = recomputeBitcoinDigests(
        LITECOIN_REGTEST,
        { ...fields, amount: fields.amount + 1n },
        {
          ...unsigned.context,
          change: { ...unsigned.context.change!, value: String(BigInt(unsigned.context.change!.value) - 1n) },
        },
      );
      expect(tampered[0]!.digest).not.toEqual(unsigned.digests[0]!.digest);
      const sigs = await signAll(sign, unsigned.digests);
      expect(() => adapter.attachSignatures(unsigned, [...sigs].reverse())).toThrow(InvalidSignatureError);
      const signed = adapter.attachSignatures(unsigned, sigs);
      if (isThreshold(holder)) {
        // The witnesses carry the threshold signatures as the ceremonies produced them: CGGMP21's
        // low-s DER ‖ SIGHASH_ALL (P2WPKH: [sig, pubkey]); FROST's 64-byte BIP340 signature (P2TR key path: [sig]).
        const parsed = Transaction.fromRaw(signed.rawTx);
        for (const d of unsigned.digests) {
          const witness = parsed.getInput(d.inputIndex).finalScriptWitness ?? [];
          if (d.scheme === 'ecdsa') {
            const der = holder.ecdsaOutputs.get(bytesToHex(d.digest))?.der;
            expect(der).toBeDefined();
            expect(witness).toEqual([Uint8Array.from([...der!, 0x01]), d.key.publicKey]);
          } else {
            expect(witness).toEqual([holder.schnorrOutputs.get(bytesToHex(d.digest))?.signature]);
          }
        }
      }
      expect(await adapter.broadcast(signed)).toBe(signed.txid);
      const mempool = await node.rpc.call<Record<string, { 'bip125-replaceable': boolean }>>('getrawmempool', [true]);
      expect(mempool[signed.txid]?.['bip125-replaceable']).toBe(true);

      // Restart before mining: the new watcher reports the outgoing spend once.
      watcher = makeWatcher();
      events = await watcher.poll();
      const detectedSpend = events.map((e) =>
        e.type === 'transaction_detected' ? `${e.txid} ${e.address} ${e.direction}` : e.type,
      );
      expect(detectedSpend.sort()).toEqual(
        [
          `${signed.txid} ${change.address} incoming`,
          `${signed.txid} ${wpkh.address} outgoing`,
          `${signed.txid} ${tr.address} outgoing`,
        ].sort(),
      );

      // RBF: same inputs, higher fee, less change.
      const bump = await adapter.buildReplacement(unsigned, 'FAST');
      expect(bump.context.inputs).toEqual(unsigned.context.inputs);
      expect(BigInt(bump.context.fee)).toBeGreaterThan(BigInt(unsigned.context.fee));
      const signedBump = adapter.attachSignatures(bump, await signAll(sign, bump.digests));
      await adapter.broadcast(signedBump);
      const pool = await node.rpc.call<string[]>('getrawmempool');
      expect(pool).toContain(signedBump.txid);
      expect(pool).not.toContain(signed.txid);
      await node.mine(2);
      events = await watcher.poll();
      const changeValue = bump.context.change!.value;
      const updates = events
        .filter((e) => e.type === 'balance_updated')
        .map((e) => (e.type === 'balance_updated' ? `${e.address}=${e.balance}` : ''));
      expect(updates.sort()).toEqual(
        [`${wpkh.address}=0`, `${tr.address}=0`, `${change.address}=${changeValue}`].sort(),
      );
      // The replacement's change output is reported as detected too (the original was reported before).
      expect(
        events.some(
          (e) => e.type === 'transaction_detected' && e.txid === signedBump.txid && e.address === change.address,
        ),
      ).toBe(true);
      const tx = await node.rpc.call<{ confirmations: number }>('getrawtransaction', [signedBump.txid, true]);
      expect(tx.confirmations).toBe(2);

      // Store vs node: the UTXO set of the watched addresses, and no event twice.
      watcher = makeWatcher();
      expect(await watcher.poll()).toEqual([]);
      const store = new JsonFileWatcherStore(storePath);
      const scan = await node.rpc.call<{ unspents: { txid: string; vout: number; amount: number }[] }>('scantxoutset', [
        'start',
        [wpkh, tr, change].map((a) => `addr(${a.address})`),
      ]);
      const nodeSet = scan.unspents.map((u) => `${u.txid}:${u.vout}=${parseUnits(u.amount.toFixed(8), 8)}`).sort();
      const storeSet = (await store.getUtxos(LITECOIN_REGTEST.id)).map((u) => `${u.outpoint}=${u.value}`).sort();
      expect(storeSet).toEqual(nodeSet);
      const all = await store.events(LITECOIN_REGTEST.id);
      const keys = all.map((e) =>
        e.type === 'transaction_detected' ? `${e.txid}:${e.address}:${e.direction}` : `${e.address}@${e.block_height}`,
      );
      expect(new Set(keys).size).toBe(keys.length);

      // Nothing left to spend from the deposit addresses.
      await expect(adapter.buildTransfer({ ...request, sources: [wpkh, tr] })).rejects.toBeInstanceOf(
        InsufficientFundsError,
      );
    });
  });
}

utxoSuite('2-of-3 CGGMP21 (P2WPKH) and FROST (P2TR) threshold signatures', () => thresholdKeyHolder('litecoin'));
