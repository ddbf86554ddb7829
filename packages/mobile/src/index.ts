/**
 * @custodian/mobile — the mobile signer: a platform-neutral SDK (device vault sealed under a
 * PIN-derived key, enrollment, WebSocket connection to the coordinator with device-key challenge
 * authentication, approvals signed with the device key, ceremonies through the coordinator relay
 * with `@custodian/ceremony`'s runner) and the headless simulator of the phone app (`custodian mobile`).
 */
export type { ApprovalRefusal } from './approval-display.js';
export {
  approvalEventFields,
  approvalRefusal,
  describeApproval,
  formatAmount,
  formatMaxFee,
} from './approval-display.js';
export type { MobileCliIo } from './cli.js';
export { ADMIN_TOKEN_ENV, EXIT_DEVICE_REVOKED, registerMobileCommands } from './cli.js';
export type { ApprovalDecision, MobileSignerEvents, MobileSignerOptions } from './device.js';
export { DEVICE_REVOKED_CLOSE_CODE, DEVICE_WS_PATH, MobileSigner } from './device.js';
export type { EnrollOptions, EnrollResult } from './enroll.js';
export { EnrollmentError, enrollDevice, enrollmentStatus } from './enroll.js';
export { CoordinatorRequestError, MobileError } from './errors.js';
export type { PolicyVersionInfo, SignPolicyOptions, SignPolicyResult } from './policy.js';
export { AdminApiError, describePolicyVersion, PolicySignCancelled, signPolicyWithDevice } from './policy.js';
export type { PinKdfParams, UnlockedVault, VaultInfo } from './vault.js';
export {
  createVault,
  DEFAULT_PIN_KDF,
  derivePinKey,
  normalizeCoordinatorUrls,
  readVaultInfo,
  setVaultUrls,
  unlockVault,
  VAULT_FILE,
  WrongPinError,
  writeVaultInfo,
} from './vault.js';
