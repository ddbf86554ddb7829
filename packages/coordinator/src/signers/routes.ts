/** Admin API of the signers room: server signers (`Admin: signers`), master keys and ceremonies (`Admin: master keys`). */
import { eventStreamResponse } from '../admin/live.js';
import { type AdminRouter, actor, B, P } from '../admin/route.js';
import { ADMIN, ALL, anyObject, name, obj, pageEnvelope, pageQuery } from '../admin/schemas.js';
import { UUID } from '../api/schemas.js';
import type { PageRequest } from '../store.js';
import type { SignerService } from './service.js';

/** The page request of a validated `PAGE_QUERY` querystring. */
const pg = (q: unknown): PageRequest => {
  const { page, page_size } = q as PageRequest;
  return { page, page_size };
};

/** Register the server signer routes. */
export function signerRoutes(r: AdminRouter, signers: SignerService): void {
  r.route(
    'GET',
    '/admin/v1/signers',
    {
      roles: ADMIN,
      tags: ['Admin: signers'],
      summary: 'Registered server signers, with what the coordinator knows of its link to each',
      description:
        'Oldest first. `reachable`: this coordinator process has an open libp2p connection to the signer now ' +
        '(the link it keeps to every registered signer and redials with backoff); false when signing is off. ' +
        '`last_seen_at`: ISO time such a connection was last open — the time of this request when reachable, ' +
        'the moment the last connection closed otherwise — or null when none was open since the coordinator ' +
        'process started (kept in memory, not stored: a restart forgets it).',
      querystring: pageQuery,
      status: 200,
      response: pageEnvelope('Server signers, with reachable and last_seen_at'),
    },
    async (req) => signers.list(pg(req.query)),
  );
  r.route(
    'POST',
    '/admin/v1/signers',
    {
      roles: ADMIN,
      tags: ['Admin: signers'],
      summary: 'Register a server signer: libp2p peer id, dial address (multiaddr) and identity fingerprint',
      body: obj(
        {
          name,
          peer_id: {
            type: 'string',
            pattern: '^[1-9A-HJ-NP-Za-km-z]{40,80}$',
            description: 'libp2p peer id (base58btc)',
          },
          address: {
            type: 'string',
            minLength: 1,
            maxLength: 500,
            pattern: '^/',
            description: 'multiaddr, e.g. /ip4/10.0.0.5/tcp/7400',
          },
          fingerprint: { type: 'string', minLength: 8, maxLength: 200 },
        },
        ['name', 'peer_id', 'address', 'fingerprint'],
      ),
      stepUp: true,
      status: 201,
      response: anyObject('Server signer'),
      errors: ['CONFLICT'],
    },
    async (req) => signers.add(actor(req), B(req)),
  );
  r.route(
    'DELETE',
    '/admin/v1/signers/:signer_id',
    {
      roles: ADMIN,
      tags: ['Admin: signers'],
      summary: 'Remove a server signer',
      params: obj({ signer_id: UUID }, ['signer_id']),
      stepUp: true,
      status: 204,
      response: { description: 'Removed', type: 'null' },
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => signers.remove(actor(req), P<{ signer_id: string }>(req).signer_id),
  );
}

/** Register the master key and ceremony routes. */
export function masterKeyRoutes(r: AdminRouter, signers: SignerService): void {
  r.route(
    'GET',
    '/admin/v1/master-keys',
    {
      roles: ALL,
      tags: ['Admin: master keys'],
      summary: 'Master key records (public keys and chain codes only)',
      status: 200,
      querystring: pageQuery,
      response: pageEnvelope('Master keys, oldest first'),
    },
    async (req) => signers.pageMasterKeys(pg(req.query)),
  );
  r.route(
    'POST',
    '/admin/v1/master-keys',
    {
      roles: ADMIN,
      tags: ['Admin: master keys'],
      summary: 'Start the master key ceremony (k of n) among exactly the selected signers',
      description:
        'All selected signers must be online; they take part automatically. The ceremony times out after 5 minutes. ' +
        'Returns 202 with the ceremony record; poll GET /admin/v1/ceremonies/{ceremony_id} for progress and outcome. ' +
        'Without a signer control channel the coordinator answers 503 SIGNERS_UNAVAILABLE.',
      body: obj(
        {
          threshold: { type: 'integer', minimum: 2, maximum: 64, description: 'k: signers needed to sign' },
          signers: {
            type: 'array',
            minItems: 2,
            maxItems: 64,
            items: obj({ kind: { type: 'string', enum: ['server', 'device'] }, id: UUID }, ['kind', 'id']),
          },
        },
        ['threshold', 'signers'],
      ),
      status: 202,
      response: anyObject('The ceremony'),
      errors: ['CONFLICT', 'SIGNERS_UNAVAILABLE'],
    },
    async (req) => signers.ceremonies.startDkg(actor(req), B(req)),
  );
  r.route(
    'GET',
    '/admin/v1/ceremonies',
    {
      roles: ALL,
      tags: ['Admin: master keys'],
      summary: 'Ceremonies, newest first',
      status: 200,
      querystring: pageQuery,
      response: pageEnvelope('Ceremonies, newest first'),
    },
    async (req) => signers.ceremonies.listCeremonies(pg(req.query)),
  );
  r.route(
    'GET',
    '/admin/v1/ceremonies/:ceremony_id',
    {
      roles: ALL,
      tags: ['Admin: master keys'],
      summary: 'Ceremony progress and outcome',
      description:
        'status RUNNING | SUCCEEDED | FAILED | TIMED_OUT; progress {phase, parties_ready, parties_total}; outcome OK | ABORTED | FAILED | DEADLINE_EXCEEDED (null while running); ' +
        'blame: every blame a party reported, as the coordinator checked its evidence ({culprit, culprit_name, claimed_culprit, claimed_culprit_name, accuser, accuser_name, check, round, protocol, verified, detail, summary}: ' +
        'verified → culprit is the proven culprit; not verified → a dispute: culprit null, summary "unverified: <accuser> accuses <claimed> of <check>"); ' +
        'blamed: the proven culprits only; unverified_accusers: peer ids of the parties whose blame could not be verified.',
      params: obj({ ceremony_id: UUID }, ['ceremony_id']),
      status: 200,
      response: anyObject('Ceremony'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => signers.ceremonies.getCeremony(P<{ ceremony_id: string }>(req).ceremony_id),
  );
  r.route(
    'GET',
    '/admin/v1/ceremonies/:ceremony_id/events',
    {
      roles: ALL,
      tags: ['Admin: master keys'],
      summary: 'Live view of a ceremony (Server-Sent Events)',
      description:
        'The ceremony as GET /admin/v1/ceremonies/{ceremony_id} returns it, at once and on every change, until its status is final (not RUNNING); at most 8 open streams per user and 60 opens per minute (else 429 with Retry-After); the session, role and scope are checked again on every poll and the stream ends when they no longer hold.',
      params: obj({ ceremony_id: UUID }, ['ceremony_id']),
      status: 200,
      response: eventStreamResponse('the ceremony'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req, reply) => {
      const id = P<{ ceremony_id: string }>(req).ceremony_id;
      // session and role re-checked at every poll (admin/live.ts); ceremonies have no wallet scope
      return r.live.stream(req, reply, {
        roles: ALL,
        load: () => signers.ceremonies.getCeremony(id),
        final: (c) => (c as { status: string }).status !== 'RUNNING',
      });
    },
  );
  r.route(
    'GET',
    '/admin/v1/signing-ceremonies/:ceremony_id',
    {
      roles: ALL,
      tags: ['Admin: master keys'],
      summary: 'A signing ceremony (one signing attempt of a transfer) and its blame',
      description:
        'ceremony_id: the 48-hex-digit SIGN ceremony id (logs, webhook SIGNER_MISBEHAVIOUR). key_id, algorithm, signing_set, transfer_id, started_at, finished_at; ' +
        'outcome OK | PRESIGNATURE_UNAVAILABLE | REFUSED:<code> | ABORTED | UNAVAILABLE | DEADLINE_EXCEEDED (null while running); ' +
        'blame as in GET /admin/v1/ceremonies/{ceremony_id}. A PRESIGN ceremony that recorded blame is found too (kind presign, outcome ABORTED).',
      params: obj({ ceremony_id: { type: 'string', pattern: '^[0-9a-fA-F]{48}$' } }, ['ceremony_id']),
      status: 200,
      response: anyObject('Signing ceremony'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => signers.ceremonies.getSigningCeremony(P<{ ceremony_id: string }>(req).ceremony_id),
  );
}
