/**
 * Every event type of seed §6 has a trigger and a test that makes it fire (issue #28). The table
 * below names, for each of the types of webhooks/events.ts, the test that fires it and checks the
 * webhook outbox for it; this file checks that the table covers exactly those types, that every
 * named test exists and its body (or the helper it calls, `via`) reads that event type from the
 * outbox, that the coordinator's source emits every type, and that no type is documented as
 * having no trigger. Events whose trigger needs signer processes point at their slow test.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { WEBHOOK_EVENT_DOCS, WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../src/webhooks/events.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..', '..');

/** The test that makes the event fire: file (repository path), test name, and the helper that reads the outbox when the body does not. */
interface FiredBy {
  file: string;
  test: string;
  via?: string;
}

const EVENTS_TEST = 'packages/coordinator/test/webhooks-events.test.ts';
const EVENTS_IT = 'users, login, devices, signers, wallets, addresses, wallet and address groups emit their events';
const ev: FiredBy = { file: EVENTS_TEST, test: EVENTS_IT };
const TRANSFERS: FiredBy = {
  file: 'packages/coordinator/test/transfers.test.ts',
  test: 'quorum of 2 distinct devices; a rejection ends REJECTED_BY_APPROVER; expiry; cancel',
};
const ARCHIVE = 'packages/coordinator/test/wallet-archive.test.ts';
const ADDRESS_ARCHIVE: FiredBy = {
  file: ARCHIVE,
  test: 'label → ADDRESS_UPDATED; archive → ADDRESS_DELETED, unlisted but still watched; account chain refused',
};
const TRON_DEPOSIT: FiredBy = {
  file: 'packages/coordinator/test/transfers-tron.test.ts',
  test: 'TRX and TRC-20 deposits are detected by the TRON watcher into the wallet balances',
};

/** Per event type, the test that fires it. */
export const FIRED_BY: Record<WebhookEventType, FiredBy> = {
  TRANSFER_CREATED: TRANSFERS,
  TRANSFER_UPDATED: TRANSFERS,
  TRANSFER_DELIVERED: {
    file: 'packages/coordinator/test/transfers-tron.test.ts',
    test: 'TRX: approval, threshold signature, broadcast, SENT, mined, delivered; the TRX arrives',
  },
  TRANSFER_FAILED: TRANSFERS,
  BALANCE_UPDATED: TRON_DEPOSIT,
  TRANSACTION_DETECTED: TRON_DEPOSIT,
  WALLET_CREATED: ev,
  WALLET_UPDATED: ev,
  WALLET_DELETED: {
    file: ARCHIVE,
    test: 'attack: deleting a wallet with a balance or an unfinished transfer is refused; an empty one is soft-deleted',
  },
  POLICY_CREATED: {
    file: 'packages/coordinator/test/transfers.test.ts',
    test: 'roles: Finance Manager creates, Viewer only reads; a version takes effect only once an Admin device signs it',
  },
  POLICY_UPDATED: {
    file: 'packages/coordinator/test/transfers.test.ts',
    test: 'roles: Finance Manager creates, Viewer only reads; a version takes effect only once an Admin device signs it',
  },
  POLICY_DELETED: {
    file: 'packages/coordinator/test/attack-policy-delete.test.ts',
    test: 'every policy create, update, signature, deletion request and deletion is in the audit log, with its actor',
  },
  ADDRESS_CREATED: ev,
  ADDRESS_UPDATED: ADDRESS_ARCHIVE,
  ADDRESS_DELETED: ADDRESS_ARCHIVE,
  WALLET_GROUP_CREATED: ev,
  WALLET_GROUP_UPDATED: ev,
  WALLET_GROUP_DELETED: ev,
  WALLET_GROUP_USER_ASSIGNED: ev,
  ADDRESS_GROUP_CREATED: ev,
  ADDRESS_GROUP_UPDATED: ev,
  ADDRESS_GROUP_DELETED: ev,
  SERVER_CREATED: ev,
  SERVER_DELETED: ev,
  REFRESH_KEY_SHARES: {
    file: 'packages/coordinator/test/key-lifecycle.slow.test.ts',
    test: 'refresh keeps the public keys, moves the epoch and emits REFRESH_KEY_SHARES; a drill verifies',
  },
  DEVICE_CREATED: ev,
  DEVICE_STATUS_CHANGED: ev,
  DEVICE_REMOVED: ev,
  CERTIFICATE_READY: ev,
  USER_CREATED: ev,
  USER_ROLE_UPDATED: ev,
  USER_BLOCKED: ev,
  USER_UNBLOCKED: ev,
  USER_PASSWORD_RESET_INITIATED: ev,
  POLICY_SIGNATURE_VERIFICATION_FAILED: {
    file: 'packages/coordinator/test/transfers-e2e.slow.test.ts',
    test: 'a policy tampered in the coordinator database: the signers refuse (POLICY_SIGNATURE_VERIFICATION_FAILED)',
  },
  ROLE_SCOPE_LOGIN: ev,
  GEO_ANOMALY_DETECTED: {
    file: 'packages/coordinator/test/geo-anomaly.test.ts',
    test: 'first login records silently; same /24 is quiet; a new /24 or /48 fires with the count of networks before',
    via: 'geoEvents',
  },
  SIGNER_MISBEHAVIOUR: {
    file: 'packages/coordinator/test/attack-forged-blame.test.ts',
    test: 'valid equivocation evidence signed by the culprit names it, verified (API, webhook, metric)',
    via: 'events',
  },
};

/** The body of `it('<name>'…)` in `src`, up to the next `it(` (or the end). */
function testBody(src: string, name: string): string | undefined {
  const quoted = [`'${name.replaceAll("'", "\\'")}'`, `"${name}"`, `\`${name}\``];
  const at = quoted.map((q) => src.indexOf(`it(${q}`)).find((i) => i >= 0);
  if (at === undefined) return undefined;
  const next = src.indexOf('\n  it(', at + 1);
  return src.slice(at, next < 0 ? undefined : next);
}

/** Source of every coordinator module (where events are emitted), except the event catalogue and the webhook schema. */
function emittingSources(): string {
  const files = [
    'transfers/creation.ts',
    'transfers/machine.ts',
    'transfers/watcher-store.ts',
    'transfers/policies.ts',
    'transfers/signing-step.ts',
    'wallets/store.ts',
    'wallets/service.ts',
    'wallets/archive.ts',
    'wallets/groups.ts',
    'signers/service.ts',
    'keys/service.ts',
    'devices/service.ts',
    'users/service.ts',
    'users/sessions.ts',
    'users/geo-anomaly.ts',
    'signing/blame-store.ts',
  ];
  return files.map((f) => readFileSync(join(here, '..', 'src', f), 'utf8')).join('\n');
}

describe('every event type fires', () => {
  it('the table covers exactly the event types of events.ts', () => {
    expect(Object.keys(FIRED_BY).sort()).toEqual([...WEBHOOK_EVENT_TYPES].sort());
    expect(WEBHOOK_EVENT_TYPES).toHaveLength(38);
  });

  it.each(WEBHOOK_EVENT_TYPES.map((t) => [t]))('%s: the named test exists and reads it from the outbox', (type) => {
    const f = FIRED_BY[type];
    const src = readFileSync(join(root, f.file), 'utf8');
    const body = testBody(src, f.test);
    expect(body, `${f.file}: no test named ${f.test}`).toBeDefined();
    if (f.via === undefined) {
      expect(body).toContain(`'${type}'`);
    } else {
      expect(body).toContain(`${f.via}(`);
      const helper = src.slice(src.indexOf(`function ${f.via}(`));
      const end = Math.min(...['\n}\n', '\n  }\n'].map((e) => helper.indexOf(e)).filter((i) => i >= 0));
      expect(helper.slice(0, end)).toContain(`'${type}'`);
    }
  });

  it('the coordinator emits every type somewhere, and none is documented as without trigger', () => {
    const src = emittingSources();
    const missing = WEBHOOK_EVENT_TYPES.filter((t) => !src.includes(`'${t}'`));
    expect(missing).toEqual([]);
    const reserved = WEBHOOK_EVENT_TYPES.filter((t) => /^reserved|no trigger/i.test(WEBHOOK_EVENT_DOCS[t].trigger));
    expect(reserved).toEqual([]);
    const doc = readFileSync(join(root, 'docs', 'webhooks.md'), 'utf8');
    const table = doc.slice(doc.indexOf('## Events and triggers'), doc.indexOf('**Instance events**'));
    expect(table).not.toMatch(/\|\s*reserved|no trigger/i);
  });
});
