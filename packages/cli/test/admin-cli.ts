/**
 * Run `custodian admin <globalArgs…> <args…>` in-process (the commander program over real HTTP), as
 * the admin CLI tests do: output and error lines captured, `HOME` set to `home`, the exit code read
 * from (and reset in) `process.exitCode`.
 */
import { Command } from 'commander';
import { type CliIo, registerAdminCommands } from '../src/admin/index.js';

export async function runAdmin(
  home: string,
  globalArgs: readonly string[],
  args: readonly string[],
): Promise<{ out: string; err: string; code: number }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = { out: (s) => out.push(s), err: (s) => err.push(s), env: { HOME: home } };
  const program = new Command('custodian').exitOverride();
  registerAdminCommands(program, io);
  process.exitCode = 0;
  await program.parseAsync(['node', 'custodian', 'admin', ...globalArgs, ...args]);
  const code = Number(process.exitCode ?? 0);
  process.exitCode = 0;
  return { out: out.join('\n'), err: err.join('\n'), code };
}
