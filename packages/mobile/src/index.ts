/**
 * @custodian/mobile — the mobile signer: a platform-neutral SDK (device vault sealed under a
 * PIN-derived key, enrollment, WebSocket connection to the coordinator with device-key challenge
 * authentication, approvals signed with the device key, ceremonies through the coordinator relay
 * with `@custodian/ceremony`'s runner) and the headless simulator of the phone app (`custodian mobile`).
 */
export * from './approval-display.js';
export * from './cli.js';
export * from './device.js';
export * from './enroll.js';
export * from './errors.js';
export * from './policy.js';
export * from './vault.js';
