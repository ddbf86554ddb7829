/**
 * `custodian admin audit` (the append-only audit log, newest first) and `custodian admin mailbox`
 * (development: the messages the coordinator wrote to its mailbox folder instead of sending them).
 */
import { readMailbox } from '@custodian/coordinator';
import { type AdminContext, type PageFlags, pageOpts, pageQuery } from './context.js';

/** Register `audit` and `mailbox` on `admin`. */
export function registerAuditCommands(ctx: AdminContext): void {
  const { io } = ctx;
  pageOpts(ctx.admin.command('audit').description('the append-only audit log, newest first')).action(
    ctx.run(async (o: PageFlags) =>
      ctx.print(await (await ctx.client()).listAudit(pageQuery(o)), [
        'at',
        'action',
        'actor_user_id',
        'target_type',
        'target_id',
      ]),
    ),
  );
  ctx.admin
    .command('mailbox')
    .description('development: read the coordinator mailbox folder (<data>/mailbox)')
    .requiredOption('--dir <dir>', 'mailbox folder')
    .option('--last', 'only the newest message')
    .action(
      ctx.run(async (o: { dir: string; last?: boolean }) => {
        const mails = await readMailbox(o.dir);
        const shown = o.last ? mails.slice(-1) : mails;
        if (ctx.json) return ctx.print(shown);
        for (const m of shown) io.out(`--- ${m.file}\nTo: ${m.to}\nSubject: ${m.subject}\n\n${m.text}\n`);
        if (shown.length === 0) io.out('(no messages)');
      }),
    );
}
