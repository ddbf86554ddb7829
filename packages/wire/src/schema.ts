/**
 * The protobuf schemas of `proto/custodian/v1/*.proto`, loaded by reflection.
 *
 * Choice (documented in packages/wire/README.md): protobufjs parses the `.proto` files at module
 * load (no generated code to keep in sync); every codec works on a reflected `Type`, so a protocol
 * round is a schema, not code. The files are read from the package's own `proto/` folder when it has
 * one (the packed `custodian` command, scripts/pack-cli.mjs, copies them there), else from the
 * repository's `proto/` folder, which sits at the same depth from `src/` and `dist/`.
 */
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const PACKAGED = fileURLToPath(new URL('../proto/', import.meta.url));

/** Absolute path of the `proto/` folder (the root of `custodian/v1/*.proto` import paths). */
export const PROTO_DIR: string = existsSync(`${PACKAGED}custodian/v1`)
  ? PACKAGED
  : fileURLToPath(new URL('../../../proto/', import.meta.url));

function load(): protobuf.Root {
  const root = new protobuf.Root();
  // Imports are written relative to PROTO_DIR ("custodian/v1/x.proto").
  root.resolvePath = (_origin, target) => (target.startsWith('/') ? target : `${PROTO_DIR}${target}`);
  const files = readdirSync(`${PROTO_DIR}custodian/v1`)
    .filter((f) => f.endsWith('.proto'))
    .sort()
    .map((f) => `custodian/v1/${f}`);
  root.loadSync(files, { keepCase: false });
  root.resolveAll();
  return root;
}

/** The reflected schema root (all of `custodian.v1`). */
export const schemaRoot: protobuf.Root = load();

/**
 * Look up a message type by its full name, e.g. `custodian.v1.Envelope`.
 * @throws Error when the schema has no such message (a programming error).
 */
export function messageType(fullName: string): protobuf.Type {
  return schemaRoot.lookupType(fullName);
}
