/**
 * docs/operator-guide.md is the source of the walkthrough script's commands (issue #29: docs that
 * work when followed literally): every command `scripts/operator-walkthrough.sh` runs as the
 * guide's (`guide '<command>'`, and the daemons' `'custodian … start|run …'` lines) appears
 * verbatim, as one line, in a shell block of the guide. A command changed in one place and not the
 * other fails here; operator-walkthrough.slow.test.ts runs the script itself.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../../../', import.meta.url);

/** The guide's commands the script runs, as written in the script (single-quoted, no quote inside). */
function scriptCommands(script: string): string[] {
  const out: string[] = [];
  for (const line of script.split('\n')) {
    const inline = /(?:^|[\s($])guide '([^']*)'/.exec(line);
    if (inline?.[1] !== undefined) out.push(inline[1]);
    const own = /^\s*'(custodian [^']*)'\s*\\?$/.exec(line);
    if (own?.[1] !== undefined) out.push(own[1]);
  }
  return out;
}

/** Lines inside the guide's ```sh blocks, trimmed. */
function guideShellLines(guide: string): Set<string> {
  const lines = new Set<string>();
  for (const m of guide.matchAll(/```sh\n([\s\S]*?)```/g))
    for (const l of (m[1] ?? '').split('\n')) lines.add(l.trim());
  return lines;
}

describe('operator guide ↔ walkthrough script', () => {
  it('every command the script runs as the guide’s is a line of a shell block of the guide', async () => {
    const script = await readFile(new URL('scripts/operator-walkthrough.sh', root), 'utf8');
    const guide = await readFile(new URL('docs/operator-guide.md', root), 'utf8');
    const commands = scriptCommands(script);
    // the walkthrough's backbone is there (the extraction itself works)
    expect(commands.length).toBeGreaterThan(25);
    for (const c of [
      'coordinator peer-id',
      'coordinator start',
      'signer init',
      'signer start',
      'signer reload',
      'mobile enroll',
      'devices approve',
      'mobile run',
      'master-keys create',
      'chains enable',
      'mobile sign-policy',
      'wallets create',
    ])
      expect(
        commands.some((x) => x.includes(c)),
        c,
      ).toBe(true);
    const lines = guideShellLines(guide);
    const missing = commands.filter((c) => !lines.has(c));
    expect(missing).toEqual([]);
  });

  it('the check fails for a command the guide does not show', () => {
    const commands = scriptCommands(`  guide 'custodian admin frobnicate --all'\n`);
    expect(commands).toEqual(['custodian admin frobnicate --all']);
    expect(guideShellLines('```sh\ncustodian admin chains list --all\n```\n').has(commands[0] as string)).toBe(false);
  });

  it('the passphrase recipe works literally on a host where the config folder does not exist yet', async () => {
    const guide = await readFile(new URL('docs/operator-guide.md', root), 'utf8');
    const lines = guideShellLines(guide);
    const recipe = [
      'install -d -m 0750 -o "$CUSTODIAN_USER" "$CUSTODIAN_ETC"',
      'install -m 0600 -o "$CUSTODIAN_USER" /dev/null "$CUSTODIAN_ETC/$SIGNER.passphrase"',
      'openssl rand -base64 32 > "$CUSTODIAN_ETC/$SIGNER.passphrase"',
    ];
    for (const l of recipe) expect(lines.has(l), l).toBe(true);
    const base = await mkdtemp(join(tmpdir(), 'custodian-recipe-'));
    try {
      const etc = join(base, 'etc', 'custodian'); // two levels missing, as on a fresh host
      const user = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();
      execFileSync('bash', ['-euo', 'pipefail', '-c', recipe.join('\n')], {
        env: { PATH: process.env.PATH ?? '', CUSTODIAN_ETC: etc, CUSTODIAN_USER: user, SIGNER: 's1' },
      });
      expect((await stat(etc)).mode & 0o777).toBe(0o750);
      const file = join(etc, 's1.passphrase');
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      expect((await readFile(file, 'utf8')).trim()).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });
});
