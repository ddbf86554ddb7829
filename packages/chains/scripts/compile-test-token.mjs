// Compiles test/fixtures/TestToken.sol with the `solc` npm package (devDependency) and writes
// test/fixtures/TestToken.json ({ compiler, abi, bytecode }). Run once after editing the source:
//   node packages/chains/scripts/compile-test-token.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import solc from 'solc';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'test', 'fixtures');
const source = readFileSync(join(dir, 'TestToken.sol'), 'utf8');
const input = {
  language: 'Solidity',
  sources: { 'TestToken.sol': { content: source } },
  settings: {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: 'cancun',
    outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
  },
};
const output = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
const contract = output.contracts['TestToken.sol'].TestToken;
const artefact = {
  compiler: `solc ${solc.version()}`,
  abi: contract.abi,
  bytecode: `0x${contract.evm.bytecode.object}`,
};
writeFileSync(join(dir, 'TestToken.json'), `${JSON.stringify(artefact, null, 2)}\n`);
console.log(`wrote TestToken.json (${artefact.compiler})`);
