/** Admin API of the keys room (`Admin: master keys`, Admin only): refresh, key changes, recovery drill. */
import { type AdminRouter, actor, B, P } from '../admin/route.js';
import { ADMIN, anyObject, obj, pageEnvelope, pageQuery } from '../admin/schemas.js';
import { UUID } from '../api/schemas.js';
import { ApiError } from '../errors.js';
import type { PageRequest } from '../store.js';
import type { KeyService } from './service.js';

const TAGS = ['Admin: master keys'];
const party = obj({ kind: { type: 'string', enum: ['server', 'device'] }, id: UUID }, ['kind', 'id']);
const keyParams = obj({ master_key_id: UUID }, ['master_key_id']);
const changeParams = obj({ master_key_id: UUID, change_id: UUID }, ['master_key_id', 'change_id']);

type ChangeBody = {
  reason: 'replace-signer' | 'reshare';
  old?: { kind: 'server' | 'device'; id: string };
  new?: { kind: 'server' | 'device'; id: string };
  threshold?: number;
  signers?: { kind: 'server' | 'device'; id: string }[];
};

function changeInput(b: ChangeBody) {
  const missing = (field: string) =>
    new ApiError('VALIDATION_FAILED', `${field} is required for reason ${b.reason}`, [
      { field, message: `required for reason ${b.reason}` },
    ]);
  if (b.reason === 'replace-signer') {
    if (!b.old) throw missing('body.old');
    if (!b.new) throw missing('body.new');
    return { reason: b.reason, old: b.old, new: b.new } as const;
  }
  if (b.threshold === undefined) throw missing('body.threshold');
  if (!b.signers) throw missing('body.signers');
  return { reason: b.reason, threshold: b.threshold, signers: b.signers } as const;
}

/** Register the key lifecycle routes. */
export function keyRoutes(r: AdminRouter, keys: KeyService): void {
  r.route(
    'POST',
    '/admin/v1/master-keys/:master_key_id/refresh',
    {
      roles: ADMIN,
      stepUp: true,
      tags: TAGS,
      summary: 'Refresh every key share of the master key (same signers, same public keys, new shares)',
      description:
        'Runs a REFRESH ceremony among the master key’s signers (all must be online) with the 5-minute deadline. ' +
        'Returns 202 with the ceremony (kind `refresh`); poll GET /admin/v1/ceremonies/{ceremony_id}. On success the ' +
        'key’s epoch grows by one, REFRESH_KEY_SHARES fires and pooled presignatures are discarded.',
      params: keyParams,
      body: obj({}),
      status: 202,
      response: anyObject('The ceremony'),
      errors: ['RESOURCE_NOT_FOUND', 'CONFLICT', 'SIGNERS_UNAVAILABLE'],
    },
    async (req) => keys.startRefresh(actor(req), P<{ master_key_id: string }>(req).master_key_id),
  );
  r.route(
    'POST',
    '/admin/v1/master-keys/:master_key_id/key-changes',
    {
      roles: ADMIN,
      stepUp: true,
      tags: TAGS,
      summary:
        'Prepare a key change (replace a signer, or reshare to new signers and threshold) for an Admin device to sign',
      description:
        '`replace-signer`: `old` (a party of the key) is replaced by `new` (a registered server signer or approved device, ' +
        'not a party), same threshold. `reshare`: the new set `signers` and threshold t′ (2 ≤ t′ ≤ n′). The new set needs ' +
        'at least the configured number of approved devices (seed §8: 2). Returns the change with its `document` ' +
        '(KeyChangeDocument) and `digest` (hex SHA-256); nothing runs until an Admin’s enrolled device signs the digest ' +
        '(POST …/signature).',
      params: keyParams,
      body: obj(
        {
          reason: { type: 'string', enum: ['replace-signer', 'reshare'] },
          old: party,
          new: party,
          threshold: {
            type: 'integer',
            minimum: 1,
            maximum: 64,
            description: 't′: signers needed to sign after the change',
          },
          signers: { type: 'array', minItems: 1, maxItems: 64, items: party },
        },
        ['reason'],
      ),
      status: 201,
      response: anyObject('The key change'),
      errors: ['RESOURCE_NOT_FOUND', 'CONFLICT', 'SIGNERS_UNAVAILABLE'],
    },
    async (req) =>
      keys.createKeyChange(
        actor(req),
        P<{ master_key_id: string }>(req).master_key_id,
        changeInput(B<ChangeBody>(req)),
      ),
  );
  r.route(
    'GET',
    '/admin/v1/master-keys/:master_key_id/key-changes',
    {
      roles: ADMIN,
      tags: TAGS,
      summary: 'Key changes of the master key, newest first',
      params: keyParams,
      querystring: pageQuery,
      status: 200,
      response: pageEnvelope('Key changes, newest first'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => {
      const id = P<{ master_key_id: string }>(req).master_key_id;
      const { page, page_size } = req.query as PageRequest;
      await keys.store.key(id);
      return keys.store.listChanges(id, { page, page_size });
    },
  );
  r.route(
    'GET',
    '/admin/v1/master-keys/:master_key_id/key-changes/:change_id',
    {
      roles: ADMIN,
      tags: TAGS,
      summary: 'One key change',
      description: 'status AWAITING_SIGNATURE | RUNNING | COMMITTING | SUCCEEDED | FAILED.',
      params: changeParams,
      status: 200,
      response: anyObject('Key change'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => {
      const p = P<{ master_key_id: string; change_id: string }>(req);
      return keys.store.view(p.master_key_id, p.change_id);
    },
  );
  r.route(
    'POST',
    '/admin/v1/master-keys/:master_key_id/key-changes/:change_id/signature',
    {
      roles: ADMIN,
      stepUp: true,
      tags: TAGS,
      summary: 'Sign a key change with an Admin’s enrolled device and start the reshare',
      description:
        '`signature`: P-256 ECDSA r‖s (128 hex digits) over the change’s `digest` by `device_id`, an APPROVED device ' +
        'of an Admin. Starts the RESHARE ceremony (kind `reshare`, 5-minute deadline); returns 202 with it. The old ' +
        'signers keep working until every party confirmed the new shares.',
      params: changeParams,
      body: obj({ device_id: UUID, signature: { type: 'string', pattern: '^[0-9a-f]{128}$' } }, [
        'device_id',
        'signature',
      ]),
      status: 202,
      response: anyObject('The ceremony'),
      errors: ['RESOURCE_NOT_FOUND', 'CONFLICT', 'SIGNERS_UNAVAILABLE'],
    },
    async (req) => {
      const p = P<{ master_key_id: string; change_id: string }>(req);
      return keys.signKeyChange(actor(req), p.master_key_id, p.change_id, B(req));
    },
  );
  r.route(
    'POST',
    '/admin/v1/master-keys/:master_key_id/drill',
    {
      roles: ADMIN,
      stepUp: true,
      tags: TAGS,
      summary: 'Recovery drill: the signers sign a fixed test digest under every key; backups reported per signer',
      description:
        'Runs a DRILL ceremony among t reachable signers (no funds move, no process learns a key). When done, the ' +
        'ceremony’s `result` holds `signatures` [{algorithm, public_key, digest, signature, verified}] (verified by the ' +
        'coordinator) and `signers` [{kind, id, epoch, backup_epoch, backup_at, backup_current}].',
      params: keyParams,
      body: obj({}),
      status: 202,
      response: anyObject('The ceremony'),
      errors: ['RESOURCE_NOT_FOUND', 'CONFLICT', 'SIGNERS_UNAVAILABLE'],
    },
    async (req) => keys.startDrill(actor(req), P<{ master_key_id: string }>(req).master_key_id),
  );
}
