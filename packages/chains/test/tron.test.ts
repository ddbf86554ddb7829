/**
 * TRON: addresses, raw_data protobuf, txID and signatures checked against tronweb's offline
 * functions and test-vectors/chains.json; the HTTP client against a local node:http server that
 * answers like TRON's documented `/wallet/*` API. No TRON node runs here: broadcast is not tested
 * against a live node (README).
 */
import { createServer, type Server } from 'node:http';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { utils as tronUtils } from 'tronweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import vectors from '../../../test-vectors/chains.json' with { type: 'json' };
import {
  addressPath,
  ChainError,
  type DigestSigner,
  InvalidAddressError,
  InvalidSignatureError,
  NodeRpcError,
  recomputeTronDigests,
  StaticPriceSource,
  TRX_COIN_TYPE,
  TronAdapter,
  TronHttpClient,
  tronAddress,
  tronTransactionJson,
} from '../src/index.js';
import { freePort } from './helpers/anvil.js';
import { type KeyHolder, signAll, thresholdKeyHolder } from './helpers/threshold-signer.js';

const USDT = 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t';

describe('TRON addresses', () => {
  it('private key 1 → chains.json address, and tronweb agrees', () => {
    const v = vectors.tron[0] as { private_key: string; address_hex: string; address_base58: string };
    const pub = secp256k1.getPublicKey(hexToBytes(v.private_key), true);
    expect(tronAddress(pub)).toBe(v.address_base58);
    expect(tronUtils.address.fromPrivateKey(v.private_key)).toBe(v.address_base58);
    expect(tronUtils.address.toHex(v.address_base58).toLowerCase()).toBe(v.address_hex);
  });
  it('rejects bad checksums, wrong prefixes and other chains’ addresses with a 422 error', () => {
    const adapter = new TronAdapter({ client: new TronHttpClient('http://127.0.0.1:1') });
    expect(adapter.validateAddress('TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HC')).toBe('TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HC');
    for (const bad of [
      'TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HD',
      '1BoatSLRHtKNngkdXEeobR76b53LETtpyX',
      '0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf',
      'T0',
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

/** Answers like a TRON full node's HTTP API (shapes from java-tron's documented responses). */
function fakeTronNode(state: { broadcasts: string[] }) {
  return createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += String(c);
    });
    req.on('end', () => {
      const json = body ? JSON.parse(body) : {};
      const send = (o: unknown) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(o));
      };
      switch (req.url) {
        case '/wallet/getnowblock':
          return send({
            blockID: '0000000003d3c0a9c8f8f25b6a0c0b3c2a4b5d8f9e1a2b3c4d5e6f708192a3b4',
            block_header: {
              raw_data: {
                number: 64209065,
                txTrieRoot: '00',
                witness_address: '41',
                parentHash: '00',
                version: 30,
                timestamp: 1_700_000_000_000,
              },
              witness_signature: '00',
            },
          });
        case '/wallet/getchainparameters':
          return send({
            chainParameter: [
              { key: 'getTransactionFee', value: 1000 },
              { key: 'getEnergyFee', value: 210 },
              { key: 'getCreateNewAccountFeeInSystemContract', value: 1_000_000 },
              { key: 'getAllowTvmTransferTrc10' },
            ],
          });
        case '/wallet/getaccountresource':
          return send({ freeNetLimit: 600, freeNetUsed: 600, NetLimit: 0, EnergyLimit: 10_000, EnergyUsed: 0 });
        case '/wallet/getaccount':
          return send(
            json.address === 'TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HC' ? { address: json.address, balance: 5 } : {},
          );
        case '/wallet/triggerconstantcontract':
          return send({ result: { result: true }, energy_used: 64_285, constant_result: [`${'0'.repeat(63)}1`] });
        case '/wallet/broadcasthex': {
          state.broadcasts.push(json.transaction);
          if (state.broadcasts.length > 1)
            return send({
              result: false,
              code: 'DUP_TRANSACTION_ERROR',
              message: bytesToHex(new TextEncoder().encode('dup transaction')),
            });
          return send({ result: true, txid: hexToBytes(json.transaction).length > 0 ? undefined : 'x' });
        }
        case '/wallet/broken':
          return send({ Error: 'class java.lang.IllegalStateException : boom' });
        default:
          res.writeHead(404);
          res.end();
      }
    });
  });
}

function tronSuite(name: string, makeHolder: () => KeyHolder) {
  describe(`TRON transfers (${name})`, () => {
    let server: Server;
    let adapter: TronAdapter;
    const state = { broadcasts: [] as string[] };
    const holder = makeHolder();
    const sign: DigestSigner = holder.sign;
    const wallet = holder.source(addressPath(TRX_COIN_TYPE, 0, 0), tronAddress);

    beforeAll(async () => {
      const port = await freePort();
      server = fakeTronNode(state);
      // Threshold signing blocks this process's event loop for seconds: keep idle keep-alive
      // sockets open meanwhile, or the server closes one just as the client reuses it (ECONNRESET).
      server.keepAliveTimeout = 60_000;
      await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
      adapter = new TronAdapter({
        client: new TronHttpClient(`http://127.0.0.1:${port}`),
        prices: new StaticPriceSource({ TRX: '0.25' }),
        now: () => 1_700_000_001_000,
      });
    });
    afterAll(
      () =>
        new Promise<void>((r) => {
          server.closeAllConnections();
          server.close(() => r());
        }),
    );

    for (const asset of [
      { kind: 'native' as const },
      { kind: 'token' as const, contract: USDT, symbol: 'USDT', decimals: 6 },
    ]) {
      it(`${asset.kind === 'native' ? 'TRX' : 'TRC-20'}: raw_data and txID match tronweb; signature matches tronweb's and serialises`, async () => {
        const fields = { asset, destination: 'TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HC', amount: 1_234_567n };
        const unsigned = await adapter.buildTransfer({ fields, sources: [wallet] });
        expect(unsigned.context.refBlockBytes).toBe('c0a9');
        expect(unsigned.context.refBlockHash).toBe('c8f8f25b6a0c0b3c');
        expect(recomputeTronDigests(fields, unsigned.context)).toEqual(unsigned.digests);
        // tronweb rebuilds the protobuf from TRON's JSON form on its own.
        const json = tronTransactionJson(fields, unsigned.context);
        const pb = tronUtils.transaction.txJsonToPb(json);
        expect(tronUtils.transaction.txPbToRawDataHex(pb).toLowerCase()).toBe(bytesToHex(unsigned.unsignedTx));
        expect(tronUtils.transaction.txPbToTxID(pb).replace(/^0x/, '')).toBe(bytesToHex(unsigned.digests[0]!.digest));
        const sigs = await signAll(sign, unsigned.digests);
        const signed = adapter.attachSignatures(unsigned, sigs);
        expect(signed.txid).toBe(json.txID);
        // The signature recovers to the sender, by tronweb's own ecRecover.
        const sigHex = bytesToHex(signed.rawTx.subarray(signed.rawTx.length - 65));
        expect(tronUtils.crypto.ecRecover(signed.txid, sigHex).toLowerCase()).toBe(
          tronUtils.address.toHex(wallet.address).toLowerCase(),
        );
        expect(() =>
          adapter.attachSignatures(unsigned, [
            { ...sigs[0]!, recovery: 1 - (sigs[0] as { recovery: number }).recovery } as never,
          ]),
        ).toThrow(InvalidSignatureError);
      });
    }

    it('signature bytes equal tronweb signTransaction for the same key (RFC 6979)', async () => {
      // TEST-ONLY whole key (private key 1, the published chains.json vector): comparing exact
      // signature bytes needs deterministic RFC 6979 nonces on both sides, which a threshold
      // signature (random nonces) cannot give. Everything else signs with the threshold signer.
      const priv = hexToBytes('0000000000000000000000000000000000000000000000000000000000000001');
      const pub = secp256k1.getPublicKey(priv, true);
      const source = { address: tronAddress(pub), publicKey: pub, path: [] as number[] };
      const fields = { asset: { kind: 'native' as const }, destination: wallet.address, amount: 1n };
      const unsigned = await adapter.buildTransfer({ fields, sources: [source] });
      const sig = secp256k1.sign(unsigned.digests[0]!.digest, priv, { prehash: false, format: 'recovered' });
      const parsed = secp256k1.Signature.fromBytes(sig, 'recovered');
      const signed = adapter.attachSignatures(unsigned, [
        { scheme: 'ecdsa', r: parsed.r, s: parsed.s, recovery: parsed.recovery ?? 0 },
      ]);
      const byTronweb = tronUtils.crypto.signTransaction(
        bytesToHex(priv),
        tronTransactionJson(fields, unsigned.context),
      ) as { signature: string[] };
      expect(bytesToHex(signed.rawTx.subarray(signed.rawTx.length - 65))).toBe(byTronweb.signature[0]!.toLowerCase());
    });

    it('fee estimates from bandwidth and energy, broadcast, and node errors', async () => {
      const trx = await adapter.estimateFee(
        { fields: { asset: { kind: 'native' }, destination: wallet.address, amount: 1n }, sources: [wallet] },
        'FAST',
      );
      expect(trx.fee_currency).toBe('TRX');
      // No free bandwidth left and the destination has no account: bandwidth burn + account creation.
      expect(Number(trx.metadata.bandwidth_fee_sun)).toBe(Number(trx.metadata.bandwidth_bytes) * 1000);
      expect(trx.metadata.account_creation_fee_sun).toBe('1000000');
      const trc = await adapter.estimateFee(
        {
          fields: {
            asset: { kind: 'token', contract: USDT, symbol: 'USDT', decimals: 6 },
            destination: 'TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HC',
            amount: 1n,
          },
          sources: [wallet],
        },
        'SLOW',
      );
      expect(trc.metadata.energy).toBe(64_285);
      expect(trc.metadata.energy_fee_sun).toBe(String((64_285 - 10_000) * 210));
      const total = (64_285 - 10_000) * 210 + Number(trc.metadata.bandwidth_fee_sun);
      expect(trc.fee_value).toBe((total / 1e6).toString());
      expect(trc.fee_value_usd).toBe((Math.round((total / 1e6) * 0.25 * 100) / 100).toFixed(2));

      const unsigned = await adapter.buildTransfer({
        fields: { asset: { kind: 'native' }, destination: 'TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HC', amount: 5n },
        sources: [wallet],
      });
      const signed = adapter.attachSignatures(unsigned, await signAll(sign, unsigned.digests));
      expect(await adapter.broadcast(signed)).toBe(signed.txid);
      expect(state.broadcasts.at(-1)).toBe(bytesToHex(signed.rawTx));
      await expect(adapter.broadcast(signed)).rejects.toThrow(/DUP_TRANSACTION_ERROR dup transaction/);
      await expect(adapter.client.post('/wallet/broken')).rejects.toBeInstanceOf(NodeRpcError);
      await expect(adapter.buildReplacement()).rejects.toBeInstanceOf(ChainError);
    });
  });
}

tronSuite('2-of-3 CGGMP21 threshold signatures', () => thresholdKeyHolder('tron'));
