import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runDevDemo } from '../src/dev.js';

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

describe('custodian CLI', () => {
  it('--version and --help work (built binary)', () => {
    const version = execFileSync(process.execPath, [bin, '--version'], { encoding: 'utf8' }).trim();
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    const help = execFileSync(process.execPath, [bin, '--help'], { encoding: 'utf8' });
    expect(help).toContain('Usage: custodian');
    expect(help).toContain('dev');
  });

  it('the dev demo runs real ceremonies and every signature verifies', () => {
    const lines: string[] = [];
    const orig = console.log;
    console.log = (...a: unknown[]) => lines.push(a.join(' '));
    try {
      expect(runDevDemo()).toBe(true);
    } finally {
      console.log = orig;
    }
    expect(lines.join('\n')).toContain('All signatures verified.');
  });
});
