/**
 * Coordinator replicas (issue #25): end-to-end transfer throughput and latency with ONE coordinator
 * replica against TWO, on one PostgreSQL database, on this machine. The whole `custodian dev`
 * cluster runs as real processes (`startInstance` with `replicas: 2`: two coordinators, two server
 * signers, two phone simulators auto-approving, anvil), on a scratch database made on the server at
 * BENCH_DATABASE_URL / TEST_DATABASE_URL / postgres://postgres@127.0.0.1:5432/test and dropped at
 * the end; TEST-ONLY committed safe primes stand in for a prime search.
 *
 * Rounds alternate 1, 2, 1, 2, … (`BENCH_ROUNDS`, default 6) after one untimed warm-up round with
 * two: for a one-replica round replica 2 is stopped (cleanly: its leases released at once), for a
 * two-replica round it is started again and ready. Before each round the presignature pool is let
 * refill to its target (`custodian_presignature_pool_depth` of `/metrics`, at most 120 s), so every
 * round starts from a full pool ("pooled signing": `BENCH_POOL` presignatures per key and signing
 * set, default 8). A round creates `BENCH_BATCH` transfers (default 24, 0.001 ETH each, one phone
 * approval) spread over `BENCH_WALLETS` funded wallets (default 4, each its own source address
 * and nonces), 8 creates in flight, each on the next replica that runs (round robin), and polls
 * the transfer list every 250 ms until all are SENT.
 *
 * Figures (JSON lines, bench/src/harness.ts): `replicas.<n>.transfersPerSec` (per round: batch /
 * (last SENT seen − first create sent)), `replicas.<n>.createToSent` (ms, every transfer of the
 * rounds with n replicas: its POST sent → first poll that sees it SENT; ±250 ms of polling), and
 * the share of ECDSA signatures made from a pooled presignature in those rounds (`pooledShare`).
 * Run: `npx tsc -b && node bench/dist/replicas.js` (about 10 minutes on a shared 2-core machine).
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { createScratchDatabase, type Instance, startInstance } from '@custodian/cli';
import { report, summarise } from './harness.js';

const num = (v: string | undefined, d: number) => (v && Number.isFinite(Number(v)) ? Number(v) : d);
const ROUNDS = num(process.env.BENCH_ROUNDS, 6);
const BATCH = num(process.env.BENCH_BATCH, 24);
const WALLETS = num(process.env.BENCH_WALLETS, 4);
const POOL = num(process.env.BENCH_POOL, 8);
const WIDTH = 8;
const SERVER =
  process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const FUNDER = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'; // anvil's account #0 (unlocked dev account)
const LOG = join(tmpdir(), 'custodian-bench-replicas.log');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
  });
}

async function http<T>(method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<T> {
  const res = await fetch(url, {
    method,
    headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (!res.ok)
    throw Object.assign(new Error(`${method} ${url}: HTTP ${res.status} ${text.slice(0, 200)}`), {
      status: res.status,
    });
  return (text ? JSON.parse(text) : null) as T;
}

async function until<T>(what: string, f: () => Promise<T | undefined>, ms: number, every = 250): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(every);
  }
}

const primes = (
  JSON.parse(
    readFileSync(new URL('../../packages/paillier/test/fixtures/test-only-safe-primes.json', import.meta.url), 'utf8'),
  ) as { safePrimes1024: string[] }
).safePrimes1024;
const log = createWriteStream(LOG);
const say = (l: string) => log.write(`${new Date().toISOString()} ${stripVTControlCharacters(l)}\n`);
process.stderr.write(`bench replicas: cluster log in ${LOG}\n`);

const scratch = await createScratchDatabase(SERVER, 'custodian_bench');
const dir = await mkdtemp(join(tmpdir(), 'custodian-bench-replicas-'));
let inst: Instance | undefined;
try {
  inst = await startInstance({
    dataDir: dir,
    apiPort: 0,
    replicas: 2,
    replicaPorts: [await freePort(), await freePort()],
    databaseUrl: scratch.url,
    anvilPort: await freePort(),
    receiverPort: 0,
    signerPorts: [await freePort(), await freePort()],
    ecdsaLevel: 'SECURITY_112',
    presignaturePool: POOL,
    primeSeeds: [0, 1, 2, 3].map((k) => [primes[2 * k] as string, primes[2 * k + 1] as string]),
    verbose: true,
    say,
  });
  const I = inst;
  const { state } = I;
  const key = { 'x-api-key': state.api_key as string };
  const apis = I.baseUrls.map((u) => `${u}/api/v1/profiles/${state.profile_id}`);
  const up = (k: number) => {
    const c = I.coordinators[k]?.child;
    return c !== undefined && c.exitCode === null && c.signalCode === null;
  };

  // ---- wallets, funded from anvil's account #0 ----
  const wallets: string[] = [];
  for (let i = 0; i < WALLETS; i++) {
    const w = await http<{ wallet_id: string; addresses: { address: string }[] }>(
      'POST',
      `${apis[0]}/wallets`,
      { ...key, 'idempotency-key': randomUUID() },
      { name: `bench ${i}`, blockchain_ids: [state.ethereum_local_id] },
    );
    await http(
      'POST',
      I.anvilUrl,
      {},
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'eth_sendTransaction',
        params: [{ from: FUNDER, to: w.addresses[0]?.address, value: `0x${(10n ** 18n).toString(16)}` }],
      },
    );
    wallets.push(w.wallet_id);
  }
  for (const w of wallets)
    await until(
      'a bench wallet funded',
      async () => {
        const b = await http<{ amount: string }>('GET', `${apis[0]}/wallets/${w}/balances/${state.eth_asset_id}`, key);
        return b.amount === '1' ? true : undefined;
      },
      120_000,
      500,
    );

  /** Sum of the samples of replica `k`'s `/metrics` lines starting with `name` and containing every `labels`. */
  const metric = async (name: string, labels: readonly string[] = [], k = 0): Promise<number> => {
    const text = await (await fetch(`${I.baseUrls[k]}/metrics`)).text();
    let sum = 0;
    for (const l of text.split('\n'))
      if (l.startsWith(name) && labels.every((x) => l.includes(x))) sum += Number(l.slice(l.lastIndexOf(' ') + 1));
    return sum;
  };
  const poolFull = () =>
    until(
      'the presignature pool at its target',
      async () => {
        const [depth, target] = await Promise.all([
          metric('custodian_presignature_pool_depth'),
          metric('custodian_presignature_pool_target'),
        ]);
        return target > 0 && depth >= target ? true : undefined;
      },
      120_000,
      1000,
    ).catch(() => say('bench: the pool did not reach its target within 120 s; round started anyway'));

  /** One round: BATCH transfers over the running replicas; returns the throughput and the latencies. */
  const round = async (label: string) => {
    const live = [0, 1].filter(up);
    const sentAt = new Map<string, number>();
    const postedAt = new Map<string, number>();
    let next = 0;
    let done = false;
    let failed: string | undefined;
    const t0 = Date.now();
    const poller = (async () => {
      let turn = 0;
      while (!done) {
        await sleep(250);
        const api = apis[live[turn++ % live.length] as number] as string;
        const page = await http<{ data: { transfer_id: string; status: string }[] }>(
          'GET',
          `${api}/transfers?page_size=200`,
          key,
        ).catch(() => undefined);
        const now = Date.now();
        for (const t of page?.data ?? [])
          if (postedAt.has(t.transfer_id) && !sentAt.has(t.transfer_id) && t.status === 'SENT')
            sentAt.set(t.transfer_id, now);
          else if (postedAt.has(t.transfer_id) && ['FAILED', 'REJECTED', 'EXPIRED'].includes(t.status))
            failed = `bench transfer ${t.transfer_id} ${t.status}`;
      }
    })();
    await Promise.all(
      Array.from({ length: WIDTH }, async () => {
        for (;;) {
          const i = next++;
          if (i >= BATCH) return;
          const t = Date.now();
          const r = await http<{ transfer_id: string }>(
            'POST',
            `${apis[live[i % live.length] as number]}/transfers`,
            { ...key, 'idempotency-key': randomUUID() },
            {
              wallet_id: wallets[i % wallets.length],
              destination_address: state.whitelisted,
              asset_id: state.eth_asset_id,
              amount: '0.001',
              external_id: `${label}-${i}`,
            },
          );
          postedAt.set(r.transfer_id, t);
        }
      }),
    );
    await until(
      `round ${label}: every transfer SENT`,
      async () => {
        return failed !== undefined || sentAt.size >= BATCH ? true : undefined;
      },
      600_000,
    ).finally(() => {
      done = true;
    });
    if (failed !== undefined) throw new Error(failed);
    done = true;
    await poller;
    const last = Math.max(...sentAt.values());
    const latencies = [...postedAt].map(([id, t]) => (sentAt.get(id) as number) - t);
    return { perSec: BATCH / ((last - t0) / 1000), latencies };
  };

  const setReplicas = async (n: 1 | 2) => {
    if (n === 1 && up(1)) await I.coordinators[1]?.stop();
    if (n === 2 && !up(1)) await I.startReplica(1);
  };
  /** ECDSA signatures made so far, pooled and cold, summed over the replicas that run. */
  const pooled = async (): Promise<[number, number]> => {
    let p = 0;
    let c = 0;
    for (const k of [0, 1].filter(up)) {
      p += await metric('custodian_signing_duration_seconds_count', ['presignature="pooled"', 'algorithm="ecdsa"'], k);
      c += await metric('custodian_signing_duration_seconds_count', ['presignature="cold"', 'algorithm="ecdsa"'], k);
    }
    return [p, c];
  };

  await poolFull();
  await round('warm-up');
  const perSec: Record<1 | 2, number[]> = { 1: [], 2: [] };
  const lat: Record<1 | 2, number[]> = { 1: [], 2: [] };
  const signatures: Record<1 | 2, { pooled: number; cold: number }> = {
    1: { pooled: 0, cold: 0 },
    2: { pooled: 0, cold: 0 },
  };
  for (let r = 0; r < ROUNDS; r++) {
    const n = r % 2 === 0 ? 1 : 2;
    await setReplicas(n);
    await poolFull();
    const [p0, c0] = await pooled();
    const res = await round(`r${r}-${n}`);
    const [p1, c1] = await pooled();
    signatures[n].pooled += p1 - p0;
    signatures[n].cold += c1 - c0;
    perSec[n].push(res.perSec);
    lat[n].push(...res.latencies);
    say(`bench: round ${r} with ${n} replica(s): ${res.perSec.toFixed(2)} transfers/s`);
  }
  for (const n of [1, 2] as const) {
    const s = signatures[n];
    const extra = {
      batch: BATCH,
      wallets: WALLETS,
      pool: POOL,
      rounds: perSec[n].length,
      pooledShare: s.pooled + s.cold > 0 ? Math.round((s.pooled / (s.pooled + s.cold)) * 100) / 100 : null,
    };
    report(summarise(`replicas.${n}.transfersPerSec`, perSec[n], 'transfers/s', extra));
    report(summarise(`replicas.${n}.createToSent`, lat[n], 'ms', extra));
  }
} finally {
  await inst?.stop();
  await scratch.drop().catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
  await new Promise<void>((r) => log.end(() => r()));
}
