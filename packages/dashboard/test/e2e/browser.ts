/**
 * Browser helpers of the dashboard's end-to-end test: Chromium through playwright-core (the Debian
 * package at /usr/bin/chromium or `CHROMIUM_PATH`, installed by scripts/install-chromium.sh; no
 * browser download at run time), axe-core checks, the 360 px overflow check, screenshots, and the
 * RFC 6238 TOTP code the authenticator app would show.
 *
 * Screenshots go to `artifacts/dashboard/<nn>-<screen>.png` at the repository root: the folder is
 * gitignored, and CI keeps it as the run's artifacts.
 */
import { createHmac } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { ROOT } from './stack';

/** Where the screenshots go (repository root, gitignored; CI keeps it as artifacts). */
export const ARTIFACTS = join(ROOT, 'artifacts', 'dashboard');

/** The Chromium binary: `CHROMIUM_PATH`, else the Debian package's /usr/bin/chromium. */
export function chromiumPath(): string {
  const p = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(p)) throw new Error(`no Chromium at ${p}: run scripts/install-chromium.sh (or set CHROMIUM_PATH)`);
  return p;
}

/** Launch headless Chromium (`--no-sandbox` when running as root, as CI does). */
export function launch(): Promise<Browser> {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: root ? ['--no-sandbox'] : [] });
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/**
 * Run axe-core (WCAG 2.0/2.1 A and AA, best practices) on the page — injected as an inline script,
 * so the page's context must be created with `bypassCSP: true` (the dashboard's CSP allows only
 * its own scripts); resolves with a readable line per serious or critical violation (rule id, help,
 * target nodes) — empty when there is none.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ content: AXE_SOURCE });
  const violations = await page.evaluate(async () => {
    const axe = (
      window as unknown as { axe: { run(ctx: unknown, o: unknown): Promise<{ violations: AxeViolation[] }> } }
    ).axe;
    const r = await axe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target })),
    }));
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} — ${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')}`);
}

/** Horizontal overflow at the page's current width: scrollWidth minus innerWidth (≤ 0 is fine). */
export function overflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

let shot = 0;
/** Screenshot the page to `artifacts/dashboard/<nn>-<name>.png`; resolves with the path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  shot++;
  const path = join(ARTIFACTS, `${String(shot).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 decoding (spaces, dashes and padding ignored). */
export function base32Decode(s: string): Buffer {
  const clean = s.toUpperCase().replace(/[\s=-]/g, '');
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const ch of clean) {
    const i = B32.indexOf(ch);
    if (i < 0) throw new Error(`not base32: ${ch}`);
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** The RFC 6238 TOTP code (HMAC-SHA1, 30 s steps, 6 digits) of a base32 secret at `time` (ms). */
export function totp(secret: string, time = Date.now()): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(time / 30_000)));
  const h = createHmac('sha1', base32Decode(secret)).update(counter).digest();
  const o = (h[h.length - 1] as number) & 0xf;
  const n = (h.readUInt32BE(o) & 0x7fffffff) % 1_000_000;
  return String(n).padStart(6, '0');
}
