/**
 * `custodian admin webhooks …` (webhooks of a profile, their delivery notifications and
 * redelivery, the webhook signing keys and their rotation) and `custodian admin instance-webhooks …`
 * (instance-level webhooks: user, device, server signer and security events).
 */

import type { UpdateWebhookInput } from '@custodian/coordinator/admin-api-types';
import { type AdminContext, eventTypes, type PageFlags, pageOpts, pageQuery } from './context.js';

const NOTIFICATION_COLUMNS = [
  'notification_id',
  'event_type',
  'status',
  'attempt_count',
  'last_response_code',
  'next_attempt_at',
];

type WebhookFlags = { url?: string; events?: string[]; description?: string };

/** The body of a webhook update from its flags (only the given ones). */
function updateBody(o: WebhookFlags): UpdateWebhookInput {
  const body: UpdateWebhookInput = {};
  if (o.url) body.url = o.url;
  if (o.events) body.event_types = eventTypes(o.events);
  if (o.description !== undefined) body.description = o.description;
  return body;
}

/** Register `webhooks` on `admin`. */
export function registerWebhookCommands(ctx: AdminContext): void {
  const hooks = ctx.admin.command('webhooks').description('webhook registrations of a profile');
  pageOpts(hooks.command('list <profile_id>').description('webhooks, oldest first')).action(
    ctx.run(async (p: string, o: PageFlags) =>
      ctx.print(await (await ctx.client()).listWebhooks(p, pageQuery(o)), [
        'webhook_id',
        'url',
        'event_types',
        'description',
      ]),
    ),
  );
  hooks
    .command('create <profile_id>')
    .description('register a webhook (HTTPS)')
    .requiredOption('--url <url>')
    .requiredOption('--events <types...>', 'event types, e.g. TRANSFER_UPDATED WALLET_CREATED')
    .option('--description <text>')
    .action(
      ctx.run(async (p: string, o: { url: string; events: string[]; description?: string }) =>
        ctx.print(
          await (await ctx.client()).createWebhook(p, {
            url: o.url,
            event_types: eventTypes(o.events),
            ...(o.description !== undefined ? { description: o.description } : {}),
          }),
        ),
      ),
    );
  hooks
    .command('show <profile_id> <webhook_id>')
    .description('one webhook')
    .action(ctx.run(async (p: string, id: string) => ctx.print(await (await ctx.client()).getWebhook(p, id))));
  hooks
    .command('update <profile_id> <webhook_id>')
    .description('change URL, event types or description')
    .option('--url <url>')
    .option('--events <types...>')
    .option('--description <text>')
    .action(
      ctx.run(async (p: string, id: string, o: WebhookFlags) =>
        ctx.print(await (await ctx.client()).updateWebhook(p, id, updateBody(o))),
      ),
    );
  hooks
    .command('delete <profile_id> <webhook_id>')
    .description('delete a webhook')
    .action(ctx.run(async (p: string, id: string) => ctx.print(await (await ctx.client()).deleteWebhook(p, id))));
  pageOpts(
    hooks
      .command('notifications <profile_id> <webhook_id>')
      .description('delivery notifications of a webhook, newest first')
      .option('--status <status>', 'PENDING | DELIVERED | FAILED'),
  ).action(
    ctx.run(async (p: string, id: string, o: PageFlags & { status?: string }) =>
      ctx.print(
        await (await ctx.client()).listNotifications(p, id, { ...pageQuery(o), status: o.status || undefined }),
        NOTIFICATION_COLUMNS,
      ),
    ),
  );
  hooks
    .command('redeliver <profile_id> <webhook_id> <notification_id>')
    .description('redeliver a FAILED notification (a fresh series of up to 5 attempts, same event_id)')
    .action(
      ctx.run(async (p: string, id: string, n: string) => ctx.print(await (await ctx.client()).redeliver(p, id, n))),
    );
  hooks
    .command('keys')
    .description('webhook signing keys (kid, state, activation, retirement, expiry)')
    .action(
      ctx.run(async () =>
        ctx.print(await (await ctx.client()).listSigningKeys(), [
          'kid',
          'state',
          'created_at',
          'activates_at',
          'retires_at',
          'expires_at',
        ]),
      ),
    );
  hooks
    .command('rotate-key')
    .description('rotate the signing key: published now, signs after the lead time; the old key overlaps')
    .option('--lead-seconds <n>', 'seconds between publication and first signature (default: configured, 1 h)')
    .action(
      ctx.run(async (o: { leadSeconds?: string }) =>
        ctx.print(
          await (await ctx.client()).rotateSigningKey(
            o.leadSeconds !== undefined ? { lead_seconds: Number.parseInt(o.leadSeconds, 10) } : {},
          ),
        ),
      ),
    );
}

/** Register `instance-webhooks` on `admin`. */
export function registerInstanceWebhookCommands(ctx: AdminContext): void {
  const ihooks = ctx.admin
    .command('instance-webhooks')
    .description('instance-level webhooks: user, device, server signer and security events (ROLE_SCOPE_LOGIN …)');
  pageOpts(ihooks.command('list').description('instance-level webhooks, oldest first')).action(
    ctx.run(async (o: PageFlags) =>
      ctx.print(await (await ctx.client()).listInstanceWebhooks(pageQuery(o)), [
        'webhook_id',
        'url',
        'event_types',
        'description',
      ]),
    ),
  );
  ihooks
    .command('create')
    .description('register an instance-level webhook (HTTPS)')
    .requiredOption('--url <url>')
    .requiredOption('--events <types...>', 'instance event types, e.g. USER_CREATED ROLE_SCOPE_LOGIN')
    .option('--description <text>')
    .action(
      ctx.run(async (o: { url: string; events: string[]; description?: string }) =>
        ctx.print(
          await (await ctx.client()).createInstanceWebhook({
            url: o.url,
            event_types: eventTypes(o.events),
            ...(o.description !== undefined ? { description: o.description } : {}),
          }),
        ),
      ),
    );
  ihooks
    .command('show <webhook_id>')
    .description('one instance-level webhook')
    .action(ctx.run(async (id: string) => ctx.print(await (await ctx.client()).getInstanceWebhook(id))));
  ihooks
    .command('update <webhook_id>')
    .description('change URL, event types or description')
    .option('--url <url>')
    .option('--events <types...>')
    .option('--description <text>')
    .action(
      ctx.run(async (id: string, o: WebhookFlags) =>
        ctx.print(await (await ctx.client()).updateInstanceWebhook(id, updateBody(o))),
      ),
    );
  ihooks
    .command('delete <webhook_id>')
    .description('delete an instance-level webhook')
    .action(ctx.run(async (id: string) => ctx.print(await (await ctx.client()).deleteInstanceWebhook(id))));
  pageOpts(
    ihooks
      .command('notifications <webhook_id>')
      .description('delivery notifications of an instance-level webhook, newest first')
      .option('--status <status>', 'PENDING | DELIVERED | FAILED'),
  ).action(
    ctx.run(async (id: string, o: PageFlags & { status?: string }) =>
      ctx.print(
        await (await ctx.client()).listInstanceNotifications(id, { ...pageQuery(o), status: o.status || undefined }),
        NOTIFICATION_COLUMNS,
      ),
    ),
  );
  ihooks
    .command('redeliver <webhook_id> <notification_id>')
    .description('redeliver a FAILED notification (a fresh series of up to 5 attempts, same event_id)')
    .action(ctx.run(async (id: string, n: string) => ctx.print(await (await ctx.client()).redeliverInstance(id, n))));
}
