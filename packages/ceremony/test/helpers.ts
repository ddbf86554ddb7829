/** Test helpers of the ceremony package. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh temporary directory `custodian-<label>-XXXXXX` (the caller removes it). */
export function tempDir(label: string): string {
  return mkdtempSync(join(tmpdir(), `custodian-${label}-`));
}
