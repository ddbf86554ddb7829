/**
 * Reloading a running signer's configuration (`custodian signer reload`, SIGHUP): which fields a
 * reload takes over and what it reports.
 */
import type { SignerConfig } from './config.js';

/**
 * The outcome of one configuration reload ({@link SignerDaemon.reload}), also written to
 * `status.json` as `reload` for `custodian signer reload`.
 */
export interface SignerReload {
  /** When the reload ran (ISO 8601). */
  readonly at: string;
  /** Whether the re-read configuration was valid and applied. */
  readonly ok: boolean;
  /** Fields taken over without a restart: `trustedAdminDevices`, `chains`, `logLevel` (those that changed). */
  readonly applied: readonly string[];
  /** Fields that changed but take effect only after a restart (kept as they were). */
  readonly restartRequired: readonly string[];
  /** Why the reload was refused (`ok` false): the configuration error; the running configuration is kept. */
  readonly error?: string;
}

/** Top-level config fields a reload applies; every other changed field needs a restart. */
export const RELOADABLE_FIELDS = ['trustedAdminDevices', 'chains', 'logLevel'] as const;

/**
 * The running configuration after a reload: `current` with the reloadable fields of `next`.
 * @returns the new configuration, the changed fields it applies and the changed fields that wait
 *   for a restart (keeping their running value)
 * @throws Error when `next` switches `allowUnenforcedSigning` (a restart decides that)
 */
export function reloadedConfig(
  current: SignerConfig,
  next: SignerConfig,
): { config: SignerConfig; applied: string[]; restartRequired: string[] } {
  if ((next.allowUnenforcedSigning ?? false) !== (current.allowUnenforcedSigning ?? false))
    throw new Error('allowUnenforcedSigning changed: restart the signer to switch enforcement off or on');
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const changed = (Object.keys({ ...current, ...next }) as (keyof SignerConfig)[]).filter(
    (k) => !same(current[k], next[k]),
  );
  const reloadable = (k: string) => (RELOADABLE_FIELDS as readonly string[]).includes(k);
  const { trustedAdminDevices: _devices, chains: _chains, ...kept } = current;
  return {
    config: {
      ...kept,
      logLevel: next.logLevel,
      ...(next.trustedAdminDevices ? { trustedAdminDevices: next.trustedAdminDevices } : {}),
      ...(next.chains ? { chains: next.chains } : {}),
    },
    applied: changed.filter(reloadable),
    restartRequired: changed.filter((k) => !reloadable(k)),
  };
}
