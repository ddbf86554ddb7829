/**
 * Issue #29 "Observability", signer side: two real signer daemons (processes), one with the health
 * port from its config (`healthPort`), one from the flag (`--health-port`), and the test as their
 * coordinator (ControlClient). `/healthz` 200; `/readyz` 503 until the coordinator connects (store
 * pass, coordinator fail, keys skipped), 200 after; a master key ceremony (FROST) moves
 * `/metrics` (ceremonies by kind and outcome, durations, keys held); the port binds 127.0.0.1.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ControlClient } from '@custodian/signer-client';
import { CeremonyKind, KeyAlgorithm, Outcome } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';
import { SIGNER_METRIC_NAMES } from '../src/health.js';
import {
  buildSigner,
  freePort,
  initNode,
  MAIN,
  type NodeSpec,
  PASS,
  ROOT,
  readLog,
  startNode,
  stopNode,
  tempDir,
  waitFor,
  writeConfig,
} from './cluster.js';

/** The type of each signer metric (docs/observability.md "Signer metrics"). */
const TYPES: Record<string, string> = {
  custodian_signer_ceremonies_total: 'counter',
  custodian_signer_ceremony_duration_seconds: 'histogram',
  custodian_signer_presignatures_held: 'gauge',
  custodian_signer_keys: 'gauge',
  custodian_signer_coordinator_connected: 'gauge',
};

/** A sample value of the exposition `text` (`name{labels}` exactly as prom-client writes them). */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

describe('signer health port', () => {
  let dir: string;
  let nodes: NodeSpec[];
  const ports: number[] = [];
  let control: ControlClient | undefined;
  let coordPeer: string;
  let coordKey: Awaited<ReturnType<typeof generateKeyPair>>;

  beforeAll(async () => {
    buildSigner();
    dir = tempDir('health-port');
    coordKey = await generateKeyPair('Ed25519');
    coordPeer = peerIdFromPrivateKey(coordKey).toString();
    nodes = [initNode(dir, 'signer0', await freePort()), initNode(dir, 'signer1', await freePort())];
    ports.push(await freePort(), await freePort());
    writeConfig(nodes[0]!, nodes, { peerId: coordPeer }, { healthPort: ports[0], allowUnenforcedSigning: true });
    writeConfig(nodes[1]!, nodes, { peerId: coordPeer }, { allowUnenforcedSigning: true });
    await startNode(nodes[0]!);
    // the second from the flag
    const n = nodes[1]!;
    const out = createWriteStream(n.logFile, { flags: 'a' });
    const proc = spawn(process.execPath, [MAIN, 'signer', 'start', '-c', n.config, '--health-port', String(ports[1])], {
      env: { ...process.env, CUSTODIAN_TEST_PASS: PASS },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, which stopNode kills (cluster.ts)
    });
    proc.stdout?.pipe(out);
    proc.stderr?.pipe(out);
    n.proc = proc;
    await waitFor(() => readLog(n).includes('"signer started"') || proc.exitCode !== null, 30_000, 'signer1 start');
    expect(proc.exitCode, readLog(n)).toBeNull();
  }, 120_000);

  afterAll(async () => {
    await control?.stop().catch(() => {});
    await Promise.all((nodes ?? []).map((n) => stopNode(n, 'SIGKILL')));
    if (dir && !process.env.CUSTODIAN_KEEP_TEST_DIR) rmSync(dir, { recursive: true, force: true });
  });

  it('healthz 200; readyz 503 until the coordinator connects, then 200; a ceremony moves the metrics', async () => {
    for (const port of ports) {
      const base = `http://127.0.0.1:${port}`;
      const live = await fetch(`${base}/healthz`);
      expect(live.status).toBe(200);
      expect(await live.json()).toEqual({ status: 'ok' });
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({
        status: 'not_ready',
        checks: [
          { name: 'store', state: 'pass', reason: 'open' },
          { name: 'coordinator', state: 'fail', reason: 'not connected (the coordinator dials this signer)' },
          { name: 'keys', state: 'skip', reason: 'no key yet' },
        ],
      });
    }
    for (const n of nodes) expect(readLog(n)).toMatch(/"url":"http:\/\/127\.0\.0\.1:\d+","msg":"health port listening/);

    control = await ControlClient.create(
      coordKey,
      new Map(nodes.map((n) => [n.peerId, [`/ip4/127.0.0.1/tcp/${n.port}`]])),
    );
    const ceremonyId = crypto.getRandomValues(new Uint8Array(16));
    const results = await Promise.all(
      nodes.map((n) =>
        (control as ControlClient).startCeremony(
          n.peerId,
          {
            ceremonyId,
            kind: CeremonyKind.MASTER_KEY,
            parties: nodes.map((x) => ({ peerId: x.peerId })),
            threshold: 2,
            deadlineUnixMs: Date.now() + 60_000,
            algorithms: [KeyAlgorithm.ED25519],
          },
          70_000,
        ),
      ),
    );
    for (const r of results) expect(r.outcome, r.error).toBe(Outcome.OK);

    for (const port of ports) {
      const base = `http://127.0.0.1:${port}`;
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({
        status: 'ready',
        checks: [
          { name: 'store', state: 'pass', reason: 'open' },
          { name: 'coordinator', state: 'pass', reason: 'connected' },
          { name: 'keys', state: 'pass', reason: '1 held' },
        ],
      });
      const m = await fetch(`${base}/metrics`);
      expect(m.headers.get('content-type')).toMatch(/^text\/plain/);
      const text = await m.text();
      const ok = '{kind="master_key",outcome="ok"}';
      expect(sample(text, `custodian_signer_ceremonies_total${ok}`)).toBe(1);
      expect(sample(text, `custodian_signer_ceremony_duration_seconds_count${ok}`)).toBe(1);
      expect(sample(text, `custodian_signer_ceremony_duration_seconds_sum${ok}`)).toBeGreaterThan(0);
      expect(sample(text, 'custodian_signer_keys')).toBe(1);
      expect(sample(text, 'custodian_signer_coordinator_connected')).toBe(1);
      for (const name of SIGNER_METRIC_NAMES) expect(text).toContain(`# TYPE ${name} ${TYPES[name]}\n`);
    }
  }, 120_000);
});

describe('docs/observability.md, signer metrics', () => {
  it('its table lists exactly the signer metrics, with their types; the dashboard shows each', () => {
    const doc = readFileSync(join(ROOT, 'docs/observability.md'), 'utf8');
    const section = doc.split('## Signer metrics')[1]?.split('\n## ')[0] ?? '';
    const rows = [...section.matchAll(/^\| `(custodian_signer_[a-z_]+)` +\| (counter|gauge|histogram) +\|/gm)];
    expect(rows.map((r) => r[1]).sort()).toEqual([...SIGNER_METRIC_NAMES].sort());
    for (const r of rows) expect(r[2], r[1]).toBe(TYPES[r[1] as string]);
    const dash = readFileSync(join(ROOT, 'docs/grafana-dashboard.json'), 'utf8');
    for (const name of SIGNER_METRIC_NAMES) expect(dash, name).toContain(name);
  });
});

describe('healthPort / healthHost config', () => {
  const base = {
    dataDir: 'd',
    peers: [],
    coordinator: { peerId: '12D3KooWDriB8JmATtubbnW4d6iuWp8tUHCsbSXp3zjBtPpPbwr9' },
    passphrase: { env: 'X' },
  };
  it('off by default; a port number and a bind address otherwise; errors name the key', () => {
    const off = parseConfig(base, '/');
    expect(off.healthPort).toBeUndefined();
    expect(off.healthHost).toBeUndefined();
    const on = parseConfig({ ...base, healthPort: 9464, healthHost: '10.0.0.5' }, '/');
    expect([on.healthPort, on.healthHost]).toEqual([9464, '10.0.0.5']);
    for (const bad of [-1, 65536, 1.5, '9464'])
      expect(() => parseConfig({ ...base, healthPort: bad }, '/')).toThrow(/^healthPort: /);
    expect(() => parseConfig({ ...base, healthPort: 1, healthHost: '' }, '/')).toThrow(/^healthHost: /);
  });
});
