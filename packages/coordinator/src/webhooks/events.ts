/**
 * Webhook event types of seed §6, with the trigger of each (seed §6 rule 4 leaves them "not
 * shown"; these are our definitions, published in the OpenAPI document) and the shape of `data`.
 *
 * Every type has a trigger; test/webhooks-every-event.test.ts lists, per type, the test that makes
 * it fire.
 */

/** Every event type of seed §6, in the seed's order. New types may be added without a version change (seed §9). */
export const WEBHOOK_EVENT_TYPES = [
  'TRANSFER_CREATED',
  'TRANSFER_UPDATED',
  'TRANSFER_DELIVERED',
  'TRANSFER_FAILED',
  'BALANCE_UPDATED',
  'TRANSACTION_DETECTED',
  'WALLET_CREATED',
  'WALLET_UPDATED',
  'WALLET_DELETED',
  'POLICY_CREATED',
  'POLICY_UPDATED',
  'POLICY_DELETED',
  'ADDRESS_CREATED',
  'ADDRESS_UPDATED',
  'ADDRESS_DELETED',
  'WALLET_GROUP_CREATED',
  'WALLET_GROUP_UPDATED',
  'WALLET_GROUP_DELETED',
  'WALLET_GROUP_USER_ASSIGNED',
  'ADDRESS_GROUP_CREATED',
  'ADDRESS_GROUP_UPDATED',
  'ADDRESS_GROUP_DELETED',
  'SERVER_CREATED',
  'SERVER_DELETED',
  'REFRESH_KEY_SHARES',
  'DEVICE_CREATED',
  'DEVICE_STATUS_CHANGED',
  'DEVICE_REMOVED',
  'CERTIFICATE_READY',
  'USER_CREATED',
  'USER_ROLE_UPDATED',
  'USER_BLOCKED',
  'USER_UNBLOCKED',
  'USER_PASSWORD_RESET_INITIATED',
  'POLICY_SIGNATURE_VERIFICATION_FAILED',
  'ROLE_SCOPE_LOGIN',
  'GEO_ANOMALY_DETECTED',
  'SIGNER_MISBEHAVIOUR',
] as const;

/** One event type. */
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Set form of {@link WEBHOOK_EVENT_TYPES}. */
export const WEBHOOK_EVENT_TYPE_SET: ReadonlySet<string> = new Set(WEBHOOK_EVENT_TYPES);

/**
 * The instance and security event types (seed §6 groups "Servers and keys", "Devices", "Users",
 * "Security"): they concern the whole instance or its people, not one profile's money, so they are
 * delivered ONLY to instance-level webhooks (registered by an Admin at `/admin/v1/webhooks`, no
 * profile) and never to a profile's webhooks — a profile's API key holder must not learn the
 * instance's users, logins or devices (#26 item 8). Every other type is a profile event, delivered
 * only to the webhooks of its profile.
 */
export const INSTANCE_EVENT_TYPES = [
  'SERVER_CREATED',
  'SERVER_DELETED',
  'REFRESH_KEY_SHARES',
  'DEVICE_CREATED',
  'DEVICE_STATUS_CHANGED',
  'DEVICE_REMOVED',
  'CERTIFICATE_READY',
  'USER_CREATED',
  'USER_ROLE_UPDATED',
  'USER_BLOCKED',
  'USER_UNBLOCKED',
  'USER_PASSWORD_RESET_INITIATED',
  'POLICY_SIGNATURE_VERIFICATION_FAILED',
  'ROLE_SCOPE_LOGIN',
  'GEO_ANOMALY_DETECTED',
  'SIGNER_MISBEHAVIOUR',
] as const satisfies readonly WebhookEventType[];

const INSTANCE_EVENT_TYPE_SET: ReadonlySet<string> = new Set(INSTANCE_EVENT_TYPES);

/** Whether `type` is an instance/security event ({@link INSTANCE_EVENT_TYPES}). */
export function isInstanceEvent(type: string): boolean {
  return INSTANCE_EVENT_TYPE_SET.has(type);
}

/** The profile event types: every type not in {@link INSTANCE_EVENT_TYPES}, in the seed's order. */
export const PROFILE_EVENT_TYPES: readonly WebhookEventType[] = WEBHOOK_EVENT_TYPES.filter((t) => !isInstanceEvent(t));

/**
 * The events that carry the ordering aid `data.sequence` / `data.updated_at` (outbox.ts), with the
 * resource whose counter they advance and the `data` field naming it.
 */
export const SEQUENCED_EVENTS: Partial<
  Record<WebhookEventType, { kind: 'transfer' | 'wallet' | 'address'; idField: string }>
> = {
  TRANSFER_CREATED: { kind: 'transfer', idField: 'transfer_id' },
  TRANSFER_UPDATED: { kind: 'transfer', idField: 'transfer_id' },
  TRANSFER_DELIVERED: { kind: 'transfer', idField: 'transfer_id' },
  TRANSFER_FAILED: { kind: 'transfer', idField: 'transfer_id' },
  WALLET_CREATED: { kind: 'wallet', idField: 'wallet_id' },
  WALLET_UPDATED: { kind: 'wallet', idField: 'wallet_id' },
  WALLET_DELETED: { kind: 'wallet', idField: 'wallet_id' },
  ADDRESS_CREATED: { kind: 'address', idField: 'address_id' },
  ADDRESS_UPDATED: { kind: 'address', idField: 'address_id' },
  ADDRESS_DELETED: { kind: 'address', idField: 'address_id' },
};

/**
 * `profile_id` of the delivery body of an instance event that concerns no single profile (users,
 * devices, servers, logins): the nil UUID (RFC 9562 §5.9), so the field stays a UUID as seed §2 says.
 */
export const INSTANCE_PROFILE_ID = '00000000-0000-0000-0000-000000000000';

const uuid = { type: 'string', format: 'uuid' } as const;
const str = { type: 'string' } as const;
const time = { type: 'string', format: 'date-time' } as const;
const obj = (properties: Record<string, unknown>, required = Object.keys(properties)) => ({
  type: 'object',
  additionalProperties: true,
  required,
  properties,
});
/** The ordering aid of transfer, wallet and address events (outbox.ts {@link SEQUENCED_EVENTS}). */
const ordering = {
  sequence: {
    type: 'integer',
    minimum: 1,
    description:
      'Per resource (this transfer / wallet / address), strictly increasing across its events in commit order; survives restarts. Keep the highest applied per resource and ignore a delivery with a lower one.',
  },
  updated_at: { ...time, description: "The resource's last change (ISO 8601 UTC)." },
};
const ordered = (properties: Record<string, unknown>, required: string[]) =>
  obj({ ...properties, ...ordering }, [...required, 'sequence', 'updated_at']);

const transfer = ordered(
  {
    transfer_id: uuid,
    wallet_id: uuid,
    asset_id: uuid,
    destination_address: str,
    amount: { type: 'string', description: 'decimal string in asset units' },
    status: str,
    sub_status: { type: ['string', 'null'] },
    external_id: { type: ['string', 'null'], description: "the caller's reference (seed §6 rule 6)" },
    tx_hash: { type: ['string', 'null'] },
  },
  ['transfer_id', 'wallet_id', 'status', 'external_id'],
);
const wallet = ordered(
  {
    wallet_id: uuid,
    name: { type: ['string', 'null'] },
    blockchain_ids: { type: 'array', items: uuid },
    archived: { type: 'boolean', description: 'WALLET_UPDATED of an archive (true) or unarchive (false)' },
  },
  ['wallet_id'],
);
const address = ordered(
  {
    address_id: uuid,
    wallet_id: uuid,
    blockchain_id: uuid,
    address: str,
    address_type: str,
    derivation_path: str,
    label: { type: ['string', 'null'], description: 'ADDRESS_UPDATED / ADDRESS_DELETED: the label (admin API)' },
    archived: { type: 'boolean', description: 'ADDRESS_UPDATED / ADDRESS_DELETED: whether the address is archived' },
  },
  ['address_id', 'wallet_id', 'blockchain_id', 'address'],
);
const walletGroup = obj(
  {
    wallet_group_id: uuid,
    name: str,
    wallet_ids: { type: 'array', items: uuid },
    user_ids: { type: 'array', items: uuid },
  },
  ['wallet_group_id', 'name'],
);
const addressGroup = obj(
  {
    address_group_id: uuid,
    name: str,
    entries: { type: 'array', items: obj({ blockchain_id: uuid, address: str, label: { type: ['string', 'null'] } }) },
  },
  ['address_group_id', 'name'],
);
const policy = obj({ policy_id: uuid, version: { type: 'integer' }, wallet_id: { type: ['string', 'null'] } }, [
  'policy_id',
]);
const server = obj({ signer_id: uuid, name: str, peer_id: str }, ['signer_id']);
const device = obj({ device_id: uuid, name: str, platform: str, status: str, fingerprint: str }, [
  'device_id',
  'status',
]);
const user = obj({ user_id: uuid, email: str, role: str }, ['user_id']);

/** Trigger and `data` schema of every event type (OpenAPI `x-webhook-events` and docs/webhooks.md). */
export const WEBHOOK_EVENT_DOCS: Record<WebhookEventType, { trigger: string; data: object }> = {
  TRANSFER_CREATED: {
    trigger: 'A transfer is created (API or dashboard), status PENDING. Emitted by the transfer pipeline.',
    data: transfer,
  },
  TRANSFER_UPDATED: {
    trigger: 'Every persisted transfer status change (DESIGN.md §7). Emitted by the transfer pipeline.',
    data: transfer,
  },
  TRANSFER_DELIVERED: {
    trigger: 'A SENT transfer is confirmed on chain. Emitted by the pipeline/indexer.',
    data: transfer,
  },
  TRANSFER_FAILED: {
    trigger: 'A transfer reaches REJECTED, REJECTED_BY_POLICY, NO_POLICY_FOUND, EXPIRED or FAILED (with sub_status).',
    data: transfer,
  },
  BALANCE_UPDATED: {
    trigger:
      'After confirmation, when a wallet balance actually changes (seed §6 rule 2). Emitted by the chain indexer.',
    data: obj({ wallet_id: uuid, blockchain_id: uuid, asset_id: uuid, amount: str, amount_base_units: str }),
  },
  TRANSACTION_DETECTED: {
    trigger:
      "An on-chain transaction is first seen on one of the profile's addresses, possibly unconfirmed (seed §6 rule 1).",
    data: obj({ wallet_id: uuid, blockchain_id: uuid, address: str, tx_hash: str, confirmed: { type: 'boolean' } }, [
      'wallet_id',
      'blockchain_id',
      'tx_hash',
    ]),
  },
  WALLET_CREATED: { trigger: 'A wallet is created (REST API or admin API).', data: wallet },
  WALLET_UPDATED: {
    trigger:
      'A wallet is renamed (admin API `PATCH …/wallets/{wallet_id}`), archived or unarchived (admin API ' +
      '`POST …/wallets/{wallet_id}/archive|unarchive`, `archived` true/false). An archived wallet takes no new ' +
      'transfers or addresses; its deposits are still watched and credited.',
    data: wallet,
  },
  WALLET_DELETED: {
    trigger:
      'An Admin deletes a wallet (admin API `DELETE …/wallets/{wallet_id}`), allowed only when every balance is zero ' +
      'and no transfer of it is unfinished. Soft delete: the wallet is gone from lists and GETs; its addresses stay ' +
      'reserved and watched.',
    data: wallet,
  },
  POLICY_CREATED: { trigger: 'A policy is created. Emitted by the policy module.', data: policy },
  POLICY_UPDATED: {
    trigger:
      'A new policy version is stored (PENDING_SIGNATURE; `deleted: true` for a requested deletion) or signed (ACTIVE). Emitted by the policy module.',
    data: policy,
  },
  POLICY_DELETED: {
    trigger:
      "A policy's deletion takes effect: an Admin device signed its tombstone version. Emitted by the policy module.",
    data: policy,
  },
  ADDRESS_CREATED: {
    trigger: 'A deposit address is derived: the first ones at wallet creation and every additional one.',
    data: address,
  },
  ADDRESS_UPDATED: {
    trigger:
      "An address's label is set or cleared, or the address is unarchived (admin API `PATCH …/addresses/{address_id}`).",
    data: address,
  },
  ADDRESS_DELETED: {
    trigger:
      'An address is archived (admin API `PATCH …/addresses/{address_id}` with `archived: true`): no longer listed ' +
      'as a deposit address, but still watched and its coins spendable, since money may still arrive. An ' +
      "account-based blockchain's only address cannot be archived.",
    data: address,
  },
  WALLET_GROUP_CREATED: { trigger: 'A wallet group is created (admin API).', data: walletGroup },
  WALLET_GROUP_UPDATED: { trigger: 'A wallet group is renamed or its wallets change (admin API).', data: walletGroup },
  WALLET_GROUP_DELETED: { trigger: 'A wallet group is deleted (admin API).', data: walletGroup },
  WALLET_GROUP_USER_ASSIGNED: {
    trigger: 'A user is assigned to (or removed from: `assigned: false`) a wallet group (admin API).',
    data: obj({ wallet_group_id: uuid, user_id: uuid, assigned: { type: 'boolean' } }),
  },
  ADDRESS_GROUP_CREATED: { trigger: 'An address group (address-book set) is created (admin API).', data: addressGroup },
  ADDRESS_GROUP_UPDATED: {
    trigger: 'An address group is renamed or its entries change (admin API).',
    data: addressGroup,
  },
  ADDRESS_GROUP_DELETED: { trigger: 'An address group is deleted (admin API).', data: addressGroup },
  SERVER_CREATED: {
    trigger: 'A server signer is registered (admin API). Instance event.',
    data: server,
  },
  SERVER_DELETED: { trigger: 'A server signer is removed (admin API). Instance event.', data: server },
  REFRESH_KEY_SHARES: {
    trigger:
      'A key refresh or a reshare (replace-signer, reshare) completes: same public keys, new shares (DESIGN.md §3; issue #22). ' +
      'Emitted by the keys room in the transaction that records the new epoch. Instance event.',
    data: obj(
      {
        master_key_id: uuid,
        ceremony_id: uuid,
        reason: { type: 'string', enum: ['refresh', 'replace-signer', 'reshare'] },
        epoch: { type: 'integer', minimum: 1 },
      },
      ['master_key_id', 'ceremony_id'],
    ),
  },
  DEVICE_CREATED: {
    trigger: 'A mobile device submits an enrollment request (status PENDING). Instance event.',
    data: device,
  },
  DEVICE_STATUS_CHANGED: {
    trigger: 'An Admin approves or rejects a PENDING device (`previous_status` → `status`). Instance event.',
    data: device,
  },
  DEVICE_REMOVED: { trigger: 'An Admin removes a device. Instance event.', data: device },
  CERTIFICATE_READY: {
    trigger:
      "A device's enrollment completes: an Admin approved it after the fingerprint check, so its identity key is " +
      'certified for this instance (emitted right after DEVICE_STATUS_CHANGED → APPROVED). Instance event.',
    data: device,
  },
  USER_CREATED: {
    trigger: 'A dashboard user is created (the first Admin at init, or by an Admin). Instance event.',
    data: user,
  },
  USER_ROLE_UPDATED: {
    trigger: "A user's role changes (`previous_role` → `role`). Instance event.",
    data: obj({ user_id: uuid, email: str, role: str, previous_role: str }),
  },
  USER_BLOCKED: { trigger: 'A user is blocked (sessions revoked). Instance event.', data: user },
  USER_UNBLOCKED: { trigger: 'A user is unblocked. Instance event.', data: user },
  USER_PASSWORD_RESET_INITIATED: {
    trigger: "An Admin resets a user's password (the user's sessions are revoked). Instance event.",
    data: user,
  },
  POLICY_SIGNATURE_VERIFICATION_FAILED: {
    trigger:
      "A policy's admin-device signature fails verification (DESIGN.md §1). Emitted by the policy module and signers. " +
      "Instance event; the body names the policy's profile.",
    data: obj({ policy_id: uuid, reason: str }, ['reason']),
  },
  ROLE_SCOPE_LOGIN: {
    trigger:
      'A dashboard session is opened (password + second factor succeeded) from a client address outside the ' +
      "role's scope: the configured admin networks (`adminNetworks`, env CUSTODIAN_ADMIN_NETWORKS; default loopback, " +
      '10/8, 172.16/12, 192.168/16, fc00::/7), which bound every role. `role` is the role the session carries, `ip` ' +
      'the client address. A login from inside emits nothing. Instance event.',
    data: obj({
      user_id: uuid,
      email: str,
      role: str,
      method: { type: 'string', enum: ['email', 'totp'] },
      ip: {
        type: 'string',
        description: 'client address (req.ip: socket peer, or X-Forwarded-For of a trusted proxy)',
      },
    }),
  },
  GEO_ANOMALY_DETECTED: {
    trigger:
      'A dashboard session is opened (password + second factor succeeded) from a network the user has not logged in ' +
      'from before: the IPv4 /24 or IPv6 /48 of the client address (req.ip: socket peer, or X-Forwarded-For of a ' +
      'trusted proxy; an IPv4-mapped IPv6 address counts as IPv4). The first login ever records its network without ' +
      'an alert. No GeoIP database ships: the rule is by IP range (users/geo-anomaly.ts). Instance event.',
    data: obj({
      user_id: uuid,
      email: str,
      ip: { type: 'string', description: 'the client address of the login' },
      network: { type: 'string', description: 'its network, e.g. 203.0.113.0/24 or 2001:db8:1::/48' },
      previous_networks: {
        type: 'integer',
        minimum: 1,
        description: 'how many other networks the user had logged in from before',
      },
    }),
  },
  SIGNER_MISBEHAVIOUR: {
    trigger:
      'A signer reported a blame in an aborted ceremony (issue #23): one event per blame, as the coordinator checked it ' +
      '(signing/blame.ts). `verified` true: the evidence proves `culprit` misbehaved; false: a dispute — nothing is proven, ' +
      '`culprit` is null and nobody is named: `accuser` claims `claimed_culprit` failed `check`. Emitted in the transaction that records the blame. Instance event.',
    data: obj(
      {
        ceremony_id: {
          type: 'string',
          description:
            'the ceremony: a UUID (master key and key lifecycle ceremonies) or 48 hex digits (a SIGN ceremony)',
        },
        culprit: {
          type: ['string', 'null'],
          description: 'libp2p peer id of the proven culprit; null unless verified',
        },
        culprit_name: {
          type: ['string', 'null'],
          description: "the culprit's server signer or device name; null when unknown or not verified",
        },
        claimed_culprit: {
          type: 'string',
          description: "libp2p peer id the accuser named ('' when none); proven only when verified",
        },
        accuser: { type: 'string', description: 'libp2p peer id of the signer that reported the blame' },
        check: { type: 'string', description: 'stable id of the failed check, e.g. echo.equivocation, proof.enc' },
        round: { type: 'integer', minimum: 0 },
        verified: { type: 'boolean' },
      },
      ['ceremony_id', 'culprit', 'claimed_culprit', 'accuser', 'check', 'round', 'verified'],
    ),
  },
};

/** The delivery body schema (seed §2 "Webhook delivery body"). */
export const WEBHOOK_BODY_SCHEMA = {
  type: 'object',
  required: ['event_id', 'event_type', 'profile_id', 'timestamp', 'data'],
  properties: {
    event_id: { ...uuid, description: 'Unique per event; equal to X-Webhook-Event-ID; stable across retries' },
    event_type: { type: 'string', description: 'One of the seed §6 types; receivers log and ignore unknown types' },
    profile_id: uuid,
    timestamp: { ...time, description: 'When the event happened, ISO 8601 UTC (not the signing time)' },
    data: { type: 'object', description: 'Depends on event_type (see x-webhook-events)' },
  },
} as const;

/**
 * The OpenAPI 3.1 `webhooks` object: one entry per event type, documenting its trigger, the five
 * headers of seed §6 and the delivery body with that type's `data` shape.
 */
export function openApiWebhooks(): Record<string, unknown> {
  const header = (description: string, schema: object = { type: 'string' }) => ({
    required: true,
    description,
    schema,
  });
  const parameters = [
    { name: 'Content-Type', in: 'header', ...header('Always application/json') },
    {
      name: 'X-Webhook-Signature',
      in: 'header',
      ...header(
        'Detached JWS (RFC 7515 appendix F) ES256: `<headerB64>..<signatureB64>`; header {"alg":"ES256","kid"}; signing input ' +
          'headerB64 + "." + base64url(<X-Webhook-Timestamp> + "." + <raw body>); signature raw R‖S (64 bytes) base64url. ' +
          'Keys: GET /.well-known/jwks.json.',
      ),
    },
    {
      name: 'X-Webhook-Timestamp',
      in: 'header',
      ...header('Unix time in seconds used for signing', { type: 'string', pattern: '^[0-9]+$' }),
    },
    { name: 'X-Webhook-Event-Type', in: 'header', ...header('The event type (same as body.event_type)') },
    {
      name: 'X-Webhook-Event-ID',
      in: 'header',
      ...header('Unique per-event UUID (same as body.event_id); the deduplication key', {
        type: 'string',
        format: 'uuid',
      }),
    },
  ];
  const out: Record<string, unknown> = {};
  for (const t of WEBHOOK_EVENT_TYPES) {
    const d = WEBHOOK_EVENT_DOCS[t];
    out[t] = {
      post: {
        operationId: `${t.toLowerCase().replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase())}Event`,
        summary: t,
        description:
          `Trigger: ${d.trigger} Delivered with HTTPS POST to every ${
            isInstanceEvent(t)
              ? `instance-level webhook (admin API /admin/v1/webhooks) subscribed to ${t} — never to a profile's webhooks; body profile_id is the nil UUID unless the event concerns one profile`
              : `webhook of the profile subscribed to ${t}`
          }; ` +
          'answer 2xx within 30 s, otherwise retried 30 s, 2 min, 10 min and 30 min after the previous attempt, ' +
          'then FAILED. At-least-once: deduplicate on X-Webhook-Event-ID.',
        parameters,
        // No credential is sent: the receiver checks X-Webhook-Signature against the JWKS (`@custodian/sdk` verifyWebhook).
        security: [],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                ...WEBHOOK_BODY_SCHEMA,
                properties: {
                  ...WEBHOOK_BODY_SCHEMA.properties,
                  event_type: { type: 'string', const: t },
                  data: d.data,
                },
              },
            },
          },
        },
        responses: { '200': { description: 'Any 2xx acknowledges the delivery' } },
      },
    };
  }
  return out;
}
