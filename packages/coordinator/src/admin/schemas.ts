/** JSON-schema pieces shared by the rooms' admin routes (bodies, envelopes, roles). */
import { PAGE_QUERY } from '../api/schemas.js';
import { ROLES, type Role } from './options.js';

/** Every role. */
export const ALL: readonly Role[] = ROLES;
/** Admins only. */
export const ADMIN: readonly Role[] = ['ADMIN'];

/** A closed object schema. */
export const obj = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  additionalProperties: false,
  required,
  properties,
});
export const anyObject = (description: string) => ({ description, type: 'object', additionalProperties: true });
export const listOf = (description: string) => ({
  description,
  type: 'array',
  items: { type: 'object', additionalProperties: true },
});
export const pageEnvelope = (description: string) => ({
  description,
  type: 'object',
  required: ['data', 'page', 'page_size', 'total'],
  properties: {
    data: { type: 'array', items: { type: 'object', additionalProperties: true } },
    page: { type: 'integer' },
    page_size: { type: 'integer' },
    total: { type: 'integer' },
  },
});
export const email = { type: 'string', format: 'email', maxLength: 254 };
export const password = {
  type: 'string',
  minLength: 12,
  maxLength: 1024,
  description:
    'At least 12 characters and hard to guess: a zxcvbn-ts strength score of at least 3 of 4 (configurable), with ' +
    "the user's e-mail address and name counted as known words; otherwise 422 naming the field, with advice.",
};
export const name = { type: 'string', minLength: 1, maxLength: 200 };
export const role = { type: 'string', enum: ROLES };
export const code = { type: 'string', pattern: '^[0-9]{6}$' };
export const pageQuery = { type: 'object', additionalProperties: false, properties: PAGE_QUERY };
