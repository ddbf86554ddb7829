/**
 * docs/configuration.md documents every key of every config file (#29): each key of each schema
 * (coordinator, signer daemon, the blockchains of signers and phones) has its row in the key table
 * of its section, and no row names a key the schema does not have.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { CHAINS_CONFIG_SCHEMA, schemaKeys } from '../packages/ceremony/src/index.js';
import { COORDINATOR_CONFIG_SCHEMA } from '../packages/cli/src/coordinator-config.js';
import { SIGNER_CONFIG_SCHEMA } from '../packages/signer/src/index.js';

/** The keys of the `| key | …` tables under the `## ` heading starting with `heading`. */
async function documented(heading: string): Promise<Set<string>> {
  const doc = await readFile(new URL('../docs/configuration.md', import.meta.url), 'utf8');
  const section = doc.split(/^## /m).find((s) => s.startsWith(heading));
  if (section === undefined) throw new Error(`docs/configuration.md has no section "${heading}"`);
  const keys = new Set<string>();
  let inKeyTable = false;
  for (const line of section.split('\n')) {
    if (!line.startsWith('|')) {
      inKeyTable = false;
      continue;
    }
    const first = line.split('|')[1]!.trim();
    if (first === 'key') inKeyTable = true;
    else if (inKeyTable) for (const m of first.matchAll(/`([^`]+)`/g)) keys.add(m[1]!);
  }
  return keys;
}

describe('docs/configuration.md', () => {
  it('documents every key of the coordinator config file, and no other', async () => {
    const doc = await documented('Coordinator');
    const keys = schemaKeys(COORDINATOR_CONFIG_SCHEMA);
    expect(
      keys.filter((k) => !doc.has(k)),
      'undocumented keys',
    ).toEqual([]);
    expect(
      [...doc].filter((k) => !keys.includes(k)),
      'documented keys the schema lacks',
    ).toEqual([]);
  });

  it('documents every key of the signer config file and of the blockchains file, and no other', async () => {
    const signer = await documented('Signer daemon');
    const chains = await documented('Blockchains');
    const keys = schemaKeys(SIGNER_CONFIG_SCHEMA);
    expect(
      keys.filter((k) => !signer.has(k) && !chains.has(k)),
      'undocumented keys',
    ).toEqual([]);
    expect(
      [...signer].filter((k) => !keys.includes(k)),
      'documented keys the schema lacks',
    ).toEqual([]);
    const chainKeys = schemaKeys(CHAINS_CONFIG_SCHEMA).map((k) => `chains.${k}`);
    expect(
      chainKeys.filter((k) => !chains.has(k)),
      'undocumented keys',
    ).toEqual([]);
    expect(
      [...chains].filter((k) => !chainKeys.includes(k)),
      'documented keys the schema lacks',
    ).toEqual([]);
  });
});
