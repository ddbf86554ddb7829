/**
 * What `custodian admin keys replace-signer|reshare` checks before an Admin device signs a key
 * change (admin/keys.ts): the coordinator's digest is `keyChangeDigest(document)` of the document
 * shown, and the document is the change asked for (threshold, party count, the master key's public
 * keys and chain codes); and how a party argument (`server:<id>`, `device:<id>`, bare id or name)
 * resolves. The end-to-end runs against a real coordinator are in admin-keys.test.ts.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Device, KeyChange, ServerSigner } from '@custodian/coordinator/admin-api-types';
import { bytesToHex } from '@custodian/crypto';
import { type KeyChangeDocument, keyChangeDigest } from '@custodian/wire';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import type { AdminCliError } from '../src/admin/http.js';
import { registerAdminCommands } from '../src/admin/index.js';
import { checkKeyChange, drillPassed, type ExpectedChange, resolveParty } from '../src/admin/keys-check.js';

const hex = (n: number) => randomBytes(n).toString('hex');

const signer = (name: string): ServerSigner => ({
  signer_id: randomUUID(),
  name,
  peer_id: `12D3KooW${hex(8)}`,
  address: '/ip4/127.0.0.1/tcp/1',
  fingerprint: hex(16),
  created_at: new Date().toISOString(),
});
const device = (name: string, status: Device['status'] = 'APPROVED'): Device => ({
  device_id: randomUUID(),
  name,
  platform: 'android',
  os_version: '14',
  public_key: `02${hex(32)}`,
  fingerprint: hex(16),
  mpc_peer_id: `12D3KooW${hex(8)}`,
  user_id: null,
  status,
  created_at: new Date().toISOString(),
  decided_at: null,
  decided_by: null,
});

/** The error `f` throws (it must throw an AdminCliError). */
function thrown(f: () => unknown): AdminCliError {
  try {
    f();
  } catch (e) {
    expect((e as Error).name).toBe('AdminCliError');
    return e as AdminCliError;
  }
  throw new Error('did not throw');
}

describe('keys: party arguments', () => {
  const s1 = signer('s1');
  const s2 = signer('twin');
  const d1 = device('phone-1');
  const d2 = device('twin');
  const signers = [s1, s2];
  const devices = [d1, d2];

  it('server:<id> and device:<id> name exactly that kind', () => {
    expect(resolveParty(`server:${s1.signer_id}`, signers, devices)).toEqual({ kind: 'server', id: s1.signer_id });
    expect(resolveParty(`device:${d1.device_id.toUpperCase()}`, signers, devices)).toEqual({
      kind: 'device',
      id: d1.device_id,
    });
    // a signer id written as a device is not found
    expect(thrown(() => resolveParty(`device:${s1.signer_id}`, signers, devices)).code).toBe('UNKNOWN_PARTY');
  });

  it('a bare id or a unique name is looked up among signers and devices', () => {
    expect(resolveParty(d1.device_id, signers, devices)).toEqual({ kind: 'device', id: d1.device_id });
    expect(resolveParty('s1', signers, devices)).toEqual({ kind: 'server', id: s1.signer_id });
    expect(resolveParty('server:twin', signers, devices)).toEqual({ kind: 'server', id: s2.signer_id });
    expect(resolveParty('device:TWIN', signers, devices)).toEqual({ kind: 'device', id: d2.device_id });
  });

  it('a bare name of a signer and a device is ambiguous; an unknown one is unknown', () => {
    const e = thrown(() => resolveParty('twin', signers, devices));
    expect(e.code).toBe('AMBIGUOUS_PARTY');
    expect(e.message).toContain(`server:${s2.signer_id}`);
    expect(e.message).toContain(`device:${d2.device_id}`);
    expect(thrown(() => resolveParty('nobody', signers, devices)).code).toBe('UNKNOWN_PARTY');
  });
});

describe('keys: the key change is checked before it is signed', () => {
  const masterKey: ExpectedChange['masterKey'] = {
    threshold: 3,
    parties: [1, 2, 3, 4].map((i) => ({ kind: i < 3 ? 'server' : 'device', id: randomUUID(), peer: `p${i}` })),
    secp256k1_public_key: `03${hex(32)}`,
    secp256k1_chain_code: hex(32),
    ed25519_public_key: hex(32),
    ed25519_chain_code: hex(32),
  };
  const doc = (over: Partial<KeyChangeDocument> = {}): KeyChangeDocument => ({
    kind: 'custodian.key-change',
    change_id: '6f0e1d1c-8a7b-4c3d-9e2f-0a1b2c3d4e5f',
    key_id: hex(16),
    public_keys: [
      {
        algorithm: 'SECP256K1_ECDSA',
        public_key: masterKey.secp256k1_public_key,
        chain_code: masterKey.secp256k1_chain_code,
      },
      { algorithm: 'SECP256K1_TAPROOT', public_key: `02${hex(32)}`, chain_code: hex(32) },
      { algorithm: 'ED25519', public_key: masterKey.ed25519_public_key, chain_code: masterKey.ed25519_chain_code },
    ],
    new_parties: ['p1', 'p2', 'p3', 'p5'],
    new_threshold: 3,
    approver_devices: [
      { device_id: randomUUID(), public_key: `02${hex(32)}` },
      { device_id: randomUUID(), public_key: `03${hex(32)}` },
    ],
    // the devices' MPC peer ids are not known without the registered devices: checked by count
    base: { epoch: 2, parties: ['p1', 'p2', 'm3', 'm4'], threshold: 3 },
    expires_at: new Date(Date.now() + 23 * 3600_000).toISOString(),
    reason: 'replace-signer',
    created_at: '2026-11-26T08:00:00.000Z',
    ...over,
  });
  /** The coordinator's view of `d`, with `digest` its true digest unless given. */
  const view = (d: KeyChangeDocument, digest = bytesToHex(keyChangeDigest(d))): KeyChange => ({
    change_id: d.change_id,
    master_key_id: randomUUID(),
    reason: d.reason,
    status: 'AWAITING_SIGNATURE',
    document: d,
    digest,
    ceremony_id: null,
    error: null,
    created_by: null,
    created_at: d.created_at,
    updated_at: d.created_at,
  });
  const replace: ExpectedChange = {
    masterKey,
    input: { reason: 'replace-signer', old: { kind: 'device', id: 'a' }, new: { kind: 'device', id: 'b' } },
  };

  it('an honest change: the digest to sign is keyChangeDigest(document)', () => {
    const d = doc();
    expect(bytesToHex(checkKeyChange(view(d), replace))).toBe(bytesToHex(keyChangeDigest(d)));
    const reshare: ExpectedChange = {
      masterKey,
      input: { reason: 'reshare', threshold: 2, signers: [1, 2, 3].map(() => ({ kind: 'server', id: 'x' })) },
    };
    const r = doc({ reason: 'reshare', new_threshold: 2, new_parties: ['p1', 'p2', 'p9'] });
    expect(checkKeyChange(view(r), reshare)).toHaveLength(32);
    // an instance without ECDSA: the view's secp256k1 key is the Taproot key (x-only → 02‖x)
    const tr = doc({
      public_keys: [
        {
          algorithm: 'SECP256K1_TAPROOT',
          public_key: masterKey.secp256k1_public_key.slice(2),
          chain_code: masterKey.secp256k1_chain_code,
        },
        doc().public_keys[2]!,
      ],
    });
    expect(
      checkKeyChange(view(tr), {
        ...replace,
        masterKey: { ...masterKey, secp256k1_public_key: `02${masterKey.secp256k1_public_key.slice(2)}` },
      }),
    ).toHaveLength(32);
  });

  it("refuses when the coordinator's digest is another document's (it shows one and asks to sign another)", () => {
    const other = doc({ new_parties: ['p1', 'p2', 'p3', 'attacker'] });
    const e = thrown(() => checkKeyChange(view(doc(), bytesToHex(keyChangeDigest(other))), replace));
    expect(e.code).toBe('KEY_CHANGE_DIGEST_MISMATCH');
    expect(thrown(() => checkKeyChange(view(doc(), ''), replace)).code).toBe('KEY_CHANGE_DIGEST_MISMATCH');
  });

  it('refuses a consistent document that is not the change asked for', () => {
    const cases: [string, KeyChangeDocument, RegExp][] = [
      ['an extra party', doc({ new_parties: ['p1', 'p2', 'p3', 'p5', 'attacker'] }), /new_parties/],
      ['a party twice', doc({ new_parties: ['p1', 'p1', 'p3', 'p5'] }), /new_parties/],
      ['a lower threshold', doc({ new_threshold: 2 }), /new_threshold/],
      ['another reason', doc({ reason: 'reshare' }), /reason/],
      ['another change id', doc({ change_id: randomUUID() }), /change_id/],
      [
        'another base threshold',
        doc({ base: { epoch: 2, parties: ['p1', 'p2', 'm3', 'm4'], threshold: 2 } }),
        /base\.threshold/,
      ],
      [
        'a base party not of the key',
        doc({ base: { epoch: 2, parties: ['p9', 'p2', 'm3', 'm4'], threshold: 3 } }),
        /base\.parties/,
      ],
      ['a base party missing', doc({ base: { epoch: 2, parties: ['p1', 'p2', 'm3'], threshold: 3 } }), /base\.parties/],
      ['expired', doc({ expires_at: new Date(Date.now() - 1000).toISOString() }), /expires_at.*passed/],
      ['expiring in 48 h', doc({ expires_at: new Date(Date.now() + 48 * 3600_000).toISOString() }), /expires_at.*24 h/],
      ['no expiry', doc({ expires_at: 'tomorrow' }), /expires_at.*not a time/],
      [
        'another ECDSA key',
        doc({
          public_keys: doc().public_keys.map((k) =>
            k.algorithm === 'SECP256K1_ECDSA' ? { ...k, public_key: `02${hex(32)}` } : k,
          ),
        }),
        /SECP256K1_ECDSA public key/,
      ],
      [
        'another Ed25519 chain code',
        doc({
          public_keys: doc().public_keys.map((k) => (k.algorithm === 'ED25519' ? { ...k, chain_code: hex(32) } : k)),
        }),
        /ED25519 chain code/,
      ],
      [
        'no Ed25519 key',
        doc({ public_keys: doc().public_keys.filter((k) => k.algorithm !== 'ED25519') }),
        /no ED25519/,
      ],
    ];
    for (const [what, d, field] of cases) {
      const v = view(d);
      if (what === 'another change id') (v as { change_id: string }).change_id = doc().change_id;
      const e = thrown(() => checkKeyChange(v, replace));
      expect(e.code, what).toBe('KEY_CHANGE_MISMATCH');
      expect(e.message, what).toMatch(field);
    }
  });
});

describe('keys: the new set and its approver devices are the ones asked for', () => {
  const [s1, s2, s3] = [signer('s1'), signer('s2'), signer('s3')];
  const [d1, d2, d3] = [device('d1'), device('d2'), device('d3')];
  const signers = [s1!, s2!, s3!];
  const devices = [d1!, d2!, d3!];
  const masterKey: ExpectedChange['masterKey'] = {
    threshold: 3,
    parties: [
      { kind: 'server', id: s1!.signer_id },
      { kind: 'server', id: s2!.signer_id },
      { kind: 'device', id: d1!.device_id },
      { kind: 'device', id: d2!.device_id },
    ],
    secp256k1_public_key: `03${hex(32)}`,
    secp256k1_chain_code: hex(32),
    ed25519_public_key: hex(32),
    ed25519_chain_code: hex(32),
  };
  // replace the lost phone d2 by d3
  const input = {
    reason: 'replace-signer' as const,
    old: { kind: 'device' as const, id: d2!.device_id },
    new: { kind: 'device' as const, id: d3!.device_id },
  };
  const expected: ExpectedChange = { masterKey, input, signers, devices };
  const doc = (over: Partial<KeyChangeDocument> = {}): KeyChangeDocument => ({
    kind: 'custodian.key-change',
    change_id: randomUUID(),
    key_id: hex(16),
    public_keys: [
      {
        algorithm: 'SECP256K1_ECDSA',
        public_key: masterKey.secp256k1_public_key,
        chain_code: masterKey.secp256k1_chain_code,
      },
      { algorithm: 'ED25519', public_key: masterKey.ed25519_public_key, chain_code: masterKey.ed25519_chain_code },
    ],
    new_parties: [s1!.peer_id, s2!.peer_id, d1!.mpc_peer_id!, d3!.mpc_peer_id!],
    new_threshold: 3,
    approver_devices: [d1!, d3!].map((d) => ({ device_id: d.device_id, public_key: d.public_key })),
    base: { epoch: 0, parties: [s1!.peer_id, s2!.peer_id, d1!.mpc_peer_id!, d2!.mpc_peer_id!], threshold: 3 },
    expires_at: new Date(Date.now() + 24 * 3600_000).toISOString(),
    reason: 'replace-signer',
    created_at: '2026-11-26T08:00:00.000Z',
    ...over,
  });
  const view = (d: KeyChangeDocument): KeyChange => ({
    change_id: d.change_id,
    master_key_id: randomUUID(),
    reason: d.reason,
    status: 'AWAITING_SIGNATURE',
    document: d,
    digest: bytesToHex(keyChangeDigest(d)),
    ceremony_id: null,
    error: null,
    created_by: null,
    created_at: d.created_at,
    updated_at: d.created_at,
  });

  it('the honest change passes (the order of the parties is the coordinator’s)', () => {
    expect(checkKeyChange(view(doc()), expected)).toHaveLength(32);
    const d = doc();
    expect(checkKeyChange(view({ ...d, new_parties: [...d.new_parties].reverse() }), expected)).toHaveLength(32);
  });

  it('a base that is not the key as listed (a party swapped, the lost phone already gone) is refused', () => {
    for (const parties of [
      [s1!.peer_id, s3!.peer_id, d1!.mpc_peer_id!, d2!.mpc_peer_id!],
      [s1!.peer_id, s2!.peer_id, d1!.mpc_peer_id!, d3!.mpc_peer_id!],
    ]) {
      const e = thrown(() => checkKeyChange(view(doc({ base: { epoch: 0, parties, threshold: 3 } })), expected));
      expect(e.code).toBe('KEY_CHANGE_MISMATCH');
      expect(e.message).toMatch(/base\.parties/);
    }
    // the order is the signers' own
    const d = doc();
    const reordered = { ...d.base, parties: [...d.base.parties].reverse() };
    expect(checkKeyChange(view({ ...d, base: reordered }), expected)).toHaveLength(32);
  });

  it('a party swapped for another of the same count is refused, naming the missing one', () => {
    const e = thrown(() =>
      checkKeyChange(
        view(doc({ new_parties: [s1!.peer_id, s3!.peer_id, d1!.mpc_peer_id!, d3!.mpc_peer_id!] })),
        expected,
      ),
    );
    expect(e.code).toBe('KEY_CHANGE_MISMATCH');
    expect(e.message).toContain(`server:${s2!.signer_id}`);
    // the lost phone kept instead of the new one
    const kept = thrown(() =>
      checkKeyChange(
        view(doc({ new_parties: [s1!.peer_id, s2!.peer_id, d1!.mpc_peer_id!, d2!.mpc_peer_id!] })),
        expected,
      ),
    );
    expect(kept.message).toContain(`device:${d3!.device_id}`);
  });

  it('approver devices: the lost phone kept, an extra one, or another key for a device are refused', () => {
    const key = (d: Device, public_key = d.public_key) => ({ device_id: d.device_id, public_key });
    for (const approver_devices of [
      [key(d1!), key(d3!), key(d2!)],
      [key(d1!), key(d2!)],
      [key(d1!), key(d3!, `02${hex(32)}`)],
      [key(d1!)],
    ]) {
      const e = thrown(() => checkKeyChange(view(doc({ approver_devices })), expected));
      expect(e.code).toBe('KEY_CHANGE_MISMATCH');
      expect(e.message).toMatch(/approver_devices/);
    }
  });
});

describe('keys: drill outcome', () => {
  const sig = (verified: boolean) => ({ algorithm: 'ED25519', public_key: '', digest: '', signature: '', verified });
  const party = (backup_current: boolean) => ({
    kind: 'server' as const,
    id: 's',
    epoch: 1,
    backup_epoch: 1,
    backup_at: null,
    backup_current,
  });
  it('passes only when every signature verified and every backup is current', () => {
    expect(drillPassed({ signatures: [sig(true), sig(true)], signers: [party(true)] })).toBe(true);
    expect(drillPassed({ signatures: [sig(true), sig(false)], signers: [party(true)] })).toBe(false);
    expect(drillPassed({ signatures: [sig(true)], signers: [party(true), party(false)] })).toBe(false);
    expect(drillPassed({ signatures: [], signers: [] })).toBe(false);
    expect(drillPassed(undefined)).toBe(false);
  });
});

describe('keys: the operator guide', () => {
  it("every `custodian admin keys …` line of the guide's shell blocks names a command and its options", async () => {
    const guide = await readFile(new URL('../../../docs/operator-guide.md', import.meta.url), 'utf8');
    const lines = [...guide.matchAll(/```sh\n([\s\S]*?)```/g)]
      .flatMap((m) => (m[1] ?? '').split('\n'))
      .map((l) => l.trim())
      .filter((l) => l.startsWith('custodian admin keys '));
    expect(lines.length).toBeGreaterThanOrEqual(4);
    const program = new Command('custodian');
    const admin = registerAdminCommands(program, { out: () => undefined, err: () => undefined, env: {} });
    for (const line of lines) {
      const words = line.split(/\s+/).slice(2);
      let cmd = admin;
      for (const w of words) {
        const sub = cmd.commands.find((c) => c.name() === w);
        if (sub === undefined) break;
        cmd = sub;
      }
      expect(['admin', 'keys'], line).not.toContain(cmd.name());
      for (const flag of words.filter((w) => w.startsWith('--')))
        expect(
          cmd.options.some((o) => o.long === flag),
          `${line}: ${flag}`,
        ).toBe(true);
      const required = cmd.options.filter((o) => o.mandatory).map((o) => o.long);
      for (const r of required) expect(words, `${line}: ${r}`).toContain(r);
    }
  });
});
