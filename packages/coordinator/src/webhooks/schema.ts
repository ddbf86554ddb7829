/**
 * Migration 2 (`webhooks`): the outbox (events, notifications, attempts), the signing keys, and
 * the wallet-group / address-group features that the seed §6 events imply.
 */
export const WEBHOOKS_MIGRATION_SQL = `
CREATE TABLE webhook_events (
  event_id uuid PRIMARY KEY,
  profile_id uuid NOT NULL REFERENCES profiles(profile_id),
  event_type text NOT NULL,
  occurred_at timestamptz NOT NULL,
  body text NOT NULL
);
CREATE INDEX webhook_events_profile ON webhook_events (profile_id, occurred_at);

CREATE TABLE webhook_notifications (
  notification_id uuid PRIMARY KEY,
  webhook_id uuid NOT NULL REFERENCES webhooks(webhook_id),
  event_id uuid NOT NULL REFERENCES webhook_events(event_id),
  status text NOT NULL CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED')),
  attempt_count int NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
  attempt_base int NOT NULL DEFAULT 0 CHECK (attempt_base >= 0 AND attempt_base <= attempt_count),
  claim_id uuid,
  next_attempt_at timestamptz,
  last_response_code int,
  last_error text,
  delivered_at timestamptz,
  redeliveries int NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  UNIQUE (webhook_id, event_id),
  CHECK ((status = 'PENDING') = (next_attempt_at IS NOT NULL))
);
CREATE INDEX webhook_notifications_due ON webhook_notifications (next_attempt_at) WHERE status = 'PENDING';
CREATE INDEX webhook_notifications_webhook ON webhook_notifications (webhook_id, created_at);

CREATE TABLE webhook_attempts (
  notification_id uuid NOT NULL REFERENCES webhook_notifications(notification_id),
  attempt int NOT NULL CHECK (attempt >= 1),
  scheduled_at timestamptz NOT NULL,
  started_at timestamptz NOT NULL,
  finished_at timestamptz,
  response_code int,
  error text,
  duration_ms int,
  PRIMARY KEY (notification_id, attempt)
);

CREATE TABLE webhook_signing_keys (
  kid text PRIMARY KEY,
  public_jwk jsonb NOT NULL,
  private_key_enc text NOT NULL,
  created_at timestamptz NOT NULL,
  activates_at timestamptz NOT NULL,
  retires_at timestamptz,
  expires_at timestamptz
);

CREATE TABLE wallet_groups (
  wallet_group_id uuid PRIMARY KEY,
  profile_id uuid NOT NULL REFERENCES profiles(profile_id),
  name text NOT NULL,
  description text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz
);
CREATE UNIQUE INDEX wallet_groups_name_live ON wallet_groups (profile_id, lower(name)) WHERE deleted_at IS NULL;
CREATE TABLE wallet_group_wallets (
  wallet_group_id uuid NOT NULL REFERENCES wallet_groups(wallet_group_id),
  wallet_id uuid NOT NULL REFERENCES wallets(wallet_id),
  PRIMARY KEY (wallet_group_id, wallet_id)
);
CREATE TABLE wallet_group_users (
  wallet_group_id uuid NOT NULL REFERENCES wallet_groups(wallet_group_id),
  user_id uuid NOT NULL REFERENCES users(user_id),
  PRIMARY KEY (wallet_group_id, user_id)
);

CREATE TABLE address_groups (
  address_group_id uuid PRIMARY KEY,
  profile_id uuid NOT NULL REFERENCES profiles(profile_id),
  name text NOT NULL,
  description text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz
);
CREATE UNIQUE INDEX address_groups_name_live ON address_groups (profile_id, lower(name)) WHERE deleted_at IS NULL;
CREATE TABLE address_group_entries (
  address_group_id uuid NOT NULL REFERENCES address_groups(address_group_id),
  blockchain_id uuid NOT NULL REFERENCES blockchains(blockchain_id),
  address text NOT NULL,
  label text,
  PRIMARY KEY (address_group_id, blockchain_id, address)
);
`;

/**
 * Migration 8 (`instance_webhooks`, #26 item 8): instance-level webhooks and events.
 *
 * - `webhooks.profile_id` NULL = an instance-level webhook (registered by an Admin at
 *   `/admin/v1/webhooks`); it receives the instance/security events and only those.
 * - `webhook_events.profile_id` NULL = an instance event that concerns no single profile (its body
 *   names the nil UUID).
 * - Profile webhooks lose their subscriptions to instance/security types, which they will never
 *   receive again (the list is `INSTANCE_EVENT_TYPES` of events.ts at this release). Notifications
 *   already written stay as they are.
 */
export const INSTANCE_WEBHOOKS_MIGRATION_SQL = `
ALTER TABLE webhooks ALTER COLUMN profile_id DROP NOT NULL;
ALTER TABLE webhook_events ALTER COLUMN profile_id DROP NOT NULL;
CREATE INDEX webhooks_instance ON webhooks (created_at, webhook_id) WHERE profile_id IS NULL AND deleted_at IS NULL;
UPDATE webhooks SET event_types = COALESCE(
  (SELECT jsonb_agg(t ORDER BY n) FROM jsonb_array_elements_text(event_types) WITH ORDINALITY AS e(t, n)
   WHERE t NOT IN ('SERVER_CREATED', 'SERVER_DELETED', 'REFRESH_KEY_SHARES', 'DEVICE_CREATED',
     'DEVICE_STATUS_CHANGED', 'DEVICE_REMOVED', 'CERTIFICATE_READY', 'USER_CREATED', 'USER_ROLE_UPDATED',
     'USER_BLOCKED', 'USER_UNBLOCKED', 'USER_PASSWORD_RESET_INITIATED', 'POLICY_SIGNATURE_VERIFICATION_FAILED',
     'ROLE_SCOPE_LOGIN', 'GEO_ANOMALY_DETECTED')),
  '[]'::jsonb)
WHERE profile_id IS NOT NULL;
`;
