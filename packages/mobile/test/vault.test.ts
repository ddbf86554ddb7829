/**
 * Device vault: keys sealed under a PIN-derived key (scrypt, XChaCha20-Poly1305). The right PIN
 * opens it, a wrong PIN fails with WrongPinError, no secret is stored in the clear, and a tampered
 * sealed key does not open.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deviceFingerprint } from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { bytesToHex, hexToBytes } from '@noble/curves/utils.js';
import { describe, expect, it } from 'vitest';
import { createVault, derivePinKey, unlockVault, VAULT_FILE, WrongPinError } from '../src/vault.js';

const KDF = { N: 1024, r: 8, p: 1 };

describe('device vault', () => {
  it('seals the P-256 device key and the Ed25519 MPC key under the PIN', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'custodian-vault-'));
    const v = await createVault(dir, '2468', { url: 'http://127.0.0.1:1', name: 'phone', kdf: KDF });
    const device = bytesToHex(v.deviceSecretKey);
    const mpc = bytesToHex(v.mpcSecretKey);
    expect(v.info.devicePublicKey).toBe(bytesToHex(p256.getPublicKey(v.deviceSecretKey, true)));
    expect(v.info.fingerprint).toBe(deviceFingerprint(hexToBytes(v.info.devicePublicKey)));
    const file = readFileSync(join(dir, VAULT_FILE), 'utf8');
    expect(file).not.toContain(device);
    expect(file).not.toContain(mpc);

    const u = await unlockVault(dir, '2468');
    expect(bytesToHex(u.deviceSecretKey)).toBe(device);
    expect(bytesToHex(u.mpcSecretKey)).toBe(mpc);
    u.wipe();
    expect(u.deviceSecretKey.every((b) => b === 0)).toBe(true);

    await expect(unlockVault(dir, '2469')).rejects.toBeInstanceOf(WrongPinError);
    await expect(createVault(dir, '2468', { url: 'http://x', name: 'again', kdf: KDF })).rejects.toThrow(/already/);

    const info = JSON.parse(file) as { sealed: { deviceKey: string } };
    const b = hexToBytes(info.sealed.deviceKey);
    b[30] = (b[30] as number) ^ 1;
    writeFileSync(
      join(dir, VAULT_FILE),
      JSON.stringify({ ...JSON.parse(file), sealed: { ...info.sealed, deviceKey: bytesToHex(b) } }),
    );
    await expect(unlockVault(dir, '2468')).rejects.toBeInstanceOf(WrongPinError);
  });

  it('rejects a PIN shorter than 4 characters', async () => {
    await expect(derivePinKey('123', new Uint8Array(16), KDF)).rejects.toThrow(RangeError);
  });
});
