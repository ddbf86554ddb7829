/**
 * Transfer statuses as the screens show them: the seed's ten statuses (§3; the coordinator's
 * `TRANSFER_STATUSES`, repeated here because the dashboard imports the coordinator's types only),
 * badge colours, which are final, and which allow a cancel or a fee bump (coordinator
 * `TransferService.cancel` / `requestFeeBump`; the server decides again). Also block-explorer
 * links of a transaction hash per blockchain key.
 */
import type { Role, Transfer, TransferStatus } from '@custodian/coordinator/admin-api-types';

/** The seed's transfer statuses, in the seed's order. */
export const TRANSFER_STATUSES: readonly TransferStatus[] = [
  'PENDING',
  'PENDING_APPROVAL',
  'PENDING_SIGNATURE',
  'READY_TO_SEND',
  'SENT',
  'REJECTED',
  'REJECTED_BY_POLICY',
  'NO_POLICY_FOUND',
  'EXPIRED',
  'FAILED',
];

const FAILED: readonly TransferStatus[] = ['REJECTED', 'REJECTED_BY_POLICY', 'NO_POLICY_FOUND', 'EXPIRED', 'FAILED'];

/** Badge colour of a status (delivered SENT: green; failures: red; in progress: blue/yellow). */
export function statusColor(t: Pick<Transfer, 'status' | 'delivered_at'>): string {
  if (FAILED.includes(t.status)) return 'red';
  if (t.status === 'SENT') return t.delivered_at ? 'green' : 'teal';
  if (t.status === 'PENDING_APPROVAL') return 'yellow';
  return 'blue';
}

/** Whether nothing more will happen to the transfer: a failure status, or SENT and delivered. */
export const isFinal = (t: Pick<Transfer, 'status' | 'delivered_at'>): boolean =>
  FAILED.includes(t.status) || (t.status === 'SENT' && t.delivered_at !== null);

/** Whether a cancel may be offered (PENDING, PENDING_APPROVAL, or PENDING_SIGNATURE not yet built). */
export const mayCancel = (t: Pick<Transfer, 'status'>): boolean =>
  t.status === 'PENDING' || t.status === 'PENDING_APPROVAL' || t.status === 'PENDING_SIGNATURE';

/** Whether a fee bump may be offered: SENT, not delivered, no bump round under way. */
export const mayBumpFee = (t: Pick<Transfer, 'status' | 'delivered_at' | 'fee_bump'>): boolean =>
  t.status === 'SENT' &&
  t.delivered_at === null &&
  (t.fee_bump === null || ['DONE', 'REJECTED', 'FAILED'].includes(t.fee_bump.status));

const EXPLORERS: Readonly<Record<string, (hash: string) => string>> = {
  'ethereum-mainnet': (h) => `https://etherscan.io/tx/${h}`,
  'ethereum-sepolia': (h) => `https://sepolia.etherscan.io/tx/${h}`,
  'bitcoin-mainnet': (h) => `https://mempool.space/tx/${h}`,
  'bitcoin-testnet': (h) => `https://mempool.space/testnet/tx/${h}`,
  'litecoin-mainnet': (h) => `https://litecoinspace.org/tx/${h}`,
  'litecoin-testnet': (h) => `https://litecoinspace.org/testnet/tx/${h}`,
  'tron-mainnet': (h) => `https://tronscan.org/#/transaction/${h}`,
  'tron-nile': (h) => `https://nile.tronscan.org/#/transaction/${h}`,
};

/** Block-explorer URL of `hash` on the blockchain `key` (e.g. `ethereum-mainnet`); undefined for local/dev chains. */
export function explorerUrl(key: string | undefined, hash: string): string | undefined {
  const f = key === undefined ? undefined : EXPLORERS[key];
  return f?.(encodeURIComponent(hash));
}

/** `0x1234…abcd`: the first 8 and last 6 characters of a long value. */
export const shorten = (s: string): string => (s.length > 18 ? `${s.slice(0, 8)}…${s.slice(-6)}` : s);

/**
 * `can(operationId)`, falling back to the roles the coordinator's route documents
 * (transfers/admin-routes.ts) when the generated rules do not name the operation: the transfer
 * routes are registered outside the admin router, so `ADMIN_OPERATION_RULES` lacks their `x-roles`
 * and `can` throws for them. The server enforces the roles either way.
 */
export function canOrDocumented(
  session: { can(op: string): boolean; me: { role: Role } | null | undefined },
  operationId: string,
  documented: readonly Role[],
): boolean {
  try {
    return session.can(operationId);
  } catch {
    return session.me?.role !== undefined && documented.includes(session.me.role);
  }
}
