/**
 * The typed client of the coordinator's admin API (`/admin/v1`, docs/api/openapi.json): one method
 * per route `custodian admin` uses. Transport, session token, timeouts and problem+json errors are
 * in {@link AdminHttp} (http.ts); every method throws {@link AdminCliError} on a refusal, with the
 * problem's `status`, `code` and `detail`. Routes marked "step-up" need a recent
 * `POST /admin/v1/session/step-up` of the session (403 STEP_UP_REQUIRED otherwise).
 *
 * Lives in packages/cli, not @custodian/sdk: the SDK is the integrator's library for the custody
 * REST API (API keys, webhooks); the admin API is the operator's, driven by this CLI only.
 *
 * Over 400 lines on purpose: it is the one client, one short method per route (86 routes);
 * tests/admin-client.test.ts checks each route against docs/api/openapi.json.
 */

import type {
  AddressGroup,
  AddressGroupInput,
  AddressUpdateInput,
  AddSignerInput,
  ApiKey,
  Asset,
  AuditEntry,
  Balance,
  Blockchain,
  Ceremony,
  ConsolidationInput,
  CreateApiKeyInput,
  CreatedApiKey,
  CreateMasterKeyInput,
  CreateUserInput,
  CreateWebhookInput,
  Device,
  DeviceStatus,
  FeePriority,
  InitInput,
  InitResult,
  KeyCeremony,
  KeyChange,
  KeyChangeInput,
  KeyChangeSignatureInput,
  LabelledAddress,
  LoginChallenge,
  LoginSession,
  MasterKey,
  Me,
  Notification,
  NotificationQuery,
  Page,
  PageQuery,
  Policy,
  PolicyInput,
  PolicySignatureInput,
  Profile,
  ServerSigner,
  ServerSignerStatus,
  SigningCeremony,
  SigningKey,
  StepUpInput,
  StepUpResult,
  TotpEnrollment,
  Transfer,
  TransferQuery,
  UpdateUserInput,
  UpdateWebhookInput,
  User,
  Wallet,
  WalletArchive,
  WalletGroup,
  WalletGroupInput,
  WalletSummary,
  Webhook,
} from '@custodian/coordinator/admin-api-types';
import { AdminHttp, type AdminHttpOptions } from './http.js';

const page = (q: PageQuery = {}) => ({ page: q.page, page_size: q.page_size });
const notifications = (q: NotificationQuery = {}) => ({ ...page(q), status: q.status });
/** Every item of a paginated list: pages of 200 until `total` is reached (or a page comes back short). */
async function allPages<T>(get: (q: PageQuery) => Promise<Page<T>>): Promise<T[]> {
  const out: T[] = [];
  for (let n = 1; ; n++) {
    const p = await get({ page: n, page_size: 200 });
    out.push(...p.data);
    if (p.data.length < 200 || out.length >= p.total) return out;
  }
}

/** A blockchain of the directory as `listProfileDirectory` returns it. */
export type DirectoryBlockchain = Blockchain & {
  /** Enabled for the profile (its own setting, else the directory default). */
  enabled: boolean;
  /** A development network (off by default in production mode). */
  development: boolean;
};

/** The admin API, typed. */
export class AdminClient {
  readonly http: AdminHttp;

  constructor(o: AdminHttpOptions) {
    this.http = new AdminHttp(o);
  }

  /** The coordinator base URL (no trailing slash). */
  get baseUrl(): string {
    return this.http.baseUrl;
  }

  // ---- instance, login, session ----

  /** Initialise a new instance (no session): the first Admin and profile. 409 ALREADY_INITIALISED. */
  init(body: InitInput): Promise<InitResult> {
    return this.http.request('POST', '/admin/v1/init', { body, auth: false });
  }
  /** First login step (no session): password; answers which second factor to send. */
  login(body: { email: string; password: string }): Promise<LoginChallenge> {
    return this.http.request('POST', '/admin/v1/login', { body, auth: false });
  }
  /** Second login step (no session): the email or TOTP code; answers the session token. */
  verifyLogin(body: { challenge_id: string; code: string }): Promise<LoginSession> {
    return this.http.request('POST', '/admin/v1/login/verify', { body, auth: false });
  }
  /** Revoke the session. */
  logout(): Promise<void> {
    return this.http.request('POST', '/admin/v1/logout');
  }
  me(): Promise<Me> {
    return this.http.request('GET', '/admin/v1/me');
  }
  /** Re-authenticate the session for sensitive actions for a few minutes. */
  stepUp(body: StepUpInput): Promise<StepUpResult> {
    return this.http.request('POST', '/admin/v1/session/step-up', { body });
  }
  /** Change one's own password (other sessions are revoked); 422 VALIDATION_FAILED for a weak one. */
  changePassword(body: { current_password: string; new_password: string }): Promise<void> {
    return this.http.request('POST', '/admin/v1/me/password', { body });
  }
  /** Start TOTP enrollment (step-up). */
  enrollTotp(): Promise<TotpEnrollment> {
    return this.http.request('POST', '/admin/v1/me/totp');
  }
  confirmTotp(code: string): Promise<User> {
    return this.http.request('POST', '/admin/v1/me/totp/confirm', { body: { code } });
  }
  disableTotp(code: string): Promise<User> {
    return this.http.request('POST', '/admin/v1/me/totp/disable', { body: { code } });
  }

  // ---- users ----

  listUsers(q?: PageQuery): Promise<Page<User>> {
    return this.http.request('GET', '/admin/v1/users', { query: page(q) });
  }
  /** Create a user (step-up). */
  createUser(body: CreateUserInput): Promise<User> {
    return this.http.request('POST', '/admin/v1/users', { body });
  }
  getUser(userId: string): Promise<User> {
    return this.http.request('GET', '/admin/v1/users/{user_id}', { path: { user_id: userId } });
  }
  /** Change role, name, blocked state or password (step-up). */
  updateUser(userId: string, body: UpdateUserInput): Promise<User> {
    return this.http.request('PATCH', '/admin/v1/users/{user_id}', { path: { user_id: userId }, body });
  }
  deleteUser(userId: string): Promise<void> {
    return this.http.request('DELETE', '/admin/v1/users/{user_id}', { path: { user_id: userId } });
  }

  // ---- profiles and their directory ----

  listProfiles(): Promise<Profile[]> {
    return this.http.request('GET', '/admin/v1/profiles');
  }
  createProfile(name: string): Promise<Profile> {
    return this.http.request('POST', '/admin/v1/profiles', { body: { name } });
  }
  listProfileBlockchains(profileId: string, q?: PageQuery): Promise<Page<Blockchain>> {
    const path = { profile_id: profileId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/blockchains', { path, query: page(q) });
  }
  /** Every blockchain of the directory with whether it is enabled for the profile (`all=true`). */
  listProfileDirectory(profileId: string, q?: PageQuery): Promise<Page<DirectoryBlockchain>> {
    const path = { profile_id: profileId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/blockchains', {
      path,
      query: { ...page(q), all: 'true' },
    });
  }
  setProfileBlockchain(profileId: string, blockchainId: string, enabled: boolean): Promise<void> {
    const path = { profile_id: profileId, blockchain_id: blockchainId };
    return this.http.request('PUT', '/admin/v1/profiles/{profile_id}/blockchains/{blockchain_id}', {
      path,
      body: { enabled },
    });
  }
  listProfileAssets(profileId: string, q?: PageQuery): Promise<Page<Asset>> {
    const path = { profile_id: profileId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/assets', { path, query: page(q) });
  }
  setProfileAsset(profileId: string, assetId: string, enabled: boolean): Promise<void> {
    const path = { profile_id: profileId, asset_id: assetId };
    return this.http.request('PUT', '/admin/v1/profiles/{profile_id}/assets/{asset_id}', { path, body: { enabled } });
  }

  // ---- wallets ----

  listWallets(profileId: string, q?: PageQuery): Promise<Page<WalletSummary>> {
    const path = { profile_id: profileId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/wallets', { path, query: page(q) });
  }
  /** Create a wallet; its addresses are derived at once. */
  createWallet(profileId: string, body: { blockchain_ids: string[]; name?: string }): Promise<Wallet> {
    return this.http.request('POST', '/admin/v1/profiles/{profile_id}/wallets', {
      path: { profile_id: profileId },
      body,
    });
  }
  getWallet(profileId: string, walletId: string): Promise<Wallet> {
    const path = { profile_id: profileId, wallet_id: walletId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/wallets/{wallet_id}', { path });
  }
  renameWallet(profileId: string, walletId: string, name: string | null): Promise<WalletSummary> {
    const path = { profile_id: profileId, wallet_id: walletId };
    return this.http.request('PATCH', '/admin/v1/profiles/{profile_id}/wallets/{wallet_id}', { path, body: { name } });
  }
  /** Archive (step-up) or unarchive a wallet: an archived one takes no new transfers or addresses. */
  setWalletArchived(profileId: string, walletId: string, archived: boolean): Promise<WalletArchive> {
    const path = { profile_id: profileId, wallet_id: walletId };
    const route = archived
      ? '/admin/v1/profiles/{profile_id}/wallets/{wallet_id}/archive'
      : '/admin/v1/profiles/{profile_id}/wallets/{wallet_id}/unarchive';
    return this.http.request('POST', route, { path });
  }
  /** Delete an empty wallet (step-up; 409 WALLET_NOT_EMPTY / WALLET_TRANSFERS_PENDING otherwise). */
  deleteWallet(profileId: string, walletId: string): Promise<void> {
    const path = { profile_id: profileId, wallet_id: walletId };
    return this.http.request('DELETE', '/admin/v1/profiles/{profile_id}/wallets/{wallet_id}', { path });
  }
  /** Every address of a wallet, archived ones included, with label and archived_at. */
  listWalletAddresses(profileId: string, walletId: string, q?: PageQuery): Promise<Page<LabelledAddress>> {
    const path = { profile_id: profileId, wallet_id: walletId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/wallets/{wallet_id}/addresses', {
      path,
      query: page(q),
    });
  }
  /** Label an address (null clears) and/or archive it (step-up) or unarchive it. */
  updateAddress(
    profileId: string,
    walletId: string,
    addressId: string,
    body: AddressUpdateInput,
  ): Promise<LabelledAddress> {
    const path = { profile_id: profileId, wallet_id: walletId, address_id: addressId };
    return this.http.request('PATCH', '/admin/v1/profiles/{profile_id}/wallets/{wallet_id}/addresses/{address_id}', {
      path,
      body,
    });
  }
  listBalances(profileId: string, walletId: string, q?: PageQuery): Promise<Page<Balance>> {
    const path = { profile_id: profileId, wallet_id: walletId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/wallets/{wallet_id}/balances', {
      path,
      query: page(q),
    });
  }

  // ---- API keys ----

  listApiKeys(q: PageQuery & { profile_id?: string } = {}): Promise<Page<ApiKey>> {
    return this.http.request('GET', '/admin/v1/api-keys', { query: { profile_id: q.profile_id, ...page(q) } });
  }
  /** Create an API key (step-up); the key is in this answer only. */
  createApiKey(body: CreateApiKeyInput): Promise<CreatedApiKey> {
    return this.http.request('POST', '/admin/v1/api-keys', { body });
  }
  revokeApiKey(apiKeyId: string): Promise<void> {
    return this.http.request('DELETE', '/admin/v1/api-keys/{api_key_id}', { path: { api_key_id: apiKeyId } });
  }

  // ---- server signers, devices ----

  /** One page of server signers (with `reachable`, `last_seen_at`). */
  listSigners(q?: PageQuery): Promise<Page<ServerSignerStatus>> {
    return this.http.request('GET', '/admin/v1/signers', { query: page(q) });
  }
  /** Every server signer (all pages). */
  allSigners(): Promise<ServerSignerStatus[]> {
    return allPages((q) => this.listSigners(q));
  }
  /** Register a server signer; 422 when the fingerprint is not the peer id's key. */
  addSigner(body: AddSignerInput): Promise<ServerSigner> {
    return this.http.request('POST', '/admin/v1/signers', { body });
  }
  removeSigner(signerId: string): Promise<void> {
    return this.http.request('DELETE', '/admin/v1/signers/{signer_id}', { path: { signer_id: signerId } });
  }
  /** One page of devices, oldest first, optionally of one status. */
  listDevices(q: PageQuery & { status?: DeviceStatus | string } = {}): Promise<Page<Device>> {
    return this.http.request('GET', '/admin/v1/devices', { query: { ...page(q), status: q.status } });
  }
  /** Every device (all pages). */
  allDevices(): Promise<Device[]> {
    return allPages((q) => this.listDevices(q));
  }
  getDevice(deviceId: string): Promise<Device> {
    return this.http.request('GET', '/admin/v1/devices/{device_id}', { path: { device_id: deviceId } });
  }
  /** Approve a PENDING device after comparing its fingerprint; binds it to `user_id`. */
  approveDevice(deviceId: string, body: { fingerprint: string; user_id: string }): Promise<Device> {
    return this.http.request('POST', '/admin/v1/devices/{device_id}/approve', { path: { device_id: deviceId }, body });
  }
  rejectDevice(deviceId: string): Promise<Device> {
    return this.http.request('POST', '/admin/v1/devices/{device_id}/reject', { path: { device_id: deviceId } });
  }
  removeDevice(deviceId: string): Promise<Device> {
    return this.http.request('DELETE', '/admin/v1/devices/{device_id}', { path: { device_id: deviceId } });
  }

  // ---- master keys, ceremonies ----

  /** One page of master key records, oldest first. */
  listMasterKeys(q?: PageQuery): Promise<Page<MasterKey>> {
    return this.http.request('GET', '/admin/v1/master-keys', { query: page(q) });
  }
  /** Every master key record (all pages). */
  allMasterKeys(): Promise<MasterKey[]> {
    return allPages((q) => this.listMasterKeys(q));
  }
  /** Start the key generation ceremony among exactly `signers` (202: the ceremony record). */
  createMasterKey(body: CreateMasterKeyInput): Promise<Ceremony> {
    return this.http.request('POST', '/admin/v1/master-keys', { body });
  }
  /** One page of ceremonies, newest first. */
  listCeremonies(q?: PageQuery): Promise<Page<Ceremony>> {
    return this.http.request('GET', '/admin/v1/ceremonies', { query: page(q) });
  }
  getCeremony(ceremonyId: string): Promise<Ceremony> {
    return this.http.request('GET', '/admin/v1/ceremonies/{ceremony_id}', { path: { ceremony_id: ceremonyId } });
  }
  /** A SIGN ceremony by its 48-hex-digit id, with its blame. */
  getSigningCeremony(ceremonyId: string): Promise<SigningCeremony> {
    return this.http.request('GET', '/admin/v1/signing-ceremonies/{ceremony_id}', {
      path: { ceremony_id: ceremonyId },
    });
  }

  // ---- key lifecycle (issue #22; Admin only) ----

  /** Start a REFRESH of the master key among its parties (202: the ceremony). */
  refreshMasterKey(masterKeyId: string): Promise<KeyCeremony> {
    const path = { master_key_id: masterKeyId };
    return this.http.request('POST', '/admin/v1/master-keys/{master_key_id}/refresh', { path, body: {} });
  }
  /** Propose a key change (201): its document and digest, awaiting an Admin device's signature. */
  createKeyChange(masterKeyId: string, body: KeyChangeInput): Promise<KeyChange> {
    const path = { master_key_id: masterKeyId };
    return this.http.request('POST', '/admin/v1/master-keys/{master_key_id}/key-changes', { path, body });
  }
  /** One page of the key changes of a master key, newest first. */
  listKeyChanges(masterKeyId: string, q?: PageQuery): Promise<Page<KeyChange>> {
    const path = { master_key_id: masterKeyId };
    return this.http.request('GET', '/admin/v1/master-keys/{master_key_id}/key-changes', { path, query: page(q) });
  }
  getKeyChange(masterKeyId: string, changeId: string): Promise<KeyChange> {
    const path = { master_key_id: masterKeyId, change_id: changeId };
    return this.http.request('GET', '/admin/v1/master-keys/{master_key_id}/key-changes/{change_id}', { path });
  }
  /** Attach the Admin device's signature over the change's digest; starts the RESHARE ceremony (202). */
  signKeyChange(masterKeyId: string, changeId: string, body: KeyChangeSignatureInput): Promise<KeyCeremony> {
    const path = { master_key_id: masterKeyId, change_id: changeId };
    return this.http.request('POST', '/admin/v1/master-keys/{master_key_id}/key-changes/{change_id}/signature', {
      path,
      body,
    });
  }
  /** Start a recovery drill: test signatures by the live signers, verified, and each party's backup state (202). */
  drillMasterKey(masterKeyId: string): Promise<KeyCeremony> {
    const path = { master_key_id: masterKeyId };
    return this.http.request('POST', '/admin/v1/master-keys/{master_key_id}/drill', { path, body: {} });
  }

  // ---- profile webhooks (changes need a step-up) ----

  /** One page of the webhooks of a profile, oldest first. */
  listWebhooks(profileId: string, q?: PageQuery): Promise<Page<Webhook>> {
    const path = { profile_id: profileId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/webhooks', { path, query: page(q) });
  }
  createWebhook(profileId: string, body: CreateWebhookInput): Promise<Webhook> {
    const path = { profile_id: profileId };
    return this.http.request('POST', '/admin/v1/profiles/{profile_id}/webhooks', { path, body });
  }
  getWebhook(profileId: string, webhookId: string): Promise<Webhook> {
    const path = { profile_id: profileId, webhook_id: webhookId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/webhooks/{webhook_id}', { path });
  }
  updateWebhook(profileId: string, webhookId: string, body: UpdateWebhookInput): Promise<Webhook> {
    const path = { profile_id: profileId, webhook_id: webhookId };
    return this.http.request('PATCH', '/admin/v1/profiles/{profile_id}/webhooks/{webhook_id}', { path, body });
  }
  deleteWebhook(profileId: string, webhookId: string): Promise<void> {
    const path = { profile_id: profileId, webhook_id: webhookId };
    return this.http.request('DELETE', '/admin/v1/profiles/{profile_id}/webhooks/{webhook_id}', { path });
  }
  listNotifications(profileId: string, webhookId: string, q?: NotificationQuery): Promise<Page<Notification>> {
    const path = { profile_id: profileId, webhook_id: webhookId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/webhooks/{webhook_id}/notifications', {
      path,
      query: notifications(q),
    });
  }
  /** Redeliver a FAILED notification (409 CONFLICT otherwise). */
  redeliver(profileId: string, webhookId: string, notificationId: string): Promise<Notification> {
    const path = { profile_id: profileId, webhook_id: webhookId, notification_id: notificationId };
    return this.http.request(
      'POST',
      '/admin/v1/profiles/{profile_id}/webhooks/{webhook_id}/notifications/{notification_id}/redeliver',
      { path },
    );
  }

  // ---- instance-level webhooks ----

  /** One page of the instance-level webhooks, oldest first. */
  listInstanceWebhooks(q?: PageQuery): Promise<Page<Webhook>> {
    return this.http.request('GET', '/admin/v1/webhooks', { query: page(q) });
  }
  createInstanceWebhook(body: CreateWebhookInput): Promise<Webhook> {
    return this.http.request('POST', '/admin/v1/webhooks', { body });
  }
  getInstanceWebhook(webhookId: string): Promise<Webhook> {
    return this.http.request('GET', '/admin/v1/webhooks/{webhook_id}', { path: { webhook_id: webhookId } });
  }
  updateInstanceWebhook(webhookId: string, body: UpdateWebhookInput): Promise<Webhook> {
    return this.http.request('PATCH', '/admin/v1/webhooks/{webhook_id}', { path: { webhook_id: webhookId }, body });
  }
  deleteInstanceWebhook(webhookId: string): Promise<void> {
    return this.http.request('DELETE', '/admin/v1/webhooks/{webhook_id}', { path: { webhook_id: webhookId } });
  }
  listInstanceNotifications(webhookId: string, q?: NotificationQuery): Promise<Page<Notification>> {
    return this.http.request('GET', '/admin/v1/webhooks/{webhook_id}/notifications', {
      path: { webhook_id: webhookId },
      query: notifications(q),
    });
  }
  redeliverInstance(webhookId: string, notificationId: string): Promise<Notification> {
    const path = { webhook_id: webhookId, notification_id: notificationId };
    return this.http.request('POST', '/admin/v1/webhooks/{webhook_id}/notifications/{notification_id}/redeliver', {
      path,
    });
  }

  // ---- webhook signing keys ----

  listSigningKeys(): Promise<SigningKey[]> {
    return this.http.request('GET', '/admin/v1/webhook-signing-keys');
  }
  /** Rotate: the new key is published now and signs after `lead_seconds` (default: configured). */
  rotateSigningKey(body: { lead_seconds?: number }): Promise<SigningKey> {
    return this.http.request('POST', '/admin/v1/webhook-signing-keys/rotate', { body });
  }

  // ---- wallet groups, address groups ----

  listWalletGroups(profileId: string): Promise<WalletGroup[]> {
    const path = { profile_id: profileId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/wallet-groups', { path });
  }
  getWalletGroup(profileId: string, groupId: string): Promise<WalletGroup> {
    const path = { profile_id: profileId, wallet_group_id: groupId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/wallet-groups/{wallet_group_id}', { path });
  }
  createWalletGroup(profileId: string, body: WalletGroupInput & { name: string }): Promise<WalletGroup> {
    const path = { profile_id: profileId };
    return this.http.request('POST', '/admin/v1/profiles/{profile_id}/wallet-groups', { path, body });
  }
  updateWalletGroup(profileId: string, groupId: string, body: WalletGroupInput): Promise<WalletGroup> {
    const path = { profile_id: profileId, wallet_group_id: groupId };
    return this.http.request('PATCH', '/admin/v1/profiles/{profile_id}/wallet-groups/{wallet_group_id}', {
      path,
      body,
    });
  }
  deleteWalletGroup(profileId: string, groupId: string): Promise<void> {
    const path = { profile_id: profileId, wallet_group_id: groupId };
    return this.http.request('DELETE', '/admin/v1/profiles/{profile_id}/wallet-groups/{wallet_group_id}', { path });
  }
  /** Assign a user to a wallet group (the user's scope). */
  assignWalletGroupUser(profileId: string, groupId: string, userId: string): Promise<WalletGroup> {
    const path = { profile_id: profileId, wallet_group_id: groupId, user_id: userId };
    return this.http.request('PUT', '/admin/v1/profiles/{profile_id}/wallet-groups/{wallet_group_id}/users/{user_id}', {
      path,
    });
  }
  unassignWalletGroupUser(profileId: string, groupId: string, userId: string): Promise<WalletGroup> {
    const path = { profile_id: profileId, wallet_group_id: groupId, user_id: userId };
    return this.http.request(
      'DELETE',
      '/admin/v1/profiles/{profile_id}/wallet-groups/{wallet_group_id}/users/{user_id}',
      { path },
    );
  }
  listAddressGroups(profileId: string): Promise<AddressGroup[]> {
    const path = { profile_id: profileId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/address-groups', { path });
  }
  getAddressGroup(profileId: string, groupId: string): Promise<AddressGroup> {
    const path = { profile_id: profileId, address_group_id: groupId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/address-groups/{address_group_id}', { path });
  }
  createAddressGroup(profileId: string, body: AddressGroupInput & { name: string }): Promise<AddressGroup> {
    const path = { profile_id: profileId };
    return this.http.request('POST', '/admin/v1/profiles/{profile_id}/address-groups', { path, body });
  }
  updateAddressGroup(profileId: string, groupId: string, body: AddressGroupInput): Promise<AddressGroup> {
    const path = { profile_id: profileId, address_group_id: groupId };
    return this.http.request('PATCH', '/admin/v1/profiles/{profile_id}/address-groups/{address_group_id}', {
      path,
      body,
    });
  }
  deleteAddressGroup(profileId: string, groupId: string): Promise<void> {
    const path = { profile_id: profileId, address_group_id: groupId };
    return this.http.request('DELETE', '/admin/v1/profiles/{profile_id}/address-groups/{address_group_id}', { path });
  }

  // ---- audit ----

  /** The append-only audit log, newest first. */
  listAudit(q?: PageQuery): Promise<Page<AuditEntry>> {
    return this.http.request('GET', '/admin/v1/audit', { query: page(q) });
  }

  // ---- policies, transfers ----

  listPolicies(profileId: string, q?: PageQuery): Promise<Page<Policy>> {
    const path = { profile_id: profileId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/policies', { path, query: page(q) });
  }
  getPolicy(profileId: string, policyId: string): Promise<Policy> {
    const path = { profile_id: profileId, policy_id: policyId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/policies/{policy_id}', { path });
  }
  /** Create a policy; version 1 is in force once an Admin device signs it. */
  createPolicy(profileId: string, body: PolicyInput): Promise<Policy> {
    const path = { profile_id: profileId };
    return this.http.request('POST', '/admin/v1/profiles/{profile_id}/policies', { path, body });
  }
  /** A new version of a policy (in force once signed). */
  updatePolicy(profileId: string, policyId: string, body: PolicyInput): Promise<Policy> {
    const path = { profile_id: profileId, policy_id: policyId };
    return this.http.request('PUT', '/admin/v1/profiles/{profile_id}/policies/{policy_id}', { path, body });
  }
  /** Delete a policy (202: a tombstone version awaiting a signature). */
  deletePolicy(profileId: string, policyId: string): Promise<Policy> {
    const path = { profile_id: profileId, policy_id: policyId };
    return this.http.request('DELETE', '/admin/v1/profiles/{profile_id}/policies/{policy_id}', { path });
  }
  /** Attach an Admin device's signature to a version (it becomes ACTIVE). */
  signPolicyVersion(profileId: string, policyId: string, version: number, body: PolicySignatureInput): Promise<Policy> {
    const path = { profile_id: profileId, policy_id: policyId, version };
    return this.http.request(
      'POST',
      '/admin/v1/profiles/{profile_id}/policies/{policy_id}/versions/{version}/signature',
      { path, body },
    );
  }
  listTransfers(profileId: string, q: TransferQuery = {}): Promise<Page<Transfer>> {
    const path = { profile_id: profileId };
    const query = { wallet_id: q.wallet_id, status: q.status, ...page(q) };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/transfers', { path, query });
  }
  getTransfer(profileId: string, transferId: string): Promise<Transfer> {
    const path = { profile_id: profileId, transfer_id: transferId };
    return this.http.request('GET', '/admin/v1/profiles/{profile_id}/transfers/{transfer_id}', { path });
  }
  /** Cancel a pending transfer (409 TRANSFER_STATE_CONFLICT otherwise). */
  cancelTransfer(profileId: string, transferId: string): Promise<Transfer> {
    const path = { profile_id: profileId, transfer_id: transferId };
    return this.http.request('POST', '/admin/v1/profiles/{profile_id}/transfers/{transfer_id}/cancel', { path });
  }
  /**
   * Bump the fee of a stuck SENT transaction (new device approvals): `RBF` replaces it (same nonce /
   * outpoints), `CPFP` (Bitcoin family) creates a child transfer spending its change output.
   */
  feeBumpTransfer(
    profileId: string,
    transferId: string,
    priority: FeePriority | string,
    method?: 'RBF' | 'CPFP',
  ): Promise<Transfer> {
    const path = { profile_id: profileId, transfer_id: transferId };
    return this.http.request('POST', '/admin/v1/profiles/{profile_id}/transfers/{transfer_id}/fee-bump', {
      path,
      body: { priority, ...(method ? { method } : {}) },
    });
  }
  /** UTXO consolidation: a transfer of the wallet's smallest UTXOs to its own address (policy and approvals as any transfer). */
  consolidate(profileId: string, walletId: string, body: ConsolidationInput): Promise<Transfer> {
    const path = { profile_id: profileId, wallet_id: walletId };
    return this.http.request('POST', '/admin/v1/profiles/{profile_id}/wallets/{wallet_id}/consolidations', {
      path,
      body,
    });
  }
}
