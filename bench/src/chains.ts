/**
 * Benchmarks of @custodian/chains, offline (no node): per family, the pure digest computation a
 * signer runs before signing (`recompute*Digests`: build the transaction from the transfer fields
 * and its context, then its signing digest(s)), and attaching signatures (each checked against
 * its digest and key) with serialisation; and the threshold signatures themselves: CGGMP21
 * presigning + signing of a transfer digest under an HD-derived key (2-of-3, in-memory
 * simulator, the TEST-ONLY key shares committed in packages/cggmp/test/fixtures), and FROST
 * `secp256k1-tr` Taproot key-path signing (2-of-3).
 *
 * Signatures for the attach benchmarks come from those threshold ceremonies (no whole key).
 * Run: `npx tsc -b && node bench/dist/chains.js` — one JSON figure per line (ms).
 */
import { readFileSync } from 'node:fs';
import { type KeyShare, keyShareFromJson, type Presignature, presignProtocol, signProtocol } from '@custodian/cggmp';
import {
  BitcoinAdapter,
  type BitcoinContext,
  BitcoinRpc,
  type ChainSignature,
  type DigestToSign,
  EthereumAdapter,
  type EthereumContext,
  ethereumAddress,
  LITECOIN_REGTEST,
  recomputeBitcoinDigests,
  recomputeEthereumDigests,
  recomputeTronDigests,
  type TransferFields,
  TronAdapter,
  type TronContext,
  TronHttpClient,
  tronAddress,
  type UnsignedTransfer,
} from '@custodian/chains';
import {
  bytesToHex,
  deriveSecp256k1,
  equalBytes,
  Party,
  secp256k1Group,
  simulate,
  systemRandom,
} from '@custodian/crypto';
import {
  dkgProtocol,
  type KeyShare as FrostKeyShare,
  signProtocol as frostSignProtocol,
  type SignOutput,
} from '@custodian/frost';
import { bench } from './harness.js';

const shares = (
  JSON.parse(
    readFileSync(new URL('../../packages/cggmp/test/fixtures/test-only-key-shares.json', import.meta.url), 'utf8'),
  ) as { sets: Record<string, unknown[]> }
).sets['2of3']?.map((j) => keyShareFromJson(j)) as KeyShare[];
const core = (shares[0] as KeyShare).core;
const master = { publicKey: secp256k1Group.encodePoint(core.publicKey), chainCode: core.chainCode };
const SIGNERS = [0, 2];
const sid = () => systemRandom(32);

/** CGGMP21 presigning then signing of one digest under the key at `d.key.path` (2-of-3). */
function thresholdEcdsa(d: DigestToSign): ChainSignature {
  const child = deriveSecp256k1(master.publicKey, master.chainCode, [...d.key.path]);
  const presignSid = sid();
  const pre = simulate(
    SIGNERS.map(
      (s, pos) =>
        new Party(presignProtocol({ share: shares[s] as KeyShare, signers: SIGNERS }), {
          self: pos,
          n: SIGNERS.length,
          sessionId: presignSid,
          rng: systemRandom,
        }),
    ),
  );
  if (pre.aborted.some((a) => a !== undefined)) throw new Error('presigning aborted');
  const signSid = sid();
  const res = simulate(
    (pre.outputs as Presignature[]).map(
      (p, pos) =>
        new Party(signProtocol({ presignature: p, digest: d.digest, tweak: child.tweak }), {
          self: pos,
          n: SIGNERS.length,
          sessionId: signSid,
          rng: systemRandom,
        }),
    ),
  );
  const sig = res.outputs[0];
  if (sig === undefined || !equalBytes(sig.publicKey, d.key.publicKey)) throw new Error('signing failed');
  return { scheme: 'ecdsa', r: sig.r, s: sig.s, recovery: sig.recovery };
}

const key = (path: number[]) => {
  const c = deriveSecp256k1(master.publicKey, master.chainCode, path);
  return { publicKey: c.publicKey, path: c.path };
};
const native = { kind: 'native' } as const;

// Ethereum: an ERC-20 transfer.
const ethKey = key([44, 60, 0, 0, 0]);
const ethFields: TransferFields = {
  asset: { kind: 'token', contract: '0x5FbDB2315678afecb367f032d93F642f64180aa3', symbol: 'TT', decimals: 6 },
  destination: '0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf',
  amount: 1_250_000n,
};
const ethContext: EthereumContext = {
  chainId: 1,
  from: ethereumAddress(ethKey.publicKey),
  fromPublicKey: bytesToHex(ethKey.publicKey),
  fromPath: ethKey.path,
  nonce: 7,
  gas: '65000',
  maxFeePerGas: '30000000000',
  maxPriorityFeePerGas: '1000000000',
};
const eth = new EthereumAdapter({ id: 'ethereum', chainId: 1, rpcUrl: 'http://127.0.0.1:9' });

// TRON: a TRC-20 transfer.
const tronKey = key([44, 195, 0, 0, 0]);
const tronFields: TransferFields = {
  asset: { kind: 'token', contract: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t', symbol: 'USDT', decimals: 6 },
  destination: 'TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HC',
  amount: 1_234_567n,
};
const tronContext: TronContext = {
  network: 'mainnet',
  from: tronAddress(tronKey.publicKey),
  fromPublicKey: bytesToHex(tronKey.publicKey),
  fromPath: tronKey.path,
  refBlockBytes: 'c0a9',
  refBlockHash: 'c8f8f25b6a0c0b3c',
  expiration: 1_700_000_601_000,
  timestamp: 1_700_000_001_000,
  feeLimit: '30000000',
};
const tron = new TronAdapter({ client: new TronHttpClient('http://127.0.0.1:9') });

// Bitcoin family: two inputs (P2WPKH signed by CGGMP21, P2TR signed by FROST) and change.
const frostShares = (() => {
  const dkgSid = sid();
  const r = simulate(
    [0, 1, 2].map(
      (i) =>
        new Party(dkgProtocol({ suite: 'secp256k1-tr', threshold: 2 }), {
          self: i,
          n: 3,
          sessionId: dkgSid,
          rng: systemRandom,
        }),
    ),
  );
  if (r.aborted.some((a) => a !== undefined)) throw new Error('FROST DKG aborted');
  return r.outputs as FrostKeyShare[];
})();
const frostMaster = frostShares[0] as FrostKeyShare;
const trChild = deriveSecp256k1(frostMaster.groupPublicKey, frostMaster.chainCode, [44, 1, 0, 0, 1]);
const btc = new BitcoinAdapter({
  network: LITECOIN_REGTEST,
  rpc: new BitcoinRpc({ url: 'http://127.0.0.1:9', username: 'x', password: 'x' }),
});
const wpkhKey = key([44, 1, 0, 0, 0]);
const changeKey = key([44, 1, 0, 1, 0]);
const btcFields: TransferFields = {
  asset: native,
  destination: btc.addressFromPublicKey(key([44, 1, 9, 0, 0]).publicKey, 'p2wpkh'),
  amount: 120_000_000n,
};
const btcContext: BitcoinContext = {
  network: LITECOIN_REGTEST.id,
  version: 2,
  lockTime: 0,
  sequence: 0xfffffffd,
  inputs: [
    {
      txid: 'aa'.repeat(32),
      vout: 0,
      value: '100000000',
      address: btc.addressFromPublicKey(wpkhKey.publicKey, 'p2wpkh'),
      kind: 'p2wpkh',
      publicKey: bytesToHex(wpkhKey.publicKey),
      path: wpkhKey.path,
    },
    {
      txid: 'bb'.repeat(32),
      vout: 1,
      value: '50000000',
      address: btc.addressFromPublicKey(trChild.publicKey, 'p2tr'),
      kind: 'p2tr',
      publicKey: bytesToHex(trChild.publicKey),
      path: trChild.path,
    },
  ],
  change: {
    address: btc.addressFromPublicKey(changeKey.publicKey, 'p2wpkh'),
    publicKey: bytesToHex(changeKey.publicKey),
    path: changeKey.path,
    kind: 'p2wpkh',
    value: '29995000',
  },
  fee: '5000',
  feeRate: '20',
};

/** FROST 2-of-3 Taproot key-path signing of one digest (BIP86: empty script tree). */
function thresholdSchnorr(d: DigestToSign): ChainSignature {
  const signers = [0, 2].map((i) => (frostShares[i] as FrostKeyShare).identifier);
  const signSid = sid();
  const r = simulate(
    [0, 2].map(
      (i, k) =>
        new Party(
          frostSignProtocol({
            keyShare: frostShares[i] as FrostKeyShare,
            signers,
            message: d.digest,
            derivationPath: d.key.path,
            taproot: { merkleRoot: new Uint8Array(0) },
          }),
          { self: k, n: 2, sessionId: signSid, rng: systemRandom },
        ),
    ),
  );
  const out = r.outputs[0] as SignOutput | undefined;
  if (out === undefined) throw new Error('FROST signing aborted');
  return { scheme: 'schnorr', signature: out.signature };
}

const sign = (d: DigestToSign) => (d.scheme === 'ecdsa' ? thresholdEcdsa(d) : thresholdSchnorr(d));
const unsigned = <C extends EthereumContext | TronContext | BitcoinContext>(
  chain: string,
  fields: TransferFields,
  context: C,
  digests: DigestToSign[],
): UnsignedTransfer<C> => ({ chain, fields, unsignedTx: new Uint8Array(0), digests, context, maxFee: 0n });

async function main() {
  const ethDigests = recomputeEthereumDigests(ethFields, ethContext);
  const tronDigests = recomputeTronDigests(tronFields, tronContext);
  const btcDigests = recomputeBitcoinDigests(LITECOIN_REGTEST, btcFields, btcContext);
  await bench('chains.ethereum.erc20.digest', () => recomputeEthereumDigests(ethFields, ethContext), { n: 200 });
  await bench('chains.tron.trc20.digest', () => recomputeTronDigests(tronFields, tronContext), { n: 200 });
  await bench(
    'chains.litecoin.p2wpkh+p2tr.digests',
    () => recomputeBitcoinDigests(LITECOIN_REGTEST, btcFields, btcContext),
    { n: 200 },
  );

  await bench('chains.threshold.ecdsa.presign+sign.2of3', () => thresholdEcdsa(ethDigests[0] as DigestToSign), {
    n: 5,
    warmup: 1,
  });
  const ethSig = thresholdEcdsa(ethDigests[0] as DigestToSign);
  await bench('chains.threshold.frost-taproot.sign.2of3', () => thresholdSchnorr(btcDigests[1] as DigestToSign), {
    n: 20,
  });

  const ethUnsigned = unsigned('ethereum', ethFields, ethContext, ethDigests);
  const tronUnsigned = unsigned('tron', tronFields, tronContext, tronDigests);
  const btcUnsigned = unsigned(LITECOIN_REGTEST.id, btcFields, btcContext, btcDigests);
  const tronSig = [thresholdEcdsa(tronDigests[0] as DigestToSign)];
  const btcSigs = btcDigests.map(sign);
  await bench('chains.ethereum.erc20.attach+serialise', () => eth.attachSignatures(ethUnsigned, [ethSig]), {
    n: 200,
  });
  await bench('chains.tron.trc20.attach+serialise', () => tron.attachSignatures(tronUnsigned, tronSig), { n: 200 });
  await bench('chains.litecoin.p2wpkh+p2tr.attach+serialise', () => btc.attachSignatures(btcUnsigned, btcSigs), {
    n: 200,
  });
}

await main();
