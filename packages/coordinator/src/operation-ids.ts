/**
 * The OpenAPI `operationId` of every documented route, in one table: the public names that
 * generated clients (`@custodian/sdk`'s `client.GET(...)` types, other languages' generators) and
 * docs link to, so they are stable — renaming one is a breaking change of the contract. Custody
 * API (`/api/v1`) operations carry plain names (`createTransfer`), admin API ones the `admin`
 * prefix (`adminCreateWallet`). `redocly.yaml` makes a missing id a lint error (test/openapi-doc.test.ts).
 */

/** `"<METHOD> <fastify url>"` → operationId. */
export const OPERATION_IDS: Readonly<Record<string, string>> = {
  'GET /api/v1/profiles/:profile_id/wallets': 'listWallets',
  'POST /api/v1/profiles/:profile_id/wallets': 'createWallet',
  'GET /api/v1/profiles/:profile_id/wallets/:wallet_id/addresses': 'listAddresses',
  'POST /api/v1/profiles/:profile_id/wallets/:wallet_id/addresses': 'createAddress',
  'GET /api/v1/profiles/:profile_id/wallets/:wallet_id/balances': 'listBalances',
  'GET /api/v1/profiles/:profile_id/wallets/:wallet_id/balances/:asset_id': 'getBalance',
  'GET /api/v1/profiles/:profile_id/assets': 'listAssets',
  'GET /api/v1/profiles/:profile_id/blockchains': 'listBlockchains',
  'GET /api/v1/profiles/:profile_id/webhooks': 'listWebhooks',
  'GET /api/v1/profiles/:profile_id/webhooks/:webhook_id': 'getWebhook',
  'GET /api/v1/profiles/:profile_id/webhooks/:webhook_id/notifications': 'listWebhookNotifications',
  'GET /api/v1/profiles/:profile_id/webhooks/:webhook_id/notifications/:notification_id': 'getWebhookNotification',
  'POST /api/v1/profiles/:profile_id/transfers': 'createTransfer',
  'GET /api/v1/profiles/:profile_id/transfers': 'listTransfers',
  'GET /api/v1/profiles/:profile_id/transfers/:transfer_id': 'getTransfer',
  'POST /api/v1/profiles/:profile_id/transfers/dry-run': 'dryRunTransfer',
  'POST /api/v1/profiles/:profile_id/fee-estimate': 'estimateFee',
  'POST /admin/v1/init': 'adminInitInstance',
  'POST /admin/v1/login': 'adminLogin',
  'POST /admin/v1/login/verify': 'adminVerifyLogin',
  'POST /admin/v1/logout': 'adminLogout',
  'GET /admin/v1/me': 'adminGetMe',
  'POST /admin/v1/session/step-up': 'adminStepUpSession',
  'POST /admin/v1/me/totp': 'adminStartTotpEnrollment',
  'POST /admin/v1/me/totp/confirm': 'adminConfirmTotpEnrollment',
  'POST /admin/v1/me/totp/disable': 'adminDisableTotp',
  'POST /admin/v1/me/password': 'adminChangeOwnPassword',
  'GET /admin/v1/users': 'adminListUsers',
  'POST /admin/v1/users': 'adminCreateUser',
  'GET /admin/v1/users/:user_id': 'adminGetUser',
  'GET /admin/v1/users/:user_id/login-networks': 'adminListUserLoginNetworks',
  'PATCH /admin/v1/users/:user_id': 'adminUpdateUser',
  'DELETE /admin/v1/users/:user_id': 'adminDeleteUser',
  'GET /admin/v1/profiles': 'adminListProfiles',
  'POST /admin/v1/profiles': 'adminCreateProfile',
  'GET /admin/v1/profiles/:profile_id/blockchains': 'adminListProfileBlockchains',
  'PUT /admin/v1/profiles/:profile_id/blockchains/:blockchain_id': 'adminSetProfileBlockchain',
  'GET /admin/v1/profiles/:profile_id/assets': 'adminListProfileAssets',
  'PUT /admin/v1/profiles/:profile_id/assets/:asset_id': 'adminSetProfileAsset',
  'GET /admin/v1/profiles/:profile_id/wallets': 'adminListWallets',
  'POST /admin/v1/profiles/:profile_id/wallets': 'adminCreateWallet',
  'GET /admin/v1/profiles/:profile_id/wallets/:wallet_id': 'adminGetWallet',
  'PATCH /admin/v1/profiles/:profile_id/wallets/:wallet_id': 'adminRenameWallet',
  'DELETE /admin/v1/profiles/:profile_id/wallets/:wallet_id': 'adminDeleteWallet',
  'POST /admin/v1/profiles/:profile_id/wallets/:wallet_id/archive': 'adminArchiveWallet',
  'POST /admin/v1/profiles/:profile_id/wallets/:wallet_id/unarchive': 'adminUnarchiveWallet',
  'GET /admin/v1/profiles/:profile_id/wallets/:wallet_id/addresses': 'adminListAddresses',
  'PATCH /admin/v1/profiles/:profile_id/wallets/:wallet_id/addresses/:address_id': 'adminUpdateAddress',
  'GET /admin/v1/profiles/:profile_id/wallets/:wallet_id/balances': 'adminListBalances',
  'GET /admin/v1/api-keys': 'adminListApiKeys',
  'POST /admin/v1/api-keys': 'adminCreateApiKey',
  'DELETE /admin/v1/api-keys/:api_key_id': 'adminRevokeApiKey',
  'GET /admin/v1/signers': 'adminListSigners',
  'POST /admin/v1/signers': 'adminRegisterSigner',
  'DELETE /admin/v1/signers/:signer_id': 'adminRemoveSigner',
  'GET /admin/v1/devices': 'adminListDevices',
  'GET /admin/v1/devices/:device_id': 'adminGetDevice',
  'DELETE /admin/v1/devices/:device_id': 'adminRemoveDevice',
  'POST /admin/v1/devices/:device_id/approve': 'adminApproveDevice',
  'POST /admin/v1/devices/:device_id/reject': 'adminRejectDevice',
  'GET /admin/v1/master-keys': 'adminListMasterKeys',
  'POST /admin/v1/master-keys': 'adminStartMasterKeyCeremony',
  'GET /admin/v1/ceremonies': 'adminListCeremonies',
  'GET /admin/v1/ceremonies/:ceremony_id': 'adminGetCeremony',
  'GET /admin/v1/ceremonies/:ceremony_id/events': 'adminStreamCeremony',
  'GET /admin/v1/signing-ceremonies/:ceremony_id': 'adminGetSigningCeremony',
  'POST /admin/v1/master-keys/:master_key_id/refresh': 'adminRefreshMasterKey',
  'POST /admin/v1/master-keys/:master_key_id/key-changes': 'adminCreateKeyChange',
  'GET /admin/v1/master-keys/:master_key_id/key-changes': 'adminListKeyChanges',
  'GET /admin/v1/master-keys/:master_key_id/key-changes/:change_id': 'adminGetKeyChange',
  'POST /admin/v1/master-keys/:master_key_id/key-changes/:change_id/signature': 'adminSignKeyChange',
  'POST /admin/v1/master-keys/:master_key_id/drill': 'adminStartRecoveryDrill',
  'GET /admin/v1/profiles/:profile_id/webhooks': 'adminListWebhooks',
  'POST /admin/v1/profiles/:profile_id/webhooks': 'adminCreateWebhook',
  'GET /admin/v1/profiles/:profile_id/webhooks/:webhook_id': 'adminGetWebhook',
  'PATCH /admin/v1/profiles/:profile_id/webhooks/:webhook_id': 'adminUpdateWebhook',
  'DELETE /admin/v1/profiles/:profile_id/webhooks/:webhook_id': 'adminDeleteWebhook',
  'GET /admin/v1/profiles/:profile_id/webhooks/:webhook_id/notifications': 'adminListWebhookNotifications',
  'POST /admin/v1/profiles/:profile_id/webhooks/:webhook_id/notifications/:notification_id/redeliver':
    'adminRedeliverNotification',
  'GET /admin/v1/webhooks': 'adminListInstanceWebhooks',
  'POST /admin/v1/webhooks': 'adminCreateInstanceWebhook',
  'GET /admin/v1/webhooks/:webhook_id': 'adminGetInstanceWebhook',
  'PATCH /admin/v1/webhooks/:webhook_id': 'adminUpdateInstanceWebhook',
  'DELETE /admin/v1/webhooks/:webhook_id': 'adminDeleteInstanceWebhook',
  'GET /admin/v1/webhooks/:webhook_id/notifications': 'adminListInstanceWebhookNotifications',
  'POST /admin/v1/webhooks/:webhook_id/notifications/:notification_id/redeliver': 'adminRedeliverInstanceNotification',
  'GET /admin/v1/webhook-signing-keys': 'adminListWebhookSigningKeys',
  'POST /admin/v1/webhook-signing-keys/rotate': 'adminRotateWebhookSigningKey',
  'GET /admin/v1/profiles/:profile_id/wallet-groups': 'adminListWalletGroups',
  'POST /admin/v1/profiles/:profile_id/wallet-groups': 'adminCreateWalletGroup',
  'GET /admin/v1/profiles/:profile_id/wallet-groups/:wallet_group_id': 'adminGetWalletGroup',
  'PATCH /admin/v1/profiles/:profile_id/wallet-groups/:wallet_group_id': 'adminUpdateWalletGroup',
  'DELETE /admin/v1/profiles/:profile_id/wallet-groups/:wallet_group_id': 'adminDeleteWalletGroup',
  'GET /admin/v1/profiles/:profile_id/address-groups': 'adminListAddressGroups',
  'POST /admin/v1/profiles/:profile_id/address-groups': 'adminCreateAddressGroup',
  'GET /admin/v1/profiles/:profile_id/address-groups/:address_group_id': 'adminGetAddressGroup',
  'PATCH /admin/v1/profiles/:profile_id/address-groups/:address_group_id': 'adminUpdateAddressGroup',
  'DELETE /admin/v1/profiles/:profile_id/address-groups/:address_group_id': 'adminDeleteAddressGroup',
  'PUT /admin/v1/profiles/:profile_id/wallet-groups/:wallet_group_id/users/:user_id': 'adminAssignWalletGroupUser',
  'DELETE /admin/v1/profiles/:profile_id/wallet-groups/:wallet_group_id/users/:user_id': 'adminUnassignWalletGroupUser',
  'GET /admin/v1/audit': 'adminListAuditLog',
  'POST /devices/v1/enrollments': 'requestDeviceEnrollment',
  'GET /devices/v1/enrollments/:device_id': 'getDeviceEnrollment',
  'GET /admin/v1/profiles/:profile_id/policies': 'adminListPolicies',
  'POST /admin/v1/profiles/:profile_id/policies': 'adminCreatePolicy',
  'GET /admin/v1/profiles/:profile_id/policies/:policy_id': 'adminGetPolicy',
  'PUT /admin/v1/profiles/:profile_id/policies/:policy_id': 'adminUpdatePolicy',
  'DELETE /admin/v1/profiles/:profile_id/policies/:policy_id': 'adminDeletePolicy',
  'POST /admin/v1/profiles/:profile_id/policies/:policy_id/versions/:version/signature': 'adminSignPolicyVersion',
  'GET /admin/v1/profiles/:profile_id/transfers': 'adminListTransfers',
  'GET /admin/v1/profiles/:profile_id/transfers/:transfer_id': 'adminGetTransfer',
  'GET /admin/v1/profiles/:profile_id/transfers/:transfer_id/events': 'adminStreamTransfer',
  'POST /admin/v1/profiles/:profile_id/transfers/:transfer_id/cancel': 'adminCancelTransfer',
  'POST /admin/v1/profiles/:profile_id/transfers/:transfer_id/fee-bump': 'adminBumpTransferFee',
  'POST /admin/v1/profiles/:profile_id/wallets/:wallet_id/consolidations': 'adminConsolidateUtxos',
  'GET /.well-known/jwks.json': 'getWebhookJwks',
};

/** The create routes' idempotency header, declared required in the document (its alias stays optional). */
const IDEMPOTENCY_HEADER = 'idempotency-key';

interface RouteDoc {
  schema: object | undefined;
  url: string;
  route: { method: string | string[] };
}

/**
 * `@fastify/swagger`'s `transform` (documentation only, validation is unchanged): adds the route's
 * operationId from {@link OPERATION_IDS}, and lists `Idempotency-Key` as a required header where the
 * route declares it — the server also accepts the alias `Idempotency_key` (described on the
 * parameter), which a document cannot state as "one of two headers is required".
 * @returns `{ schema, url }` for the document; the route's own schema object is not modified
 */
export function documentRoute({ schema, url, route }: RouteDoc): { schema: Record<string, unknown>; url: string } {
  const base = (schema ?? {}) as Record<string, unknown>;
  const method = Array.isArray(route.method) ? route.method[0] : route.method;
  const operationId = OPERATION_IDS[`${method} ${url}`];
  const out: Record<string, unknown> = { ...base, ...(operationId !== undefined ? { operationId } : {}) };
  const headers = base.headers as { properties?: Record<string, unknown>; required?: string[] } | undefined;
  if (headers?.properties?.[IDEMPOTENCY_HEADER] !== undefined) {
    out.headers = { ...headers, required: [...new Set([...(headers.required ?? []), IDEMPOTENCY_HEADER])] };
  }
  return { schema: out, url };
}
