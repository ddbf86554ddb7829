import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hexToBytes } from '@noble/hashes/utils.js';
import { encodeDeployData, getAddress, type Hex, keccak256, recoverTransactionAddress, toHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import vectors from '../../../test-vectors/chains.json' with { type: 'json' };
import {
  type AssetRef,
  addressPath,
  checkEcdsa,
  type DigestSigner,
  ETH_COIN_TYPE,
  EthereumAdapter,
  EthereumWatcher,
  ethereumAddress,
  InvalidAddressError,
  InvalidSignatureError,
  JsonFileWatcherStore,
  ReorgTooDeepError,
  recomputeEthereumDigests,
  StaticPriceSource,
} from '../src/index.js';
import token from './fixtures/TestToken.json' with { type: 'json' };
import { type AnvilNode, startAnvil } from './helpers/anvil.js';
import { type KeyHolder, signAll, thresholdKeyHolder } from './helpers/threshold-signer.js';

describe('Ethereum addresses (EIP-55, chains.json)', () => {
  it('derives the address of private key 1', () => {
    const v = vectors.ethereum[0] as { private_key: string; address: string };
    const pub = secp256k1.getPublicKey(hexToBytes(v.private_key), true);
    expect(ethereumAddress(pub)).toBe(v.address);
  });
  it('EIP-155 example: the signing hash is keccak256 of the RLP and (r, s, v) verifies under the key (checkEcdsa)', () => {
    const text = (vectors.ethereum[1] as { eip155_example: string }).eip155_example;
    const get = (k: string) => new RegExp(`(?:^|[;:] )${k} (0x[0-9a-f]+|\\d+)`).exec(text)?.[1] ?? '';
    const signingData = get('signing data');
    expect(keccak256(signingData as Hex)).toBe(get('signing hash'));
    const publicKey = secp256k1.getPublicKey(hexToBytes(get('private key').slice(2)), true);
    const recovery = Number(get('v')) - 35 - 2 * 1; // EIP-155: v = recovery + 35 + 2·chainId
    const digest = {
      digest: hexToBytes(get('signing hash').slice(2)),
      scheme: 'ecdsa' as const,
      key: { publicKey, path: [] },
      inputIndex: 0,
    };
    expect(() =>
      checkEcdsa(0, digest, { scheme: 'ecdsa', r: BigInt(get('r')), s: BigInt(get('s')), recovery }, false),
    ).not.toThrow();
    expect(() =>
      checkEcdsa(
        0,
        digest,
        { scheme: 'ecdsa', r: BigInt(get('r')), s: BigInt(get('s')), recovery: 1 - recovery },
        false,
      ),
    ).toThrow(InvalidSignatureError);
  });
  it('validates EIP-55 checksums and formats with a 422 error', () => {
    const adapter = new EthereumAdapter({ id: 'ethereum', chainId: 1, rpcUrl: 'http://127.0.0.1:1' });
    expect(adapter.validateAddress('0x7e5f4552091a69125d5dfcb7b8c2659029395bdf')).toBe(
      '0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf',
    );
    for (const bad of [
      '0x7E5F4552091A69125d5DfCb7b8C2659029395BdF',
      '0x7e5f',
      'TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HC',
      '',
    ]) {
      try {
        adapter.validateAddress(bad);
        expect.unreachable(bad);
      } catch (e) {
        expect(e).toBeInstanceOf(InvalidAddressError);
        expect((e as InvalidAddressError).httpStatus).toBe(422);
      }
    }
  });
});

/**
 * End-to-end on a real anvil node. `makeHolder` supplies the signer: the 2-of-3 CGGMP21 threshold
 * signer (test/helpers/threshold-signer.ts); the signer daemons plug in the same way.
 */
function ethereumSuite(name: string, makeHolder: () => KeyHolder) {
  describe(`Ethereum on anvil (${name})`, () => {
    let node: AnvilNode;
    let adapter: EthereumAdapter;
    let dir: string;
    let tokenAddress: string;
    let funder: string;
    const holder = makeHolder();
    const sign: DigestSigner = holder.sign;
    const wallet = holder.source(addressPath(ETH_COIN_TYPE, 0, 0), ethereumAddress);
    const other = holder.source(addressPath(ETH_COIN_TYPE, 1, 0), ethereumAddress);
    const rpc = async <T>(method: string, params: unknown[] = []): Promise<T> => {
      const r = await fetch(node.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      });
      const j = (await r.json()) as { result?: T; error?: { message: string } };
      if (j.error) throw new Error(`${method}: ${j.error.message}`);
      return j.result as T;
    };
    type Receipt = { status: string; contractAddress: string | null };
    const receipt = (hash: string) => rpc<Receipt | null>('eth_getTransactionReceipt', [hash]);
    /** Anvil mines on its own task: wait (≤ 5 s) for the receipt of an automined transaction. */
    const mined = async (hash: string): Promise<Receipt> => {
      for (let i = 0; i < 500; i++) {
        const r = await receipt(hash);
        if (r !== null) return r;
        await new Promise((res) => setTimeout(res, 10));
      }
      throw new Error(`transaction ${hash} not mined`);
    };

    beforeAll(async () => {
      node = await startAnvil();
      dir = mkdtempSync(join(tmpdir(), 'chains-eth-'));
      adapter = new EthereumAdapter({
        id: 'anvil',
        chainId: node.chainId,
        rpcUrl: node.url,
        prices: new StaticPriceSource({ ETH: '3000' }),
      });
      [funder] = (await rpc<string[]>('eth_accounts')) as [string];
      const data = encodeDeployData({
        abi: token.abi,
        bytecode: token.bytecode as Hex,
        args: ['Test Token', 'TT', 10n ** 12n],
      });
      const hash = await rpc<string>('eth_sendTransaction', [{ from: funder, data }]);
      tokenAddress = getAddress((await mined(hash)).contractAddress ?? '');
    });
    afterAll(async () => {
      await node?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('detects ETH and ERC-20 deposits, confirms balances, sends signed ETH and ERC-20 transfers, and resumes after restart', async () => {
      const storePath = join(dir, 'watcher.json');
      const tokenAsset: AssetRef = { kind: 'token', contract: tokenAddress, symbol: 'TT', decimals: 6 };
      const startHeight = Number(BigInt(await rpc<string>('eth_blockNumber'))) + 1;
      const makeWatcher = () => {
        const w = new EthereumWatcher({
          chain: 'anvil',
          rpcUrl: node.url,
          store: new JsonFileWatcherStore(storePath),
          tokens: [tokenAddress],
          confirmations: 2,
          startHeight,
        });
        w.watch(wallet.address);
        return w;
      };
      let watcher = makeWatcher();
      await watcher.poll();

      // ETH deposit, then an ERC-20 deposit.
      const ethDeposit = await rpc<string>('eth_sendTransaction', [
        { from: funder, to: wallet.address, value: '0xde0b6b3a7640000' },
      ]);
      const transferData = `0xa9059cbb${wallet.address.slice(2).toLowerCase().padStart(64, '0')}${5_000_000n.toString(16).padStart(64, '0')}`;
      await mined(ethDeposit);
      const tokenDeposit = await rpc<string>('eth_sendTransaction', [
        { from: funder, to: tokenAddress, data: transferData },
      ]);
      await mined(tokenDeposit);
      let events = await watcher.poll();
      expect(
        events.filter((e) => e.type === 'transaction_detected').map((e) => [e.txid, e.asset, e.direction]),
      ).toEqual([
        [ethDeposit, 'native', 'incoming'],
        [tokenDeposit, tokenAddress, 'incoming'],
      ]);
      // Only 1 confirmation on the token deposit block: the ETH one has 2.
      expect(events.filter((e) => e.type === 'balance_updated').map((e) => [e.asset, e.balance])).toEqual([
        ['native', '1000000000000000000'],
      ]);
      await rpc('anvil_mine', ['0x1']);
      events = await watcher.poll();
      expect(events.map((e) => [e.type, e.asset, e.type === 'balance_updated' ? e.balance : ''])).toEqual([
        ['balance_updated', tokenAddress, '5000000'],
      ]);

      // Restart: a new watcher on the same file; nothing re-announced.
      watcher = makeWatcher();
      expect(await watcher.poll()).toEqual([]);

      // Outgoing ETH transfer signed by the signer, with digest recomputation as a signer does it.
      const eth = await adapter.buildTransfer({
        fields: { asset: { kind: 'native' }, destination: other.address, amount: 10n ** 17n },
        sources: [wallet],
      });
      expect(recomputeEthereumDigests(eth.fields, eth.context)).toEqual(eth.digests);
      expect(eth.digests[0]?.key.path).toEqual(wallet.path);
      const ethSigs = await signAll(sign, eth.digests);
      const signedEth = adapter.attachSignatures(eth, ethSigs);
      // Independent check: viem recovers the sender from the serialised, threshold-signed transaction.
      expect(
        await recoverTransactionAddress({ serializedTransaction: toHex(signedEth.rawTx) as `0x02${string}` }),
      ).toBe(wallet.address);
      expect(await adapter.broadcast(signedEth)).toBe(signedEth.txid);
      expect((await mined(signedEth.txid)).status).toBe('0x1');

      // A signature over a different digest (the ETH transfer's, same key) is refused before serialisation.
      const erc = await adapter.buildTransfer({
        fields: { asset: tokenAsset, destination: other.address, amount: 1_250_000n },
        sources: [wallet],
      });
      expect(erc.context.nonce).toBe(1);
      expect(() => adapter.attachSignatures(erc, ethSigs)).toThrow(InvalidSignatureError);
      const signedErc = adapter.attachSignatures(erc, await signAll(sign, erc.digests));
      await adapter.broadcast(signedErc);
      expect((await mined(signedErc.txid)).status).toBe('0x1');
      await rpc('anvil_mine', ['0x1']);

      // Stop mid-way and restart: events and balances match the node.
      watcher = makeWatcher();
      events = await watcher.poll();
      expect(
        events.filter((e) => e.type === 'transaction_detected').map((e) => [e.txid, e.asset, e.direction]),
      ).toEqual([
        [signedEth.txid, 'native', 'outgoing'],
        [signedErc.txid, tokenAddress, 'outgoing'],
      ]);
      const store = new JsonFileWatcherStore(storePath);
      const all = await store.events('anvil');
      const keys = all.filter((e) => e.type === 'transaction_detected').map((e) => `${e.txid}:${e.asset}`);
      expect(new Set(keys).size).toBe(keys.length);
      const balances = await store.getBalances('anvil');
      const nodeEth = BigInt(await rpc<string>('eth_getBalance', [wallet.address, 'latest']));
      const nodeTok = BigInt(
        await rpc<string>('eth_call', [
          { to: tokenAddress, data: `0x70a08231${wallet.address.slice(2).padStart(64, '0')}` },
          'latest',
        ]),
      );
      expect(balances.find((b) => b.asset === 'native')?.balance).toBe(nodeEth.toString());
      expect(balances.find((b) => b.asset === tokenAddress)?.balance).toBe(nodeTok.toString());
      expect(nodeTok).toBe(3_750_000n);
    });

    it('a configured token with no code at its address (not deployed on this chain) never stops the native balances', async () => {
      // an address nothing was deployed to: eth_call answers 0x, which decodes to no balance
      const undeployed = getAddress('0x00000000000000000000000000000000c0ffee01');
      expect(await rpc<string>('eth_getCode', [undeployed, 'latest'])).toBe('0x');
      const w = new EthereumWatcher({
        chain: 'anvil-undeployed',
        rpcUrl: node.url,
        store: new JsonFileWatcherStore(join(dir, 'undeployed.json')),
        tokens: [undeployed],
        confirmations: 1,
        startHeight: Number(BigInt(await rpc<string>('eth_blockNumber'))) + 1,
      });
      // an address of its own (no other test pays it): its balance is this test's deposit alone
      const payee = getAddress(toHex(randomBytes(20)));
      w.watch(payee);
      await w.poll();
      const deposit = await rpc<string>('eth_sendTransaction', [
        { from: funder, to: payee, value: '0x2386f26fc10000' }, // 0.01 ETH
      ]);
      await mined(deposit);
      const events = await w.poll();
      expect(events.filter((e) => e.type === 'balance_updated').map((e) => [e.asset, e.balance])).toEqual([
        ['native', (10n ** 16n).toString()],
      ]);
    });

    it('estimates SLOW ≤ STANDARD ≤ FAST fees with USD values', async () => {
      const req = {
        fields: { asset: { kind: 'native' as const }, destination: other.address, amount: 1n },
        sources: [wallet],
      };
      const fees = await Promise.all((['SLOW', 'STANDARD', 'FAST'] as const).map((l) => adapter.estimateFee(req, l)));
      for (const f of fees) {
        expect(f.fee_currency).toBe('ETH');
        expect(f.fee_value).toMatch(/^0\.\d+$/);
        expect(f.fee_value_usd).toMatch(/^\d+\.\d{2}$/);
        expect(Number(f.metadata.gas_limit)).toBeGreaterThanOrEqual(21_000);
      }
      const values = fees.map((f) => Number(f.fee_value));
      expect(values[0]).toBeLessThanOrEqual(values[1]!);
      expect(values[1]).toBeLessThanOrEqual(values[2]!);
    });

    it('replaces a stuck transaction with the same nonce and higher fees', async () => {
      await rpc('evm_setAutomine', [false]);
      try {
        const stuck = await adapter.buildTransfer({
          fields: { asset: { kind: 'native' }, destination: other.address, amount: 12345n },
          sources: [wallet],
          feeLevel: 'SLOW',
        });
        const signedStuck = adapter.attachSignatures(stuck, await signAll(sign, stuck.digests));
        await adapter.broadcast(signedStuck);
        // The watcher sees it in the mempool.
        const w = new EthereumWatcher({
          chain: 'anvil-mempool',
          rpcUrl: node.url,
          store: new JsonFileWatcherStore(join(dir, 'mempool.json')),
          confirmations: 1,
        });
        w.watch(other.address);
        const seen = await w.poll();
        expect(
          seen.some((e) => e.type === 'transaction_detected' && e.txid === signedStuck.txid && e.block_height === null),
        ).toBe(true);

        const bump = await adapter.buildReplacement(stuck, 'FAST');
        expect(bump.context.nonce).toBe(stuck.context.nonce);
        expect(BigInt(bump.context.maxPriorityFeePerGas)).toBeGreaterThan(
          (BigInt(stuck.context.maxPriorityFeePerGas) * 11n) / 10n,
        );
        const signedBump = adapter.attachSignatures(bump, await signAll(sign, bump.digests));
        await adapter.broadcast(signedBump);
        await rpc('evm_mine');
        expect((await mined(signedBump.txid)).status).toBe('0x1');
        expect(await receipt(signedStuck.txid)).toBeNull();
        const after = await w.poll();
        expect(after.some((e) => e.type === 'transaction_detected' && e.txid === signedBump.txid)).toBe(true);
      } finally {
        await rpc('evm_setAutomine', [true]);
      }
    });

    it('handles a reorganisation within the confirmation depth and refuses one deeper than it', async () => {
      const target = holder.source(addressPath(ETH_COIN_TYPE, 2, 0), ethereumAddress);
      const w = new EthereumWatcher({
        chain: 'anvil-reorg',
        rpcUrl: node.url,
        store: new JsonFileWatcherStore(join(dir, 'reorg.json')),
        confirmations: 3,
      });
      w.watch(target.address);
      await w.poll();
      const snapshot = await rpc<string>('evm_snapshot');
      const orphan = await rpc<string>('eth_sendTransaction', [{ from: funder, to: target.address, value: '0x1000' }]);
      await mined(orphan);
      const seen = await w.poll();
      expect(seen.map((e) => [e.type, e.type === 'transaction_detected' ? e.txid : ''])).toEqual([
        ['transaction_detected', orphan],
      ]);
      // Replace the deposit's block (depth 1 < 3) by empty blocks: the deposit never counts.
      await rpc('evm_revert', [snapshot]);
      await rpc('anvil_mine', ['0x4']);
      expect(await w.poll()).toEqual([]);
      const store = new JsonFileWatcherStore(join(dir, 'reorg.json'));
      expect(await store.getBalances('anvil-reorg')).toEqual([]);
      // A deposit that reaches 3 confirmations counts once.
      const kept = await rpc<string>('eth_sendTransaction', [{ from: funder, to: target.address, value: '0x2000' }]);
      await mined(kept);
      await rpc('anvil_mine', ['0x2']);
      const counted = await w.poll();
      expect(counted.map((e) => (e.type === 'balance_updated' ? e.balance : e.type))).toEqual([
        'transaction_detected',
        String(0x2000),
      ]);
      // Now replace a block the watcher already counted: it stops with ReorgTooDeepError.
      const cursor = (await store.getCursor('anvil-reorg'))!;
      const tip = Number(BigInt(await rpc<string>('eth_blockNumber')));
      await rpc('anvil_rollback', [tip - cursor.height + 1]);
      await mined(await rpc<string>('eth_sendTransaction', [{ from: funder, to: funder, value: '0x1' }]));
      await rpc('anvil_mine', ['0x4']);
      const fresh = (await rpc<{ hash: string }>('eth_getBlockByNumber', [`0x${cursor.height.toString(16)}`, false]))
        .hash;
      expect(fresh).not.toBe(cursor.hash);
      await expect(w.poll()).rejects.toBeInstanceOf(ReorgTooDeepError);
    });
  });
}

ethereumSuite('2-of-3 CGGMP21 threshold signatures', () => thresholdKeyHolder('ethereum'));
