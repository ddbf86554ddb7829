/**
 * STYLE.md item 10 / issue #21 "Errors": every error class a Custodian package exports belongs to
 * one family — it extends `CustodianError` (@custodian/crypto) through its package family's base,
 * which names the family — except `@custodian/sdk`, whose errors extend its own `SdkError` of the
 * same shape (the SDK depends on `jose` only). A new `class X extends Error` exported by any
 * package fails this test.
 */
import { describe, expect, it } from 'vitest';
import * as ceremony from '../packages/ceremony/src/index.js';
import * as levelStore from '../packages/ceremony/src/level-store/index.js';
import * as cggmp from '../packages/cggmp/src/index.js';
import * as chains from '../packages/chains/src/index.js';
import * as cli from '../packages/cli/src/index.js';
import * as coordinator from '../packages/coordinator/src/index.js';
import * as crypto from '../packages/crypto/src/index.js';
import * as frost from '../packages/frost/src/index.js';
import * as mobile from '../packages/mobile/src/index.js';
import * as paillier from '../packages/paillier/src/index.js';
import * as sdk from '../packages/sdk/src/index.js';
import * as signer from '../packages/signer/src/index.js';
import * as signerClient from '../packages/signer-client/src/index.js';
import * as wire from '../packages/wire/src/index.js';

type Ctor = abstract new (...args: never[]) => unknown;

/** The exported classes of a module that are errors. */
function errorClasses(mod: Record<string, unknown>): [string, Ctor][] {
  return Object.entries(mod).filter(
    (e): e is [string, Ctor] => typeof e[1] === 'function' && (e[1] as Ctor).prototype instanceof Error,
  );
}

const PACKAGES: [string, Record<string, unknown>, string][] = [
  ['@custodian/crypto', crypto, 'crypto'],
  ['@custodian/paillier', paillier, 'crypto'],
  ['@custodian/cggmp', cggmp, 'crypto'],
  ['@custodian/frost', frost, 'crypto'],
  ['@custodian/chains', chains, 'chains'],
  ['@custodian/wire', wire, 'wire'],
  ['@custodian/ceremony', ceremony, 'signer'],
  ['@custodian/ceremony/level-store', levelStore, 'signer'],
  ['@custodian/signer', signer, 'signer'],
  ['@custodian/signer-client', signerClient, 'signer'],
  ['@custodian/coordinator', coordinator, 'coordinator'],
  ['@custodian/mobile', mobile, 'mobile'],
  ['@custodian/cli', cli, 'cli'],
];

describe('one error base with a family per package', () => {
  it.each(PACKAGES)('every error class %s exports is a CustodianError of its family', (_name, mod, family) => {
    for (const [exportName, cls] of errorClasses(mod)) {
      if (cls === crypto.CustodianError) continue;
      expect(cls.prototype instanceof crypto.CustodianError, `${exportName} extends CustodianError`).toBe(true);
      // `family` is a class field: read it from an instance of the family base without running
      // subclass constructors (they take typed arguments)
      const probe = Object.create(cls.prototype) as { constructor: Ctor };
      let base: Ctor = cls;
      while (Object.getPrototypeOf(base) !== crypto.CustodianError) base = Object.getPrototypeOf(base) as Ctor;
      const f = Reflect.construct(base as unknown as new (c: string, m: string) => { family: string }, ['PROBE', 'p']);
      expect(f.family, `${exportName} (base ${base.name}) family`).toBe(family);
      expect(probe).toBeInstanceOf(Error);
    }
  });

  it('the SDK errors share the shape without the dependency', () => {
    const classes = errorClasses(sdk as Record<string, unknown>);
    expect(classes.length).toBeGreaterThan(0);
    for (const [exportName, cls] of classes)
      expect(cls === sdk.SdkError || cls.prototype instanceof sdk.SdkError, exportName).toBe(true);
    const e = new sdk.WebhookVerificationError('BAD_SIGNATURE', 'x');
    expect({ code: e.code, family: e.family, name: e.name }).toEqual({
      code: 'BAD_SIGNATURE',
      family: 'sdk',
      name: 'WebhookVerificationError',
    });
  });

  it('a family error carries its stable code and its class name', () => {
    const abort = new crypto.ProtocolAbort({ party: 2, reason: 'bad proof' });
    expect({ code: abort.code, family: abort.family, name: abort.name }).toEqual({
      code: 'PROTOCOL_ABORTED',
      family: 'crypto',
      name: 'ProtocolAbort',
    });
    const addr = new chains.InvalidAddressError('destination', 'checksum', 'bad checksum');
    expect([addr.code, addr.family, addr.name, addr.httpStatus]).toEqual([
      'INVALID_ADDRESS',
      'chains',
      'InvalidAddressError',
      422,
    ]);
    const api = new coordinator.ApiError('VALIDATION_FAILED', 'x');
    expect([api.code, api.family, api.status]).toEqual(['VALIDATION_FAILED', 'coordinator', 422]);
    expect(new signer.ConfigError('signer.peers: expected a list').code).toBe('CONFIG_INVALID');
    expect(new ceremony.EvidenceRefused('DIGEST_MISMATCH', 'x').family).toBe('signer');
    expect(new mobile.WrongPinError().code).toBe('WRONG_PIN');
    expect(new mobile.EnrollmentError('refused', 409, undefined).code).toBe('HTTP_409');
  });
});
