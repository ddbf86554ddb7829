/** `custodian admin devices …`: mobile signer devices and their enrollment requests. */
import { Option } from 'commander';
import { type AdminContext, type PageFlags, pageOpts, pageQuery } from './context.js';

/** Register `devices` on `admin`. */
export function registerDeviceCommands(ctx: AdminContext): void {
  const devices = ctx.admin.command('devices').description('mobile signer devices and enrollment requests');
  pageOpts(
    devices
      .command('list')
      .description('devices, oldest first')
      .addOption(new Option('--status <status>').choices(['PENDING', 'APPROVED', 'REJECTED', 'REMOVED'])),
  ).action(
    ctx.run(async (o: PageFlags & { status?: string }) =>
      ctx.print(await (await ctx.client()).listDevices({ status: o.status, ...pageQuery(o) }), [
        'device_id',
        'name',
        'platform',
        'os_version',
        'status',
        'fingerprint',
      ]),
    ),
  );
  devices
    .command('show <device_id>')
    .description('one device')
    .action(ctx.run(async (id: string) => ctx.print(await (await ctx.client()).getDevice(id))));
  devices
    .command('approve <device_id>')
    .description('approve after comparing the fingerprint shown on the phone, binding the device to its user')
    .requiredOption('--fingerprint <fingerprint>', 'as read from the phone (spaces optional)')
    .requiredOption(
      '--user <user>',
      "the dashboard user who holds the phone: user id or e-mail (only an Admin's own devices sign policies)",
    )
    .action(
      ctx.run(async (id: string, o: { fingerprint: string; user: string }) => {
        const api = await ctx.client();
        let userId = o.user;
        if (o.user.includes('@')) {
          const users = await api.listUsers({ page_size: 200 });
          const u = users.data.find((x) => x.email.toLowerCase() === o.user.toLowerCase());
          if (u === undefined) throw new Error(`no user ${o.user}`);
          userId = u.user_id;
        }
        ctx.print(await api.approveDevice(id, { fingerprint: o.fingerprint, user_id: userId }));
      }),
    );
  devices
    .command('reject <device_id>')
    .description('reject an enrollment request')
    .action(ctx.run(async (id: string) => ctx.print(await (await ctx.client()).rejectDevice(id))));
  devices
    .command('remove <device_id>')
    .description('remove a device')
    .action(ctx.run(async (id: string) => ctx.print(await (await ctx.client()).removeDevice(id))));
}
