/** The server signer's config file (config.ts): fields, defaults, and errors naming the field. */

import { parseChainsConfig } from '@custodian/ceremony';
import { describe, expect, it } from 'vitest';
import { defaultGenerationFile, parseConfig, reloadedConfig } from '../src/index.js';

describe('config', () => {
  const peer = '12D3KooWDriB8JmATtubbnW4d6iuWp8tUHCsbSXp3zjBtPpPbwr9';
  it('parses a valid config and names the failing field otherwise', () => {
    const c = parseConfig(
      {
        listen: '/ip4/127.0.0.1/tcp/7001',
        dataDir: 'd',
        peers: [{ peerId: peer, addrs: ['/ip4/127.0.0.1/tcp/7002'] }],
        coordinator: { peerId: peer },
        passphrase: { env: 'X' },
      },
      '/base',
    );
    expect(c.dataDir).toBe('/base/d');
    expect(() =>
      parseConfig(
        { dataDir: 'd', peers: [{ peerId: 'nope' }], coordinator: { peerId: peer }, passphrase: { env: 'X' } },
        '/',
      ),
    ).toThrow(/peers\[0\]\.peerId/);
    expect(() => parseConfig({ dataDir: 'd', peers: [], coordinator: { peerId: peer } }, '/')).toThrow(/passphrase/);
    expect(() =>
      parseConfig(
        { dataDir: 'd', peers: [], coordinator: { peerId: peer }, passphrase: { env: 'X' }, listen: 'not-an-addr' },
        '/',
      ),
    ).toThrow(/listen/);
  });

  it('enforcement is on by default; the opt-out is an explicit boolean, exclusive with trustedAdminDevices', () => {
    const base = { dataDir: 'd', peers: [], coordinator: { peerId: peer }, passphrase: { env: 'X' } };
    const admin = { deviceId: 'admin-phone', publicKey: `02${'ab'.repeat(32)}` };
    const plain = parseConfig(base, '/');
    expect(plain.allowUnenforcedSigning).toBeUndefined();
    expect(plain.trustedAdminDevices).toBeUndefined();
    expect(parseConfig({ ...base, allowUnenforcedSigning: true }, '/').allowUnenforcedSigning).toBe(true);
    expect(parseConfig({ ...base, allowUnenforcedSigning: false }, '/').allowUnenforcedSigning).toBeUndefined();
    expect(parseConfig({ ...base, trustedAdminDevices: [admin] }, '/').trustedAdminDevices).toEqual([admin]);
    expect(() => parseConfig({ ...base, allowUnenforcedSigning: 'yes' }, '/')).toThrow(/allowUnenforcedSigning/);
    expect(() => parseConfig({ ...base, allowUnenforcedSigning: true, trustedAdminDevices: [admin] }, '/')).toThrow(
      /allowUnenforcedSigning: not with trustedAdminDevices/,
    );
  });

  it('chains: chain id / network and fee ceiling per blockchain; errors name the field', () => {
    const base = { dataDir: 'd', peers: [], coordinator: { peerId: peer }, passphrase: { env: 'X' } };
    const chains = {
      'ethereum-local': { family: 'ethereum', chainId: 31337, maxFee: '10000000000000000' },
      'litecoin-regtest': { family: 'bitcoin', network: 'litecoin-regtest', maxFee: '1000000' },
      'tron-nile': { family: 'tron', network: 'nile', maxFee: '100000000' },
    };
    expect(parseConfig({ ...base, chains }, '/').chains).toEqual(chains);
    const bad = (c: unknown) => () => parseConfig({ ...base, chains: c }, '/');
    expect(bad([])).toThrow(/^chains: /);
    expect(bad({ 'ethereum-local': { family: 'ethereum', chainId: '1', maxFee: '1' } })).toThrow(
      /chains\.ethereum-local\.chainId/,
    );
    expect(bad({ 'litecoin-regtest': { family: 'bitcoin', network: 'ltc', maxFee: '1' } })).toThrow(
      /chains\.litecoin-regtest\.network/,
    );
    expect(bad({ 'tron-nile': { family: 'tron', network: 'nile', maxFee: '1.5' } })).toThrow(
      /chains\.tron-nile\.maxFee/,
    );
    expect(bad({ 'tron-nile': { family: 'solana', maxFee: '1' } })).toThrow(/chains\.tron-nile\.family/);
  });

  it('chains.<key>.assets: the tokens signed for (contract, decimals); errors name the field', () => {
    const base = { dataDir: 'd', peers: [], coordinator: { peerId: peer }, passphrase: { env: 'X' } };
    const chains = {
      'ethereum-sepolia': {
        family: 'ethereum',
        chainId: 11155111,
        maxFee: '1',
        assets: { USDC: { contract: '0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238', decimals: 6 } },
      },
      'tron-nile': {
        family: 'tron',
        network: 'nile',
        maxFee: '1',
        assets: { USDT: { contract: 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf', decimals: 6 } },
      },
    };
    expect(parseConfig({ ...base, chains }, '/').chains).toEqual(chains);
    const tron = (assets: unknown) => () =>
      parseConfig({ ...base, chains: { 'tron-nile': { family: 'tron', network: 'nile', maxFee: '1', assets } } }, '/');
    const eth = (assets: unknown) => () =>
      parseConfig(
        { ...base, chains: { 'ethereum-local': { family: 'ethereum', chainId: 1, maxFee: '1', assets } } },
        '/',
      );
    expect(tron({ USDT: { contract: 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBg', decimals: 6 } })).toThrow(
      /^chains\.tron-nile\.assets\.USDT\.contract: not a TRON base58check address$/,
    );
    expect(tron({ USDT: { contract: '0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238', decimals: 6 } })).toThrow(
      /chains\.tron-nile\.assets\.USDT\.contract/,
    );
    expect(tron({ USDT: { contract: 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf', decimals: 6.5 } })).toThrow(
      /chains\.tron-nile\.assets\.USDT\.decimals/,
    );
    expect(tron({ TRX: { contract: 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf', decimals: 6 } })).toThrow(
      /chains\.tron-nile\.assets\.TRX: the native asset is implied/,
    );
    expect(tron([])).toThrow(/^chains\.tron-nile\.assets: /);
    // a mixed-case EVM contract must carry its EIP-55 checksum (one letter's case flipped here)
    expect(eth({ USDC: { contract: '0x1C7D4B196Cb0C7B01d743Fbc6116a902379C7238', decimals: 6 } })).toThrow(
      /chains\.ethereum-local\.assets\.USDC\.contract/,
    );
    expect(eth({ 'US DC': { contract: '0x1c7d4b196cb0c7b01d743fbc6116a902379c7238', decimals: 6 } })).toThrow(
      /chains\.ethereum-local\.assets\.US DC: not a token symbol/,
    );
    expect(() =>
      parseConfig(
        {
          ...base,
          chains: { 'bitcoin-regtest': { family: 'bitcoin', network: 'bitcoin-regtest', maxFee: '1', assets: {} } },
        },
        '/',
      ),
    ).toThrow(/chains\.bitcoin-regtest\.assets: the Bitcoin family has no tokens/);
  });

  it('generationFile: outside dataDir (default beside it), resolved from the config directory', () => {
    const base = { dataDir: 'd', peers: [], coordinator: { peerId: peer }, passphrase: { env: 'X' } };
    expect(parseConfig(base, '/base').generationFile).toBeUndefined();
    expect(defaultGenerationFile('/base/d')).toBe('/base/d.generation.json');
    expect(parseConfig({ ...base, generationFile: 'state/gen.json' }, '/base').generationFile).toBe(
      '/base/state/gen.json',
    );
    expect(() => parseConfig({ ...base, generationFile: 'd/gen.json' }, '/base')).toThrow(
      /generationFile: must be outside/,
    );
    expect(() => parseConfig({ ...base, generationFile: '/base/d' }, '/base')).toThrow(
      /generationFile: must be outside/,
    );
    expect(() => parseConfig({ ...base, generationFile: 7 }, '/')).toThrow(/generationFile: expected a path/);
  });
  it('an unknown key is an error naming it, where it is and its closest valid spelling (#29)', () => {
    const base = { dataDir: 'd', peers: [], coordinator: { peerId: peer }, passphrase: { env: 'X' } };
    expect(() => parseConfig({ ...base, logLevl: 'info' }, '/')).toThrow(
      /^unknown key `logLevl` at the top level — did you mean `logLevel`\?$/,
    );
    expect(() => parseConfig({ ...base, passphrase: { env: 'X', fil: '/p' } }, '/')).toThrow(
      /^unknown key `fil` in passphrase — did you mean `file`\?$/,
    );
    expect(() => parseConfig({ ...base, peers: [{ peerId: peer, addr: [] }] }, '/')).toThrow(
      /^unknown key `addr` in peers\[0\] — did you mean `addrs`\?$/,
    );
    expect(() =>
      parseConfig(
        { ...base, chains: { 'ethereum-local': { family: 'ethereum', chainId: 1, maxFee: '1', max_fee: '2' } } },
        '/',
      ),
    ).toThrow(/^unknown key `max_fee` in chains\.ethereum-local — did you mean `maxFee`\?$/);
    const asset = { contract: 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf', decimals: 6, decimal: 6 };
    // the phone simulator's --chains file is the same object, checked alone
    expect(() =>
      parseChainsConfig({ 'tron-nile': { family: 'tron', network: 'nile', maxFee: '1', assets: { USDT: asset } } }),
    ).toThrow(/^unknown key `decimal` in chains\.tron-nile\.assets\.USDT — did you mean `decimals`\?$/);
    expect(() => parseConfig({ ...base, zzz: 1 }, '/')).toThrow(
      /^unknown key `zzz` at the top level \(valid keys: listen, /,
    );
  });

  it('reload: takes trusted devices, chains and log level; reports the rest; refuses an enforcement switch', () => {
    const base = { dataDir: 'd', peers: [], coordinator: { peerId: peer }, passphrase: { env: 'X' } };
    const admin = { deviceId: 'admin-phone', publicKey: `02${'ab'.repeat(32)}` };
    const chains = { 'ethereum-local': { family: 'ethereum', chainId: 31337, maxFee: '1' } };
    const running = parseConfig({ ...base, trustedAdminDevices: [] }, '/');
    const r = reloadedConfig(
      running,
      parseConfig(
        { ...base, trustedAdminDevices: [admin], chains, logLevel: 'debug', listen: '/ip4/0.0.0.0/tcp/1' },
        '/',
      ),
    );
    expect(r.config.trustedAdminDevices).toEqual([admin]);
    expect(Object.keys(r.config.chains ?? {})).toEqual(['ethereum-local']);
    expect(r.config.logLevel).toBe('debug');
    expect(r.config.listen).toBe(running.listen); // kept until a restart
    expect(r.applied.sort()).toEqual(['chains', 'logLevel', 'trustedAdminDevices']);
    expect(r.restartRequired).toEqual(['listen']);
    // removing the list turns enforcement's trust off (every sign request refused), never on
    expect(reloadedConfig(running, parseConfig(base, '/')).config.trustedAdminDevices).toBeUndefined();
    expect(() => reloadedConfig(running, parseConfig({ ...base, allowUnenforcedSigning: true }, '/'))).toThrow(
      /allowUnenforcedSigning changed/,
    );
  });
});
