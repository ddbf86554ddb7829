/**
 * Request and response shapes of the admin API, as its clients (`custodian admin`, the dashboard)
 * read them; imported through the type-only subpath `@custodian/coordinator/admin-api-types`. The JSON views the
 * coordinator declares (users, the directory, wallets, addresses, balances, master keys,
 * ceremonies, webhooks, notifications, signing keys, groups, policies, transfers, the page
 * envelope) are the coordinator's own types from `@custodian/coordinator`, under the names the
 * commands use; the rest — request bodies, and answers the coordinator builds from its rows
 * without a named type (API keys, server signers, devices, audit entries, login steps) — are
 * written here by hand to match docs/api/openapi.json. Where the document gives an answer only as
 * an object, the fields are the ones the coordinator returns today; clients read no other field.
 * Times are ISO 8601 strings; amounts are decimal strings (`amount`) or integer strings in base
 * units (`*_base_units`).
 */

import type { KeyChangeDocument } from '@custodian/wire';
import type {
  BlameView,
  CeremonyProgress,
  CeremonyView,
  Role,
  SigningCeremonyView,
  UserView,
  WalletView,
} from '../index.js';

export type {
  AddressGroupEntry,
  AddressGroupView as AddressGroup,
  AddressView as Address,
  AdminTransferView as AdminTransfer,
  AdminWalletView as AdminWallet,
  AssetView as Asset,
  BalanceView as Balance,
  BlockchainView as Blockchain,
  CeremonyProgress,
  DepositView as Deposit,
  LabelledAddressView as LabelledAddress,
  MasterKeyView as MasterKey,
  NotificationView as Notification,
  Page,
  PolicyInput,
  PolicyVersionView as PolicyVersion,
  PolicyView as Policy,
  Role,
  SigningKeyView as SigningKey,
  SigningParty,
  TransferApprovalEntry as TransferApproval,
  TransferSigningAttempt as SigningAttempt,
  TransferStatus,
  TransferTimelineEntry as TimelineEntry,
  TransferView as Transfer,
  UserView as User,
  WalletArchiveView as WalletArchive,
  WalletGroupView as WalletGroup,
  WalletView as Wallet,
  WebhookView as Webhook,
} from '../index.js';

/**
 * A ceremony record. The coordinator's view types `progress` as `unknown` (the JSON of the last
 * report it stored); the admin API sends a {@link CeremonyProgress} there, which `signers` prints.
 */
export type Ceremony = Omit<CeremonyView, 'progress'> & { readonly progress: CeremonyProgress };

/** A signing ceremony (one signing attempt of a transfer) and its blame (`GET /admin/v1/signing-ceremonies/{id}`). */
export type SigningCeremony = SigningCeremonyView;

/** One blame as the coordinator checked it (verified: `culprit` proven; else a dispute: `culprit` null, nobody named). */
export type Blame = BlameView;

/** `POST …/wallets/{wallet_id}/consolidations` body: the UTXOs to spend to the wallet's own address. */
export interface ConsolidationInput {
  /** Blockchain id or key (Bitcoin family). */
  blockchain_id: string;
  /** At most this many inputs (2..200). */
  max_inputs?: number;
  /** Only UTXOs below this value, base units (decimal string). */
  below?: string;
  priority?: 'SLOW' | 'STANDARD' | 'FAST';
}

/** `PATCH …/addresses/{address_id}` body: a label (null clears it) and/or the archive state. */
export interface AddressUpdateInput {
  label?: string | null;
  archived?: boolean;
}

/** Page selection; values are sent as given (the CLI passes its option strings). */
export interface PageQuery {
  page?: string | number;
  page_size?: string | number;
}

/** `GET /admin/v1/me`: the session's user and the end of its step-up window (null: none). */
export interface Me extends UserView {
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
  /** The one-time bootstrap token (`<data-dir>/bootstrap-token`). */
  bootstrap_token: string;
}

export interface InitResult {
  user: UserView;
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
  user: UserView;
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

/** Item of `GET …/wallets` (ids and names; the addresses are in `GET …/wallets/{wallet_id}`). */
export type WalletSummary = Omit<WalletView, 'addresses'>;

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

/**
 * A server signer as `GET /admin/v1/signers` lists it: `reachable` — this coordinator has an open
 * libp2p connection to it now; `last_seen_at` — ISO time one was last open (now when reachable),
 * null when none since the coordinator started.
 */
export interface ServerSignerStatus extends ServerSigner {
  reachable: boolean;
  last_seen_at: string | null;
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

/** `POST /admin/v1/master-keys` body: exactly the parties of the ceremony. */
export interface CreateMasterKeyInput {
  threshold: number;
  signers: { kind: 'server' | 'device'; id: string }[];
}

export interface CreateWebhookInput {
  url: string;
  event_types: string[];
  description?: string | null;
}

export type UpdateWebhookInput = Partial<CreateWebhookInput>;

export interface NotificationQuery extends PageQuery {
  status?: string;
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

/** `POST …/versions/{version}/signature` body: the device and its P-256 signature (r‖s, hex). */
export interface PolicySignatureInput {
  device_id: string;
  signature: string;
}

export interface TransferQuery extends PageQuery {
  wallet_id?: string;
  status?: string;
}

export type FeePriority = 'SLOW' | 'STANDARD' | 'FAST';

/** A party of a master key or of a key change: a server signer (`signer_id`) or a device (`device_id`). */
export interface PartyRef {
  kind: 'server' | 'device';
  id: string;
}

/**
 * `POST /admin/v1/master-keys/{master_key_id}/key-changes` body: replace one party by another
 * (same threshold), or move the key to exactly `signers` with threshold `threshold` (t').
 */
export type KeyChangeInput =
  | { reason: 'replace-signer'; old: PartyRef; new: PartyRef }
  | { reason: 'reshare'; threshold: number; signers: PartyRef[] };

/** States of a key change: signed → RUNNING (the RESHARE ceremony) → COMMITTING → SUCCEEDED, or FAILED. */
export type KeyChangeStatus = 'AWAITING_SIGNATURE' | 'RUNNING' | 'COMMITTING' | 'SUCCEEDED' | 'FAILED';

/** A key change as the admin API shows it: the document an Admin device signs and its digest (hex, 32 bytes). */
export interface KeyChange {
  change_id: string;
  master_key_id: string;
  reason: 'replace-signer' | 'reshare';
  status: KeyChangeStatus;
  /** The KeyChangeDocument of @custodian/wire (key-change.ts). */
  document: KeyChangeDocument;
  /** Lower-case hex of `keyChangeDigest(document)` as the coordinator computed it. */
  digest: string;
  ceremony_id: string | null;
  error: string | null;
  /** FAILED: the parties the ceremony named as culprits (`kind:id`), else null. */
  blamed?: string[] | null;
  /** Parties (`kind:id`) that have not yet acknowledged the commit (retried by the coordinator). */
  uncommitted?: string[];
  created_by: string | null;
  created_at: string;
  updated_at: string;
}

/** `POST …/key-changes/{change_id}/signature` body: the Admin's device and its P-256 r‖s (hex) over the digest. */
export interface KeyChangeSignatureInput {
  device_id: string;
  signature: string;
}

/** `result` of a finished DRILL ceremony: one test signature per key type, and each party's backup state. */
export interface DrillResult {
  signatures: {
    algorithm: string;
    public_key: string;
    /** The fixed test digest (testSignatureDigest 'drill'), hex. */
    digest: string;
    signature: string;
    /** Whether the coordinator verified `signature` over `digest` under `public_key`. */
    verified: boolean;
  }[];
  signers: {
    kind: 'server' | 'device';
    id: string;
    epoch: number | null;
    backup_epoch: number | null;
    backup_at: string | null;
    backup_current: boolean;
  }[];
}

/** A ceremony of the key lifecycle (REFRESH, RESHARE, DRILL): a {@link Ceremony} with its key change and result. */
export type KeyCeremony = Ceremony & { readonly result?: unknown; readonly key_change_id?: string | null };
