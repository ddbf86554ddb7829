/**
 * Store generations: a signer notices that its data folder was restored from a backup or a copy
 * (rolled back), and then reuses nothing of what it may have used after the copy (issue #20,
 * item 8; operator guide §4).
 *
 * What a rollback resurrects: CGGMP21 presignatures used since the copy (a second signature with
 * one presignature reveals the key share — DESIGN §3: a presignature signs at most once), the
 * ledger of signed transfers (a transfer signed after the copy could be signed again as another
 * transaction, and its amount would no longer count towards the daily limit) and the FROST nonce
 * ledger.
 *
 * Mechanism: a generation counter kept twice, in the store (sublevel `state`, key `generation`,
 * encrypted like every record) and in a small JSON state file OUTSIDE the LevelDB folder and
 * outside the data folder ({@link defaultGenerationFile}: `<dataDir>.generation.json`, beside the
 * data folder, so a copy of the data folder never contains it). Both move forward at every start
 * and at every clean stop, store first, file second ({@link startGeneration},
 * {@link stopGeneration}); a crash between the two leaves the store ahead of the file, which is
 * not a rollback. A store whose generation is BEHIND the file's is a restored copy.
 *
 * At every start, rollback or not, in ONE synced batch with the new generation: every presignature
 * in the store is deleted (a copy taken while the signer ran and restored before the next start
 * carries presignatures of the same generation: only presignatures made in the running process
 * lifetime are ever used). On a detected rollback the same batch records it (`state/rollback`, see
 * {@link RollbackRecord}) — so a restart cannot forget it — and from then on the signer refuses
 * with `STORE_ROLLED_BACK` (`rollbackRefusal`, @custodian/ceremony rollback.ts): every transfer whose intent was created
 * before the detection plus the allowed clock skew (`CREATED_AT_SKEW_MS`, 5 minutes: a signer
 * refuses any intent created later than its clock + that skew, so a transfer it signed before the
 * restore was created before then), and, for the rest of the detection's UTC day on the signer's
 * clock (the day a signature is counted on), every transfer under a policy with a daily limit (the
 * day's spent amount is not known any more).
 *
 * Also treated as a rollback (conservatively): the state file is missing while the store has
 * started before (generation ≥ 1), or the file belongs to another store (a different store id,
 * {@link SecureStore.id}) while this one has started before. Not detectable: a copy restored while
 * the signer crashed in the same process lifetime in which the copy was taken (no clean stop in
 * between); its presignatures are still discarded at start, its ledger is not vouched for —
 * hence backups are taken of a STOPPED signer. An attacker who can write both the data folder and
 * the state file defeats the check; it protects against restores of the data folder alone.
 */
import { open as openFile, readFile, rename } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import {
  CREATED_AT_SKEW_MS,
  presignatureDiscards,
  type RollbackRecord,
  SignerError,
  STORE_ROLLED_BACK,
  type StoreOp,
} from '@custodian/ceremony';
import type { SecureStore } from '@custodian/ceremony/level-store';
import type { Logger } from 'pino';

/** `format` of the state file. */
export const GENERATION_FILE_FORMAT = 'custodian.signer.generation';

/** What {@link startGeneration} found and did. */
export interface GenerationStart {
  /** The generation of this process lifetime. */
  readonly generation: number;
  /** The latest detected rollback (now or at an earlier start), if any. */
  readonly rollback?: RollbackRecord;
  /** True when the rollback was detected at this start. */
  readonly detectedNow: boolean;
  /** Presignatures deleted at this start. */
  readonly discardedPresignatures: number;
}

/** The state file is unreadable or not one (the signer does not start: the operator decides). */
export class GenerationFileError extends SignerError {
  constructor(message: string) {
    super('GENERATION_FILE_INVALID', message);
  }
}

interface StateFile {
  readonly format: typeof GENERATION_FILE_FORMAT;
  readonly version: 1;
  /** {@link SecureStore.id} of the store it counts for. */
  readonly store: string;
  readonly generation: number;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * Default state file of a data folder: `<dataDir>.generation.json`, beside the folder (e.g.
 * `/var/lib/custodian-signer.generation.json`), never inside it.
 */
export function defaultGenerationFile(dataDir: string): string {
  const abs = resolve(dataDir);
  return join(dirname(abs), `${basename(abs)}.generation.json`);
}

/**
 * Read the state file. @returns undefined when it does not exist
 * @throws GenerationFileError when it exists but is not a state file
 */
export async function readGenerationFile(path: string): Promise<StateFile | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new GenerationFileError(`${path}: ${(e as Error).message}`);
  }
  let o: Partial<StateFile>;
  try {
    o = JSON.parse(text) as Partial<StateFile>;
  } catch {
    throw new GenerationFileError(`${path}: not JSON`);
  }
  if (
    o?.format !== GENERATION_FILE_FORMAT ||
    o.version !== 1 ||
    typeof o.store !== 'string' ||
    !Number.isSafeInteger(o.generation) ||
    (o.generation as number) < 0
  ) {
    throw new GenerationFileError(`${path}: not a ${GENERATION_FILE_FORMAT} v1 file`);
  }
  return o as StateFile;
}

/**
 * Replace the state file atomically and durably: write `<path>.tmp`, fsync it, rename it over
 * `path`, fsync the directory (a crash leaves the old file or the new, never a torn one).
 */
export async function writeGenerationFile(path: string, state: { store: string; generation: number }): Promise<void> {
  const body: StateFile = {
    format: GENERATION_FILE_FORMAT,
    version: 1,
    store: state.store,
    generation: state.generation,
  };
  const tmp = `${path}.tmp`;
  const f = await openFile(tmp, 'w', 0o600);
  try {
    await f.writeFile(`${JSON.stringify(body)}\n`);
    await f.sync();
  } finally {
    await f.close();
  }
  await rename(tmp, path);
  const d = await openFile(dirname(path), 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

/** The store's generation (0: never started with generations). */
export async function storeGeneration(store: SecureStore): Promise<number> {
  const v = await store.get('state', 'generation');
  return v ? Number(dec.decode(v)) : 0;
}

/** The store's latest detected rollback, if any. */
export async function storedRollback(store: SecureStore): Promise<RollbackRecord | undefined> {
  const v = await store.get('state', 'rollback');
  return v ? (JSON.parse(dec.decode(v)) as RollbackRecord) : undefined;
}

const generationOp = (g: number): StoreOp => ({
  type: 'put',
  sublevel: 'state',
  key: 'generation',
  value: enc.encode(String(g)),
});

/**
 * Start a process lifetime on `store` (before anything else reads or writes it): compare the
 * store's generation with the state file's, then, in one synced batch, move the store to the next
 * generation, delete every presignature and record a detected rollback; then write the state file.
 * @param file the state file (config `generationFile`, default {@link defaultGenerationFile})
 * @param opts.now the time of the start (the detection time of a rollback)
 * @throws GenerationFileError when the state file exists but is not one, or cannot be written (the
 *   store is then one generation ahead, which the next start accepts); store errors (the batch is
 *   all or nothing)
 */
export async function startGeneration(
  store: SecureStore,
  file: string,
  opts: { now?: Date; log?: Logger } = {},
): Promise<GenerationStart> {
  const now = opts.now ?? new Date();
  const inStore = await storeGeneration(store);
  const onFile = await readGenerationFile(file);
  let reason: RollbackRecord['reason'] | undefined;
  if (onFile === undefined) {
    if (inStore > 0) reason = 'state-file-missing';
  } else if (onFile.store !== store.id) {
    if (inStore > 0) reason = 'other-store';
  } else if (inStore < onFile.generation) {
    reason = 'older-generation';
  }
  const base = onFile !== undefined && onFile.store === store.id ? Math.max(inStore, onFile.generation) : inStore;
  const generation = base + 1;
  const discards = await presignatureDiscards(store);
  const ops: StoreOp[] = [generationOp(generation), ...discards];
  let rollback = await storedRollback(store);
  if (reason) {
    rollback = {
      detectedAt: now.toISOString(),
      storeGeneration: inStore,
      ...(onFile ? { fileGeneration: onFile.generation } : {}),
      reason,
    };
    ops.push({ type: 'put', sublevel: 'state', key: 'rollback', value: enc.encode(JSON.stringify(rollback)) });
  }
  // store first (synced), file second: a crash between leaves the store ahead, not a rollback
  await store.batch(ops);
  try {
    await writeGenerationFile(file, { store: store.id, generation });
  } catch (e) {
    throw new GenerationFileError(
      `generationFile: cannot write ${file} (${(e as Error).message}); set "generationFile" in the signer config to a writable path outside dataDir`,
    );
  }
  if (reason && rollback) {
    opts.log?.error(
      {
        code: STORE_ROLLED_BACK,
        reason,
        storeGeneration: inStore,
        fileGeneration: onFile?.generation,
        detectedAt: rollback.detectedAt,
        discardedPresignatures: discards.length,
      },
      `!!! ${STORE_ROLLED_BACK}: this signer's store is older than the last one it ran with (restored from a backup or copy). Every presignature is discarded; transfers created before ${rollback.detectedAt} + ${CREATED_AT_SKEW_MS / 60_000} minutes are refused, and transfers under a daily limit are refused until the end of that UTC day !!!`,
    );
  } else {
    opts.log?.info(
      { generation, discardedPresignatures: discards.length, ...(rollback ? { rollback: rollback.detectedAt } : {}) },
      'store generation advanced',
    );
  }
  return {
    generation,
    ...(rollback ? { rollback } : {}),
    detectedNow: reason !== undefined,
    discardedPresignatures: discards.length,
  };
}

/**
 * End a process lifetime cleanly: move the store, then the state file, one generation on, so that
 * a copy of the store taken while it ran is behind the file when it is restored.
 * @returns the new generation
 * @throws store and file errors
 */
export async function stopGeneration(store: SecureStore, file: string): Promise<number> {
  const generation = (await storeGeneration(store)) + 1;
  await store.batch([generationOp(generation)]);
  await writeGenerationFile(file, { store: store.id, generation });
  return generation;
}
