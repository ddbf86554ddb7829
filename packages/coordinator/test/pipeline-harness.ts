/**
 * Harness of the coordinator's pipeline tests with real signer processes (transfers-e2e,
 * transfers-tron, attack-fee-cap; the signers themselves come from enforcing-signers.ts): a
 * JSON-RPC client of the chain node, a coordinator on PGlite persisted to a folder, its REST API as
 * the Admin and as a client (init, login with the mailed code, API key, device enrolment, policies
 * signed by the Admin device, transfer polling) and device approvals of a transfer's intent.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { bytesToHex } from '@custodian/crypto';
import { type SignedPolicy, signApproval, signPolicy, type TransferIntent } from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { expect } from 'vitest';
import { type Coordinator, type CoordinatorOptions, createCoordinator } from '../src/coordinator.js';
import { openPglite } from '../src/db/db.js';
import { readMailbox } from '../src/mailer.js';
import { enrollmentBody, phoneKeys } from './device-fixtures.js';
import type { Json } from './helpers.js';

/** A P-256 device key's compressed public key, hex (as devices enrol and signers pin it). */
export const hexPub = (sk: Uint8Array): string => bytesToHex(p256.getPublicKey(sk, true));

/** One JSON-RPC 2.0 call to the node at `url` (anvil); its `result`, or throws with its `error`. */
export async function jsonRpc(url: string, method: string, params: unknown[] = []): Promise<Json> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const b = (await r.json()) as Json;
  if (b.error) throw new Error(`${method}: ${JSON.stringify(b.error)}`);
  return b.result;
}

/** The coordinator's `chains` for anvil (ethereum-local) and litecoind regtest, polled every 300 ms. */
export function localChains(anvilUrl: string, litecoindUrl: string): NonNullable<CoordinatorOptions['chains']> {
  return {
    'ethereum-local': { rpcUrl: anvilUrl, pollIntervalMs: 300 },
    'litecoin-regtest': { rpcUrl: litecoindUrl, rpcUsername: 'test', rpcPassword: 'regtest-only', pollIntervalMs: 300 },
  };
}

/**
 * A coordinator (not started) in development mode on PGlite in `dataDir/pgdata`, its mailbox in
 * `dataDir/mailbox` and its bootstrap token in `dataDir/bootstrap-token`, on a free port, quiet, with test-speed scrypt and no webhook worker; `chains`
 * and `transfers` as given.
 */
export async function pipelineCoordinator(
  dataDir: string,
  o: Required<Pick<CoordinatorOptions, 'chains' | 'transfers'>> & Partial<Pick<CoordinatorOptions, 'health'>>,
): Promise<Coordinator> {
  return createCoordinator({
    db: await openPglite(join(dataDir, 'pgdata')),
    mode: 'development',
    mailboxDir: join(dataDir, 'mailbox'),
    bootstrapTokenFile: join(dataDir, 'bootstrap-token'),
    listen: { port: 0 },
    logger: false,
    admin: { scrypt: { N: 1 << 10, r: 8, p: 1 } },
    webhooks: { keyEncryptionKey: new Uint8Array(32).fill(7), runWorker: false },
    ...o,
  });
}

/**
 * The REST API of the coordinator at `url` (set it after each start: a restart changes the port),
 * with the Admin session `token`, the client `apiKey` and the `profileId` that {@link signIn} sets.
 * Its methods are bound (they can be destructured).
 */
export class CoordinatorApi {
  url = '';
  token = '';
  apiKey = '';
  profileId = '';

  /** A JSON request; `key`: the API key header, `token`: the Admin session, `idem`: a fresh idempotency key. */
  readonly req = async (
    method: string,
    path: string,
    o: { body?: unknown; key?: string; token?: string; idem?: boolean } = {},
  ): Promise<{ status: number; body: Json }> => {
    const headers: Record<string, string> = {};
    if (o.key) headers['x-api-key'] = o.key;
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    if (o.idem) headers['idempotency-key'] = crypto.randomUUID();
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(this.url + path, {
      method,
      headers,
      ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as Json };
  };

  /**
   * Initialise the first Admin and the `main` profile (with the bootstrap token beside the
   * mailbox folder, `<dataDir>/bootstrap-token`), log in with the code mailed to `mailboxDir`, step
   * the session up (password), and create an API key named `apiKeyName`.
   */
  readonly signIn = async (mailboxDir: string, apiKeyName: string): Promise<void> => {
    const { req } = this;
    const bootstrapToken = (await readFile(join(dirname(mailboxDir), 'bootstrap-token'), 'utf8')).trim();
    const init = await req('POST', '/admin/v1/init', {
      body: {
        email: 'a@example.com',
        name: 'Admin',
        password: 'correct horse battery staple',
        profile_name: 'main',
        bootstrap_token: bootstrapToken,
      },
    });
    this.profileId = init.body.profile.profile_id;
    const l = await req('POST', '/admin/v1/login', {
      body: { email: 'a@example.com', password: 'correct horse battery staple' },
    });
    const code = /code is (\d{6})/.exec((await readMailbox(mailboxDir)).at(-1)?.text ?? '')?.[1];
    this.token = (
      await req('POST', '/admin/v1/login/verify', { body: { challenge_id: l.body.challenge_id, code } })
    ).body.token;
    // API key creation needs a step-up of the session (#26 item 5)
    await req('POST', '/admin/v1/session/step-up', {
      token: this.token,
      body: { password: 'correct horse battery staple' },
    });
    this.apiKey = (
      await req('POST', '/admin/v1/api-keys', {
        token: this.token,
        body: { profile_id: this.profileId, name: apiKeyName },
      })
    ).body.api_key;
  };

  /** Enrol a device with the P-256 key `sk` and approve it as the Admin; its device id. */
  readonly enroll = async (sk: Uint8Array, name: string): Promise<string> => {
    const e = await this.req('POST', '/devices/v1/enrollments', {
      body: enrollmentBody(await phoneKeys(sk), name, { platform: 'ios', os_version: '17.2' }),
    });
    const users = await this.req('GET', '/admin/v1/users?page_size=200', { token: this.token });
    const admin = users.body.data.find((u: Json) => u.email === 'a@example.com');
    const a = await this.req('POST', `/admin/v1/devices/${e.body.device_id}/approve`, {
      token: this.token,
      body: { fingerprint: e.body.fingerprint, user_id: admin.user_id },
    });
    expect(a.status).toBe(200);
    return e.body.device_id;
  };

  /** Create a policy of the profile (`body` as POSTed) and sign its version 1 with the Admin device. */
  readonly signedPolicy = async (body: Json, admin: { deviceId: string; secretKey: Uint8Array }) => {
    const p = await this.req('POST', `/admin/v1/profiles/${this.profileId}/policies`, { token: this.token, body });
    expect(p.status, JSON.stringify(p.body)).toBe(201);
    const signed: SignedPolicy = signPolicy(p.body.versions[0].document, admin.deviceId, admin.secretKey);
    const s = await this.req(
      'POST',
      `/admin/v1/profiles/${this.profileId}/policies/${p.body.policy_id}/versions/1/signature`,
      { token: this.token, body: { device_id: admin.deviceId, signature: signed.signature } },
    );
    expect(s.status).toBe(200);
    return signed;
  };

  /** The id of the first asset of the profile's directory that `pred` picks. */
  readonly assetId = async (pred: (a: Json) => boolean): Promise<string> => {
    const assets = await this.req('GET', `/api/v1/profiles/${this.profileId}/assets?page_size=200`, {
      key: this.apiKey,
    });
    return assets.body.data.find(pred).asset_id;
  };

  /** Create a wallet on the blockchain of directory key `blockchainKey`; the response (`body.addresses[0]`: its address). */
  readonly createWallet = async (blockchainKey: string): Promise<{ status: number; body: Json }> => {
    const chains = await this.req('GET', `/api/v1/profiles/${this.profileId}/blockchains?page_size=200`, {
      key: this.apiKey,
    });
    const chain = chains.body.data.find((b: Json) => b.key === blockchainKey);
    return this.req('POST', `/api/v1/profiles/${this.profileId}/wallets`, {
      key: this.apiKey,
      idem: true,
      body: { blockchain_ids: [chain.blockchain_id] },
    });
  };

  /** Poll a wallet's balance of an asset (every 200 ms, up to `ms`) until it is `amount` (decimal string). */
  readonly waitBalance = async (walletId: string, assetId: string, amount: string, ms: number, what = 'balance') => {
    const end = Date.now() + ms;
    for (;;) {
      const b = await this.req('GET', `/api/v1/profiles/${this.profileId}/wallets/${walletId}/balances/${assetId}`, {
        key: this.apiKey,
      });
      if (b.body.amount === amount) return;
      if (Date.now() > end) throw new Error(`${what} not updated: ${JSON.stringify(b.body)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  /** The transfer as the API shows it. */
  readonly getTransfer = async (transferId: string): Promise<Json> =>
    (await this.req('GET', `/api/v1/profiles/${this.profileId}/transfers/${transferId}`, { key: this.apiKey })).body;

  /** Poll the transfer (every 200 ms, up to `ms`) until `pred` holds; the transfer. */
  readonly waitStatus = async (transferId: string, pred: (t: Json) => boolean, ms = 240_000): Promise<Json> => {
    const end = Date.now() + ms;
    for (;;) {
      const t = await this.getTransfer(transferId);
      if (pred(t)) return t;
      if (Date.now() > end) throw new Error(`timeout; transfer is ${JSON.stringify(t)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
}

/** The intent the coordinator stored for a transfer. */
export async function intentOf(coord: Coordinator, transferId: string): Promise<TransferIntent> {
  return (
    await coord.db.query<{ intent: TransferIntent }>('SELECT intent FROM transfers WHERE transfer_id = $1', [
      transferId,
    ])
  )[0]!.intent;
}

/** Approve a transfer's stored intent as the device `deviceId` (key `sk`), as its phone does. */
export async function approveAs(coord: Coordinator, transferId: string, sk: Uint8Array, deviceId: string) {
  return coord.transfers.service.submitApproval(
    signApproval(await intentOf(coord, transferId), 'APPROVE', deviceId, sk, new Date().toISOString()),
  );
}
