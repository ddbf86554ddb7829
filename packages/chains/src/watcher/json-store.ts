import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { BalanceRow, Cursor, UtxoRow, WatcherCommit, WatcherEvent, WatcherStore } from './types.js';

interface ChainState {
  cursor: Cursor | null;
  seen: string[];
  balances: BalanceRow[];
  utxos: UtxoRow[];
  /** Every event committed, in order (the development store's stand-in for an outbox table). */
  events: WatcherEvent[];
}

interface FileShape {
  version: 1;
  chains: Record<string, ChainState>;
}

/**
 * The development {@link WatcherStore}: the whole state in one JSON file, rewritten atomically on
 * every commit (write a temporary file in the same folder, then rename over the old one; POSIX
 * rename is atomic), so a crash leaves the old state or the new, never a mix. It also keeps every
 * committed event (`events(chain)`), which lets tests compare what was announced with the node.
 * Not for production: it rewrites the whole file per commit and allows one process only. The
 * coordinator's store is PostgreSQL.
 */
export class JsonFileWatcherStore implements WatcherStore {
  constructor(readonly path: string) {}

  /** Reads the file on every call (no cache), so several instances on one file stay consistent. */
  async #load(): Promise<FileShape> {
    let text: string | undefined;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    if (text === undefined) return { version: 1, chains: {} };
    const parsed = JSON.parse(text) as FileShape;
    if (parsed?.version !== 1 || typeof parsed.chains !== 'object' || parsed.chains === null)
      throw new Error(`${this.path}: not a watcher store (version 1)`);
    return parsed;
  }

  async #chain(chain: string, file?: FileShape): Promise<ChainState> {
    const s = file ?? (await this.#load());
    return s.chains[chain] ?? { cursor: null, seen: [], balances: [], utxos: [], events: [] };
  }

  async getCursor(chain: string): Promise<Cursor | null> {
    return (await this.#chain(chain)).cursor;
  }

  async seen(chain: string, keys: readonly string[]): Promise<Set<string>> {
    const all = new Set((await this.#chain(chain)).seen);
    return new Set(keys.filter((k) => all.has(k)));
  }

  async getBalances(chain: string): Promise<BalanceRow[]> {
    return [...(await this.#chain(chain)).balances];
  }

  async getUtxos(chain: string): Promise<UtxoRow[]> {
    return [...(await this.#chain(chain)).utxos];
  }

  /** Events committed so far for `chain`, oldest first. */
  async events(chain: string): Promise<WatcherEvent[]> {
    return [...(await this.#chain(chain)).events];
  }

  async commit(chain: string, commit: WatcherCommit): Promise<void> {
    const state = await this.#load();
    const old = await this.#chain(chain, state);
    const balances = new Map(old.balances.map((b) => [`${b.address}|${b.asset}`, b]));
    for (const b of commit.balances) balances.set(`${b.address}|${b.asset}`, b);
    const spent = new Set(commit.utxosSpent);
    const next: ChainState = {
      cursor: commit.cursor,
      seen: [...new Set([...old.seen, ...commit.seen])],
      balances: [...balances.values()],
      utxos: [
        ...old.utxos.filter((u) => !spent.has(u.outpoint)),
        ...commit.utxosAdded.filter((u) => !spent.has(u.outpoint)),
      ],
      events: [...old.events, ...commit.events],
    };
    const file: FileShape = { version: 1, chains: { ...state.chains, [chain]: next } };
    await mkdir(dirname(this.path), { recursive: true });
    const tmp = `${this.path}.${randomBytes(6).toString('hex')}.tmp`;
    await writeFile(tmp, JSON.stringify(file), { flush: true });
    await rename(tmp, this.path);
  }
}
