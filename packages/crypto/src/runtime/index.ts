export * from './party.js';
export * from './simulator.js';
export * from './types.js';
