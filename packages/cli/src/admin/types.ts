/**
 * Request and response shapes of the admin API routes `custodian admin` uses, written by hand to
 * match docs/api/openapi.json (schemas `Wallet`, `Address`, `Balance`, `Asset`, `Blockchain`,
 * `Transfer`, and the inline request bodies). Where the document gives an answer only as an
 * object, the fields are the ones the coordinator returns today; commands read no other field.
 * Times are ISO 8601 strings; amounts are decimal strings (`amount`) or integer strings in base
 * units (`*_base_units`).
 *
 * Over 400 lines on purpose: declarations only, the shapes of every route of client.ts in one
 * place (split by area they would be imported back together by the one client).
 */
import type { PolicyDocument } from '@custodian/wire';

/** A page of a list (`page` from 1; `page_size` at most 200). */
export interface Page<T> {
  data: T[];
  page: number;
  page_size: number;
  total: number;
}

/** Page selection; values are sent as given (the CLI passes its option strings). */
export interface PageQuery {
  page?: string | number;
  page_size?: string | number;
}

export type Role = 'ADMIN' | 'FINANCE_MANAGER' | 'VIEWER';

/** A dashboard user (never the password hash or TOTP secret). */
export interface User {
  user_id: string;
  email: string;
  name: string;
  role: Role;
  totp_enabled: boolean;
  blocked: boolean;
  created_at: string;
}

/** `GET /admin/v1/me`: the session's user and the end of its step-up window (null: none). */
export interface Me extends User {
  step_up_expires_at: string | null;
}

export interface Profile {
  profile_id: string;
  name: string;
  created_at: string;
}

/** `POST /admin/v1/init` body. */
export interface InitInput {
  email: string;
  name: string;
  password: string;
  profile_name?: string;
}

export interface InitResult {
  user: User;
  profile: Profile;
}

/** `POST /admin/v1/login`: the second factor to ask for. */
export interface LoginChallenge {
  challenge_id: string;
  method: 'email' | 'totp';
  expires_at: string;
}

/** `POST /admin/v1/login/verify`: the session token (`css_…`), shown once. */
export interface LoginSession {
  token: string;
  expires_at: string;
  user: User;
}

/** `POST /admin/v1/session/step-up` body: the TOTP `code` when enabled, else the `password`. */
export type StepUpInput = { code: string } | { password: string };

export interface StepUpResult {
  method: 'password' | 'totp';
  step_up_expires_at: string;
}

/** `POST /admin/v1/me/totp`: secret (base32) and `otpauth://` URI, pending confirmation. */
export interface TotpEnrollment {
  secret: string;
  otpauth_uri: string;
}

export interface CreateUserInput {
  email: string;
  name: string;
  role: Role;
  password: string;
}

export interface UpdateUserInput {
  role?: Role;
  name?: string;
  blocked?: boolean;
  password?: string;
}

/** OpenAPI schema `Blockchain`. */
export interface Blockchain {
  blockchain_id: string;
  key: string;
  name: string;
  family: 'ethereum' | 'bitcoin' | 'litecoin' | 'tron';
  network: string;
  chain_id: string | null;
  account_model: 'account' | 'utxo';
  testnet: boolean;
  address_types: string[];
  native_asset_id: string | null;
}

/** OpenAPI schema `Asset`. */
export interface Asset {
  asset_id: string;
  symbol: string;
  name: string;
  decimals: number;
  blockchain: string;
  blockchain_id: string;
  kind: 'native' | 'erc20' | 'trc20';
  contract_address: string | null;
}

/** OpenAPI schema `Address`. */
export interface Address {
  address_id: string;
  wallet_id: string;
  blockchain_id: string;
  address: string;
  address_type: 'eoa' | 'tron' | 'p2wpkh' | 'p2tr';
  address_index: number;
  derivation_path: string;
  public_key: string;
  created_at: string;
}

/** OpenAPI schema `Wallet`. */
export interface Wallet {
  wallet_id: string;
  profile_id: string;
  name: string | null;
  blockchain_ids: string[];
  created_at: string;
  addresses: Address[];
}

/** Item of `GET …/wallets` (ids and names; the addresses are in `GET …/wallets/{wallet_id}`). */
export type WalletSummary = Omit<Wallet, 'addresses'>;

/** OpenAPI schema `Balance`. */
export interface Balance {
  wallet_id: string;
  blockchain_id: string;
  asset_id: string;
  symbol: string;
  decimals: number;
  amount: string;
  amount_base_units: string;
  updated_at: string | null;
}

export interface ApiKey {
  api_key_id: string;
  profile_id: string;
  name: string;
  /** The first characters of the key, to recognise it. */
  key_prefix: string;
  /** Ranges the key is usable from; null: any address. */
  allowed_cidrs: string[] | null;
  created_by: string | null;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

/** `POST /admin/v1/api-keys`: the key (`cst_…`) is in this answer only. */
export interface CreatedApiKey extends ApiKey {
  api_key: string;
}

export interface CreateApiKeyInput {
  profile_id: string;
  name: string;
  allowed_cidrs?: string[];
}

export interface ServerSigner {
  signer_id: string;
  name: string;
  peer_id: string;
  /** libp2p multiaddr, e.g. `/ip4/10.0.0.5/tcp/7400`. */
  address: string;
  fingerprint: string;
  created_at: string;
}

export type AddSignerInput = Pick<ServerSigner, 'name' | 'peer_id' | 'address' | 'fingerprint'>;

export type DeviceStatus = 'PENDING' | 'APPROVED' | 'REJECTED' | 'REMOVED';

export interface Device {
  device_id: string;
  name: string;
  platform: string;
  os_version: string;
  public_key: string;
  fingerprint: string;
  mpc_peer_id: string | null;
  /** The dashboard user the device is bound to (set on approval). */
  user_id: string | null;
  status: DeviceStatus;
  created_at: string;
  decided_at: string | null;
  decided_by: string | null;
}

/** A public master key record (hex keys and chain codes). */
export interface MasterKey {
  master_key_id: string;
  ceremony_id: string | null;
  threshold: number;
  parties: unknown;
  secp256k1_public_key: string;
  secp256k1_chain_code: string;
  ed25519_public_key: string;
  ed25519_chain_code: string;
  created_at: string;
}

/** `POST /admin/v1/master-keys` body: exactly the parties of the ceremony. */
export interface CreateMasterKeyInput {
  threshold: number;
  signers: { kind: 'server' | 'device'; id: string }[];
}

export interface CeremonyProgress {
  phase: string;
  parties_ready: number;
  parties_total: number;
  message?: string;
}

export interface Ceremony {
  ceremony_id: string;
  kind: string;
  status: 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT';
  threshold: number;
  parties: unknown;
  progress: CeremonyProgress;
  started_by: string;
  started_at: string | null;
  deadline: string | null;
  finished_at: string | null;
  error: string | null;
  blamed: string[] | null;
  transcript_hash: string | null;
  master_key_id: string | null;
}

/** A webhook; `profile_id` null: instance-level (instance and security events). */
export interface Webhook {
  webhook_id: string;
  profile_id: string | null;
  url: string;
  event_types: string[];
  description: string | null;
  created_at: string;
  updated_at: string;
}

export interface CreateWebhookInput {
  url: string;
  event_types: string[];
  description?: string | null;
}

export type UpdateWebhookInput = Partial<CreateWebhookInput>;

export type NotificationStatus = 'PENDING' | 'DELIVERED' | 'FAILED';

/** One event's delivery series to one webhook. */
export interface Notification {
  notification_id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: NotificationStatus;
  attempt_count: number;
  next_attempt_at: string | null;
  last_response_code: number | null;
  last_error: string | null;
  delivered_at: string | null;
  redeliveries: number;
  created_at: string;
  updated_at: string;
  attempts: {
    attempt: number;
    scheduled_at: string;
    started_at: string;
    finished_at: string | null;
    response_code: number | null;
    error: string | null;
    duration_ms: number | null;
  }[];
}

export interface NotificationQuery extends PageQuery {
  status?: string;
}

/** A webhook signing key (public facts only). */
export interface SigningKey {
  kid: string;
  created_at: string;
  activates_at: string;
  retires_at: string | null;
  expires_at: string | null;
  state: 'PUBLISHED' | 'ACTIVE' | 'RETIRED' | 'EXPIRED';
}

export interface WalletGroup {
  wallet_group_id: string;
  profile_id: string;
  name: string;
  description: string | null;
  wallet_ids: string[];
  user_ids: string[];
  created_at: string;
  updated_at: string;
}

export interface AddressGroupEntry {
  blockchain_id: string;
  address: string;
  label: string | null;
}

export interface AddressGroup {
  address_group_id: string;
  profile_id: string;
  name: string;
  description: string | null;
  entries: AddressGroupEntry[];
  created_at: string;
  updated_at: string;
}

/** Create (`name` required) or update (all optional) body of a wallet group. */
export interface WalletGroupInput {
  name?: string;
  description?: string | null;
  wallet_ids?: string[];
}

/** Create (`name` required) or update (all optional) body of an address group. */
export interface AddressGroupInput {
  name?: string;
  description?: string | null;
  entries?: { blockchain_id: string; address: string; label?: string | null }[];
}

export interface AuditEntry {
  audit_id: string;
  at: string;
  actor_user_id: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  details: unknown;
}

/** Body of policy create and update (amounts in base units). */
export interface PolicyInput {
  name: string;
  scope?: { wallet_ids?: string[] | null; blockchain?: string | null; asset_id?: string | null };
  whitelist: string[];
  per_transaction_limit?: string | null;
  daily_limit?: string | null;
  approvals?: { quorum: number; above_amount: string };
}

export interface PolicyVersion {
  version: number;
  status: 'PENDING_SIGNATURE' | 'ACTIVE' | 'SUPERSEDED' | 'DELETED';
  /** The version's rules, signed as is by an Admin device (`signPolicy` of @custodian/wire). */
  document: PolicyDocument;
  /** Hex SHA-256 digest the Admin device signs. */
  digest: string;
  signed: unknown;
  created_at: string;
  signed_at: string | null;
}

export interface Policy {
  policy_id: string;
  profile_id: string;
  name: string;
  created_at: string;
  deleted_at: string | null;
  active_version: number | null;
  /** Newest first. */
  versions: PolicyVersion[];
}

/** `POST …/versions/{version}/signature` body: the device and its P-256 signature (r‖s, hex). */
export interface PolicySignatureInput {
  device_id: string;
  signature: string;
}

export type TransferStatus =
  | 'PENDING'
  | 'PENDING_APPROVAL'
  | 'PENDING_SIGNATURE'
  | 'READY_TO_SEND'
  | 'SENT'
  | 'REJECTED'
  | 'REJECTED_BY_POLICY'
  | 'NO_POLICY_FOUND'
  | 'EXPIRED'
  | 'FAILED';

/** OpenAPI schema `Transfer` (the fields the admin API always sends). */
export interface Transfer {
  transfer_id: string;
  profile_id: string;
  wallet_id: string;
  asset_id: string;
  blockchain_id: string;
  source_address: string;
  destination_address: string;
  amount: string;
  amount_base_units: string;
  /** Fee cap the approvers signed, in units of `fee_currency`. */
  max_fee: string;
  max_fee_base_units: string;
  fee_currency: string;
  external_id: string | null;
  status: TransferStatus;
  sub_status: string | null;
  policy_id: string | null;
  policy_version: number | null;
  approvals_required: number;
  approvals_received: number;
  approval_deadline: string | null;
  tx_hash: string | null;
  fee_bump: Record<string, unknown> | null;
  created_at: string;
  updated_at: string;
  sent_at: string | null;
  delivered_at: string | null;
}

export interface TransferQuery extends PageQuery {
  wallet_id?: string;
  status?: string;
}

export type FeePriority = 'SLOW' | 'STANDARD' | 'FAST';
