/**
 * Issue #29 "Packaging": the deployment files cannot rot. Every `custodian …` command line in the
 * systemd units (deploy/systemd/*.service ExecStart), compose.yaml (the custodian image's services)
 * and the Dockerfile's CMD is parsed by the real `custodian` program (createProgram, the same
 * commander tree `custodian <subcommand> --help` prints): every subcommand must exist, every flag
 * must be one the subcommand accepts, every required option must be given. The coordinator's
 * flags then go through the CLI's own option builder with compose's config file, and the compose
 * signer config template passes the signer's config validation.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfig } from '@custodian/signer';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { coordinatorOptionsFromFlags } from '../src/coordinator.js';
import { createProgram } from '../src/index.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');

interface Parsed {
  readonly path: string[];
  readonly command: Command;
  readonly operands: string[];
}

/**
 * Parse `argv` (after `custodian`) as commander would, without running the action.
 * @throws Error naming the unknown subcommand, unknown flag or missing required option
 */
function parseCommandLine(argv: readonly string[], where: string): Parsed {
  let cmd: Command = createProgram();
  const path: string[] = [];
  let rest = [...argv];
  while (rest.length > 0 && cmd.commands.length > 0) {
    const next = cmd.commands.find((c) => c.name() === rest[0] || c.aliases().includes(rest[0] as string));
    if (!next) throw new Error(`${where}: custodian ${[...path, rest[0]].join(' ')}: no such subcommand`);
    path.push(rest[0] as string);
    cmd = next;
    rest = rest.slice(1);
  }
  if (cmd.commands.length > 0) throw new Error(`${where}: custodian ${path.join(' ')} needs a subcommand`);
  const { operands, unknown } = cmd.parseOptions(rest);
  if (unknown.length > 0) throw new Error(`${where}: custodian ${path.join(' ')} does not accept ${unknown.join(' ')}`);
  for (const o of cmd.options)
    if (o.mandatory && cmd.getOptionValue(o.attributeName()) === undefined)
      throw new Error(`${where}: custodian ${path.join(' ')} requires ${o.flags}`);
  if (operands.length > cmd.registeredArguments.length)
    throw new Error(`${where}: custodian ${path.join(' ')}: unexpected arguments ${operands.join(' ')}`);
  return { path, command: cmd, operands };
}

/** systemd specifiers and environment references as an operator's machine would expand them. */
function expandSystemd(line: string): string[] {
  return line
    .replace(/%i/g, 's1')
    .replace(/\$\{(\w+)\}/g, (_m, name: string) => `value-of-${name}`)
    .split(/\s+/)
    .filter(Boolean);
}

/** Compose interpolation: `${VAR}`, `${VAR:-default}`, `${VAR:?message}` → a value. */
function expandCompose(s: string): string {
  return s.replace(/\$\{(\w+)(?::?([-?])([^}]*))?\}/g, (_m, name: string, kind?: string, arg?: string) =>
    kind === '-' && arg ? arg : `value-of-${name}`,
  );
}

function unitCommandLines(): { where: string; argv: string[] }[] {
  const dir = join(ROOT, 'deploy/systemd');
  const out: { where: string; argv: string[] }[] = [];
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.service'))) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      const m = /^ExecStart=(.*)$/.exec(line);
      if (!m) continue;
      const [bin, ...argv] = expandSystemd(m[1] as string);
      expect(bin, `${f}: ExecStart runs the installed custodian command`).toMatch(/\/custodian$/);
      out.push({ where: `deploy/systemd/${f}`, argv });
    }
  }
  return out;
}

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  volumes?: string[];
  read_only?: boolean;
  tmpfs?: string[];
  healthcheck?: { test?: string[] };
  depends_on?: Record<string, { condition: string }>;
}

function composeServices(): Record<string, ComposeService> {
  const doc = parseYaml(read('compose.yaml'), { merge: true }) as { services: Record<string, ComposeService> };
  return doc.services;
}

/** The services that run the custodian image (its entrypoint is `custodian`). */
function composeCommandLines(): { where: string; service: ComposeService; argv: string[] }[] {
  return Object.entries(composeServices())
    .filter(([, s]) => s.build !== undefined)
    .map(([name, s]) => {
      if (!Array.isArray(s.command)) throw new Error(`compose.yaml ${name}: command must be a list`);
      return {
        where: `compose.yaml services.${name}`,
        service: s,
        argv: s.command.map((a) => expandCompose(String(a))),
      };
    });
}

describe('deployment files use commands and flags the custodian CLI accepts', () => {
  it('the parser refuses an unknown flag, an unknown subcommand and a missing required option', () => {
    expect(() => parseCommandLine(['coordinator', 'start', '--no-such-flag'], 'probe')).toThrow(
      /does not accept --no-such-flag/,
    );
    expect(() => parseCommandLine(['coordinator', 'launch'], 'probe')).toThrow(/no such subcommand/);
    expect(() => parseCommandLine(['signer', 'start'], 'probe')).toThrow(/requires -c, --config/);
    expect(parseCommandLine(['signer', 'start', '-c', 'x.json'], 'probe').path).toEqual(['signer', 'start']);
  });

  it('systemd units: each ExecStart is a valid custodian command line', async () => {
    const lines = unitCommandLines();
    expect(lines.map((l) => l.where).sort()).toEqual([
      'deploy/systemd/custodian-coordinator.service',
      'deploy/systemd/custodian-signer@.service',
    ]);
    const paths = lines.map((l) => parseCommandLine(l.argv, l.where).path.join(' ')).sort();
    expect(paths).toEqual(['coordinator start', 'signer start']);
    const coord = lines.find((l) => l.where.endsWith('custodian-coordinator.service'));
    const parsed = parseCommandLine(coord?.argv ?? [], 'coordinator unit');
    const opts = parsed.command.opts();
    expect(opts).toMatchObject({ mode: 'production', dataDir: '/var/lib/custodian/coordinator' });
    const { config: _config, ...flags } = opts;
    await expect(coordinatorOptionsFromFlags({ ...flags } as never)).resolves.toMatchObject({ mode: 'production' });
  });

  it('Dockerfile: the default command is a valid custodian command line under the custodian entrypoint', () => {
    const file = read('Dockerfile');
    expect(/^ENTRYPOINT \["custodian"\]$/m.test(file)).toBe(true);
    const cmd = /^CMD (\[.*\])$/m.exec(file);
    const argv = JSON.parse(cmd?.[1] ?? '[]') as string[];
    expect(parseCommandLine(argv, 'Dockerfile CMD').path).toEqual(['coordinator', 'start']);
  });

  it('compose.yaml: the coordinator and both signers run valid custodian command lines', async () => {
    const lines = composeCommandLines();
    expect(lines.map((l) => l.where).sort()).toEqual([
      'compose.yaml services.coordinator',
      'compose.yaml services.signer-1',
      'compose.yaml services.signer-2',
    ]);
    for (const l of lines) {
      const parsed = parseCommandLine(l.argv, l.where);
      if (parsed.path.join(' ') !== 'coordinator start') {
        expect(parsed.path).toEqual(['signer', 'start']);
        continue;
      }
      // the config file the coordinator reads is the repository's deploy/compose/coordinator.json
      const opts = parsed.command.opts() as { config: string; mode: string };
      const mount = (l.service.volumes ?? []).find((v) => v.split(':')[1] === opts.config);
      expect(mount, `${l.where}: --config ${opts.config} is mounted from the repository`).toBeDefined();
      const options = await coordinatorOptionsFromFlags({
        ...opts,
        config: join(ROOT, (mount as string).split(':')[0] as string),
      } as never);
      expect(options).toMatchObject({
        mode: 'production',
        chains: { 'ethereum-local': { rpcUrl: 'http://anvil:8545' } },
      });
    }
  });

  it('compose: each signer mounts its config at the path its command reads, and the template is a valid signer config', () => {
    const services = composeServices();
    for (const name of ['signer-1', 'signer-2']) {
      const s = services[name] as ComposeService;
      const config = parseCommandLine(
        (s.command as string[]).map((a) => expandCompose(a)),
        name,
      ).command.opts().config as string;
      expect(s.volumes?.some((v) => v.endsWith(`:${config}:ro`) && v.startsWith(`./deploy/compose/${name}.json`))).toBe(
        true,
      );
    }
    const template = read('deploy/compose/signer.example.json')
      .replace('OTHER_SIGNER_PEER_ID', '12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA')
      .replace('COORDINATOR_PEER_ID', '12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN')
      .replace('OTHER_SIGNER', 'signer-2')
      .replace('THIS_SIGNER', 'signer-1');
    const config = parseConfig(JSON.parse(template), '/etc/custodian');
    expect(config).toMatchObject({
      dataDir: '/var/lib/custodian/signer',
      generationFile: '/var/lib/custodian-state/generation.json',
      passphrase: { file: '/run/secrets/signer-1-passphrase' },
    });
    expect(Object.keys(services['signer-1'] ?? {})).toContain('secrets');
  });

  it('compose: every service runs on a read-only root with a tmpfs /tmp and a healthcheck; the coordinator waits for healthy dependencies', () => {
    const services = composeServices();
    expect(Object.keys(services).sort()).toEqual(['anvil', 'coordinator', 'postgres', 'signer-1', 'signer-2']);
    for (const [name, s] of Object.entries(services)) {
      expect(s.read_only, `${name}: read_only`).toBe(true);
      expect(
        s.tmpfs?.some((t) => t.split(':')[0] === '/tmp'),
        `${name}: tmpfs /tmp`,
      ).toBe(true);
      expect(s.healthcheck?.test?.[0], `${name}: healthcheck`).toBe('CMD');
    }
    expect(services.coordinator?.depends_on).toEqual({
      postgres: { condition: 'service_healthy' },
      anvil: { condition: 'service_healthy' },
    });
    expect(services.coordinator?.healthcheck?.test?.join(' ')).toContain('/healthz');
  });
});
