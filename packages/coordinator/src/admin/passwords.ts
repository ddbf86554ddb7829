/**
 * Password hashing with scrypt (RFC 7914) from node:crypto, the password strength rule, and
 * one-time codes.
 *
 * Stored form: `scrypt$<N>$<r>$<p>$<salt b64url>$<hash b64url>` (16-byte salt, 32-byte hash), so
 * parameters can be raised later and old hashes still verify.
 */
import { randomBytes, randomInt, scrypt, timingSafeEqual } from 'node:crypto';
import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import * as zxcvbnCommon from '@zxcvbn-ts/language-common';
import * as zxcvbnEn from '@zxcvbn-ts/language-en';
import { ApiError } from '../errors.js';

/** scrypt cost parameters. Default N = 2^15, r = 8, p = 1 (≈ 32 MiB, tens of ms). */
export interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

export const DEFAULT_SCRYPT: ScryptParams = { N: 1 << 15, r: 8, p: 1 };

function scryptAsync(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(
      password.normalize('NFKC'),
      salt,
      32,
      { N: params.N, r: params.r, p: params.p, maxmem: 256 * params.N * params.r + 1024 * 1024 },
      (err, key) => (err ? reject(err) : resolve(key)),
    ),
  );
}

/** Hash a password (NFKC-normalised) into the stored form. */
export async function hashPassword(password: string, params: ScryptParams = DEFAULT_SCRYPT): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(password, salt, params);
  return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

/** Verify a password against a stored hash in constant time; false for malformed hashes. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![N, r, p].every((x) => Number.isInteger(x) && x > 0) || N > 1 << 20) return false;
  const salt = Buffer.from(parts[4]!, 'base64url');
  const expected = Buffer.from(parts[5]!, 'base64url');
  const got = await scryptAsync(password, salt, { N, r, p });
  return got.length === expected.length && timingSafeEqual(got, expected);
}

/** A uniformly random 6-digit decimal code from the OS CSPRNG. */
export function oneTimeCode(): string {
  return randomInt(0, 1_000_000).toString().padStart(6, '0');
}

/** Constant-time comparison of two strings. */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Minimum zxcvbn score (0–4) of a new password by default: 3, "safely unguessable" (≥ 10^8 guesses). */
export const DEFAULT_MIN_PASSWORD_SCORE = 3;

/**
 * Characters of a password the estimator looks at. Its repeat and sequence matchers are
 * super-linear, so a 1 KiB password would block the event loop for seconds; a 64-character
 * prefix that scores well is as strong as the whole, and one that scores badly is refused.
 */
export const STRENGTH_EVALUATED_CHARS = 64;

/** Outcome of {@link passwordStrength}: zxcvbn score and its English feedback (never the password). */
export interface PasswordStrength {
  /** 0 (too guessable) … 4 (very unguessable): log10 of the estimated guesses < 3, 6, 8, 10, or more. */
  score: 0 | 1 | 2 | 3 | 4;
  warning: string | null;
  suggestions: string[];
}

let estimator: ZxcvbnFactory | undefined;

/**
 * Estimate a password's strength with zxcvbn-ts (common-password, English-word, name and keyboard
 * pattern dictionaries, l33t, dates, repeats, sequences) on its NFKC form's first
 * {@link STRENGTH_EVALUATED_CHARS} characters. `userInputs` (the user's e-mail address, its parts,
 * the user's name) count as known words. Synchronous, CPU-bound: up to a few hundred ms for a
 * repetitive 64-character input.
 */
export function passwordStrength(password: string, userInputs: readonly string[] = []): PasswordStrength {
  estimator ??= new ZxcvbnFactory({
    dictionary: { ...zxcvbnCommon.dictionary, ...zxcvbnEn.dictionary },
    graphs: zxcvbnCommon.adjacencyGraphs,
    translations: zxcvbnEn.translations,
    maxLength: STRENGTH_EVALUATED_CHARS,
  });
  const r = estimator.check(password.normalize('NFKC'), [...userInputs]);
  return { score: r.score, warning: r.feedback.warning, suggestions: [...r.feedback.suggestions] };
}

/**
 * The known words of a user for {@link passwordStrength}: the e-mail address, its local part and
 * the pieces of both, the name and its words, and the product name.
 */
export function passwordUserInputs(email: string, name: string): string[] {
  const e = email.toLowerCase();
  const [local = '', domain = ''] = e.split('@');
  const words = [local, ...local.split(/[^\p{L}\p{N}]+/u), ...domain.split('.'), name, ...name.split(/\s+/)];
  return [...new Set([e, ...words, 'custodian'].map((w) => w.trim()).filter((w) => w.length >= 3))];
}

/**
 * Refuse a password that scores below `minScore` ({@link passwordStrength}).
 * @param field the request field named in the error (`body.password`, `body.new_password`)
 * @throws ApiError VALIDATION_FAILED (422) naming `field`, with the estimator's feedback; the
 *   password itself is never part of the error
 */
export function requireStrongPassword(
  password: string,
  userInputs: readonly string[],
  field: string,
  minScore: number = DEFAULT_MIN_PASSWORD_SCORE,
): void {
  const s = passwordStrength(password, userInputs);
  if (s.score >= minScore) return;
  const advice = [s.warning, ...s.suggestions].filter((x): x is string => x !== null && x !== '').join(' ');
  const message = `too easy to guess (strength ${s.score} of 4, at least ${minScore} needed)${advice ? `: ${advice}` : ''}`;
  throw new ApiError('VALIDATION_FAILED', `${field}: ${message}`, [{ field, message }]);
}
