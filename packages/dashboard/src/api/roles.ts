/**
 * What the signed-in role may do, from the admin API document itself: `ADMIN_OPERATION_RULES`
 * (generated from each operation's `x-roles` and `x-step-up`) names, per operationId, the roles
 * the coordinator accepts. Screens hide or disable what the role cannot do; the server enforces
 * the same rule again (403 `ROLE_FORBIDDEN`). Roles are the seed's: Admin (everything), Finance
 * Manager (policies; wallets and the address book read-only), Viewer (read-only).
 */
import type { Role } from '@custodian/coordinator/admin-api-types';
import { ADMIN_OPERATION_RULES } from '@custodian/sdk/api';

/** The seed's names of the roles, for display. */
export const ROLE_LABELS: Readonly<Record<Role, string>> = {
  ADMIN: 'Admin',
  FINANCE_MANAGER: 'Finance Manager',
  VIEWER: 'Viewer',
};

/**
 * Whether `role` may call the admin operation `operationId` (e.g. `adminCreateApiKey`).
 * @throws Error for an operationId the document does not have (a typo in a screen is a bug)
 */
export function can(role: Role | undefined, operationId: string): boolean {
  const rule = ADMIN_OPERATION_RULES[operationId];
  if (rule === undefined) throw new Error(`unknown admin operation ${operationId}`);
  return role !== undefined && rule.roles.includes(role);
}

/** Whether the operation needs a fresh step-up always ('always') or for some requests ('conditional'). */
export const stepUpRule = (operationId: string): 'always' | 'conditional' | undefined =>
  ADMIN_OPERATION_RULES[operationId]?.stepUp;
