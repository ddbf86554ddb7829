/**
 * The coordinator's readiness (`GET /readyz`, metrics/routes.ts) and the scrape-time values of
 * the metrics (metrics/registry.ts `DbSnapshot`). Checks:
 *
 * - `database`: `SELECT 1` answers;
 * - `migrations`: every migration of this release is recorded in `schema_migrations`;
 * - `signers:<master_key_id>`: at least `threshold` parties of the master key are connected now
 *   (a server signer by the libp2p link kept to it, a device by its hub WebSocket: the signer
 *   gateway's `availability`); skipped when this process runs no signing services;
 * - `chain:<key>`: the node of each configured blockchain answers its head height.
 *
 * Every check is bounded by `timeoutMs` and the whole result is cached for `cacheMs` (concurrent
 * requests share one run), so `/readyz` cannot be used to hammer the database or the chain nodes;
 * the scrape-time values of `/metrics` ({@link ReadinessProbe.snapshot}) are cached the same way.
 * Once the coordinator's stop has begun (`stopping`), the answer is `shutting_down` at once.
 * Reasons name what failed, never a URL, credential or key material.
 */
import type { SignParty } from '../signing/gateway.js';
import type { DbSnapshot } from './registry.js';

/** One check of the readiness answer. */
export interface ReadinessCheck {
  /** `database`, `migrations`, `signers:<master_key_id>`, `chain:<blockchain key>`. */
  name: string;
  state: 'pass' | 'fail' | 'skip';
  /** Why it failed or was skipped, or what passed (e.g. `2 of 2 parties connected, threshold 2`). */
  reason: string;
}

/** The readiness answer: `ready` when no check failed. */
export interface Readiness {
  ready: boolean;
  checks: ReadinessCheck[];
}

/** Settings of {@link ReadinessProbe} (config `health`). */
export interface ReadinessOptions {
  /** How long one result is reused, ms. Default 5000; 0 = every request runs the checks. */
  cacheMs: number;
  /** Bound of each check, ms. Default 2000. */
  timeoutMs: number;
}

export const DEFAULT_READINESS_OPTIONS: ReadinessOptions = { cacheMs: 5000, timeoutMs: 2000 };

/** The chain nodes as the probe needs them (transfers/chains.ts `ChainRegistry`). */
export interface ChainHeads {
  keys(): string[];
  headHeight(key: string): Promise<number>;
  watcherChain(key: string): string;
}

/** What the probe reads from the database, each query in the store of the room owning its table. */
export interface ReadinessQueries {
  /** Answers when the database does (`SELECT 1`). */
  ping(): Promise<unknown>;
  /** Migration versions of this release not applied (db/migrations.ts `pendingMigrations`). */
  pendingMigrations(): Promise<number[]>;
  /** Transfers per status (transfers/view.ts `countByStatus`). */
  transfersByStatus(): Promise<{ status: string; n: number }[]>;
  /** Pooled presignatures per key and set (signing/presignature-pool.ts `pooledCounts`). */
  pooledPresignatures(): Promise<{ key_id: string; signing_set: string; n: number }[]>;
  /** Watcher cursor heights by watcher chain name (transfers/watcher-store.ts `watcherHeights`). */
  watcherHeights(): Promise<Map<string, number>>;
}

/** Components of {@link ReadinessProbe}. */
export interface ReadinessComponents {
  readonly queries: ReadinessQueries;
  readonly chains: ChainHeads;
  /** Master key records (signers room); absent with `availability`. */
  readonly masterKeys?: { listMasterKeys(): Promise<{ master_key_id: string; threshold: number; parties: unknown }[]> };
  /** Whether a party is connected now (signer gateway); absent: the signer checks are skipped. */
  readonly availability?: ((party: SignParty) => Promise<'up' | 'down' | undefined>) | undefined;
  readonly options?: Partial<ReadinessOptions>;
  /** Whether the coordinator's stop has begun (then not ready, whatever the checks say). */
  readonly stopping?: () => boolean;
}

/**
 * Check and complete the `health` settings.
 * @throws RangeError naming `health.cacheMs` (integer 0..60 000) or `health.timeoutMs` (integer 1..60 000)
 */
export function resolveReadinessOptions(o: Partial<ReadinessOptions> = {}): ReadinessOptions {
  const r = { ...DEFAULT_READINESS_OPTIONS, ...o };
  if (!Number.isSafeInteger(r.cacheMs) || r.cacheMs < 0 || r.cacheMs > 60_000)
    throw new RangeError('health.cacheMs: an integer 0..60000 (ms)');
  if (!Number.isSafeInteger(r.timeoutMs) || r.timeoutMs < 1 || r.timeoutMs > 60_000)
    throw new RangeError('health.timeoutMs: an integer 1..60000 (ms)');
  return r;
}

class Timeout extends Error {}

/** `p`, or a rejection with {@link Timeout} after `ms` (the work itself is not cancelled). */
function bounded<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Timeout(`no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** A failure's reason without detail that could carry a URL or a credential: the error's class or code. */
function reasonOf(e: unknown): string {
  if (e instanceof Timeout) return e.message;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code)) return `unreachable (${code})`;
  return `unreachable (${e instanceof Error ? e.name : 'error'})`;
}

/** Runs the readiness checks (cached) and reads the scrape-time metric values. */
export class ReadinessProbe {
  readonly options: ReadinessOptions;
  #cached: { at: number; result: Promise<Readiness> } | undefined;
  #heads: { at: number; result: Promise<Map<string, number | undefined>> } | undefined;
  #snapshot: { at: number; result: Promise<DbSnapshot> } | undefined;

  /** @throws RangeError naming `health.cacheMs` (0..60 000) or `health.timeoutMs` (1..60 000) */
  constructor(private readonly c: ReadinessComponents) {
    this.options = resolveReadinessOptions(c.options);
  }

  /**
   * The readiness, run at most once per `cacheMs`. Never rejects. Once the coordinator's stop has
   * begun: not ready, the one check `shutting_down` (not cached, no check run).
   */
  check(): Promise<Readiness> {
    if (this.c.stopping?.() === true) {
      return Promise.resolve({
        ready: false,
        checks: [{ name: 'shutting_down', state: 'fail', reason: 'the coordinator is stopping' }],
      });
    }
    const now = Date.now();
    if (this.#cached === undefined || now - this.#cached.at >= this.options.cacheMs) {
      this.#cached = { at: now, result: this.#run() };
    }
    return this.#cached.result;
  }

  /** Head height per configured chain (undefined: no answer in time), probed at most once per `cacheMs`. */
  heads(): Promise<Map<string, number | undefined>> {
    const now = Date.now();
    if (this.#heads === undefined || now - this.#heads.at >= this.options.cacheMs) {
      const keys = this.c.chains.keys();
      this.#heads = {
        at: now,
        result: Promise.all(
          keys.map((k) =>
            bounded(this.c.chains.headHeight(k), this.options.timeoutMs).then(
              (h) => [k, h] as const,
              () => [k, undefined] as const,
            ),
          ),
        ).then((e) => new Map(e)),
      };
    }
    return this.#heads.result;
  }

  async #run(): Promise<Readiness> {
    const { timeoutMs } = this.options;
    const checks: ReadinessCheck[] = [];
    let dbUp = false;
    try {
      await bounded(this.c.queries.ping(), timeoutMs);
      dbUp = true;
      checks.push({ name: 'database', state: 'pass', reason: 'reachable' });
    } catch (e) {
      checks.push({ name: 'database', state: 'fail', reason: reasonOf(e) });
    }
    if (!dbUp) {
      checks.push({ name: 'migrations', state: 'fail', reason: 'database unreachable' });
    } else {
      try {
        const missing = await bounded(this.c.queries.pendingMigrations(), timeoutMs);
        checks.push(
          missing.length === 0
            ? { name: 'migrations', state: 'pass', reason: 'current' }
            : { name: 'migrations', state: 'fail', reason: `not applied: ${missing.join(', ')}` },
        );
      } catch (e) {
        checks.push({ name: 'migrations', state: 'fail', reason: reasonOf(e) });
      }
    }
    checks.push(...(await this.#signers(dbUp)));
    const heads = await this.heads();
    for (const [chain, head] of heads) {
      checks.push(
        head === undefined
          ? { name: `chain:${chain}`, state: 'fail', reason: `node unreachable or no answer within ${timeoutMs} ms` }
          : { name: `chain:${chain}`, state: 'pass', reason: `head ${head}` },
      );
    }
    return { ready: checks.every((c) => c.state !== 'fail'), checks };
  }

  async #signers(dbUp: boolean): Promise<ReadinessCheck[]> {
    const { masterKeys, availability } = this.c;
    if (masterKeys === undefined || availability === undefined) {
      return [{ name: 'signers', state: 'skip', reason: 'no signing services in this process' }];
    }
    if (!dbUp) return [{ name: 'signers', state: 'fail', reason: 'database unreachable' }];
    let keys: Awaited<ReturnType<typeof masterKeys.listMasterKeys>>;
    try {
      keys = await bounded(masterKeys.listMasterKeys(), this.options.timeoutMs);
    } catch (e) {
      return [{ name: 'signers', state: 'fail', reason: reasonOf(e) }];
    }
    if (keys.length === 0) return [{ name: 'signers', state: 'skip', reason: 'no master key yet' }];
    const out: ReadinessCheck[] = [];
    for (const k of keys) {
      const parties = (Array.isArray(k.parties) ? k.parties : []) as SignParty[];
      const states = await Promise.all(
        parties.map((p) =>
          bounded(availability({ kind: p.kind, id: p.id }), this.options.timeoutMs).catch(() => 'down' as const),
        ),
      );
      const up = states.filter((s) => s === 'up').length;
      const reason = `${up} of ${parties.length} parties connected, threshold ${k.threshold}`;
      out.push({ name: `signers:${k.master_key_id}`, state: up >= k.threshold ? 'pass' : 'fail', reason });
    }
    return out;
  }

  /**
   * The scrape-time values of the metrics: transfers per status, pool depth, chain heights — read
   * at most once per `cacheMs` (concurrent scrapes share one read; a failed read is not kept).
   */
  snapshot(): Promise<DbSnapshot> {
    const now = Date.now();
    if (this.#snapshot === undefined || now - this.#snapshot.at >= this.options.cacheMs) {
      const entry = { at: now, result: this.#readSnapshot() };
      entry.result.catch(() => {
        if (this.#snapshot === entry) this.#snapshot = undefined;
      });
      this.#snapshot = entry;
    }
    return this.#snapshot.result;
  }

  async #readSnapshot(): Promise<DbSnapshot> {
    const q = this.c.queries;
    const [transfers, pool, heads, cursor] = await Promise.all([
      q.transfersByStatus(),
      q.pooledPresignatures(),
      this.heads(),
      q.watcherHeights(),
    ]);
    return {
      transfers,
      pool,
      chains: [...heads].map(([chain, head]) => ({
        chain,
        head,
        watcher: cursor.get(this.c.chains.watcherChain(chain)),
      })),
    };
  }
}
