/**
 * Routes of the devices room: the Admin's device list and decisions (`Admin: devices`), and the
 * mobile app's unauthenticated enrollment request and status poll under `/devices/v1` (`Devices`).
 */
import { type AdminRouter, actor, B, P } from '../admin/route.js';
import { ADMIN, anyObject, obj, pageEnvelope } from '../admin/schemas.js';
import { PAGE_QUERY, UUID } from '../api/schemas.js';
import type { PageRequest } from '../store.js';
import { DEVICE_NAME_MAX_CHARS } from './binding.js';
import type { DeviceService } from './service.js';

const deviceParams = obj({ device_id: UUID }, ['device_id']);

/** Register the Admin's device routes. */
export function deviceRoutes(r: AdminRouter, devices: DeviceService): void {
  r.route(
    'GET',
    '/admin/v1/devices',
    {
      roles: ADMIN,
      tags: ['Admin: devices'],
      summary: 'Mobile signer devices and enrollment requests',
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: { status: { type: 'string', enum: ['PENDING', 'APPROVED', 'REJECTED', 'REMOVED'] }, ...PAGE_QUERY },
      },
      status: 200,
      response: pageEnvelope('Devices, oldest first'),
    },
    async (req) => {
      const q = req.query as PageRequest & { status?: string };
      return devices.listDevices({ page: q.page, page_size: q.page_size }, q.status);
    },
  );
  r.route(
    'GET',
    '/admin/v1/devices/:device_id',
    {
      roles: ADMIN,
      tags: ['Admin: devices'],
      summary: 'One device',
      params: deviceParams,
      status: 200,
      response: anyObject('Device'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => devices.getDevice(P<{ device_id: string }>(req).device_id),
  );
  r.route(
    'POST',
    '/admin/v1/devices/:device_id/approve',
    {
      roles: ADMIN,
      tags: ['Admin: devices'],
      summary: 'Approve a PENDING device after checking its fingerprint out of band, binding it to its user',
      description:
        'The fingerprint read from the phone must match (spaces and colons ignored), else 422. `user_id` is the ' +
        'dashboard user who holds the phone (existing, not blocked, else 422): only devices bound to an Admin sign ' +
        "that Admin's policy versions. A device enrolled before MPC peer ids were bound cannot be approved (409): " +
        'it must enrol again.',
      params: deviceParams,
      body: obj({ fingerprint: { type: 'string', minLength: 1, maxLength: 200 }, user_id: UUID }, [
        'fingerprint',
        'user_id',
      ]),
      stepUp: true,
      status: 200,
      response: anyObject('device_id, status, user_id'),
      errors: ['RESOURCE_NOT_FOUND', 'CONFLICT'],
    },
    async (req) => {
      const b = B<{ fingerprint: string; user_id: string }>(req);
      return devices.decideDevice(
        actor(req),
        P<{ device_id: string }>(req).device_id,
        'approve',
        b.fingerprint,
        b.user_id.toLowerCase(),
      );
    },
  );
  r.route(
    'POST',
    '/admin/v1/devices/:device_id/reject',
    {
      roles: ADMIN,
      tags: ['Admin: devices'],
      summary: 'Reject a PENDING device',
      params: deviceParams,
      status: 200,
      response: anyObject('device_id, status'),
      errors: ['RESOURCE_NOT_FOUND', 'CONFLICT'],
    },
    async (req) => devices.decideDevice(actor(req), P<{ device_id: string }>(req).device_id, 'reject'),
  );
  r.route(
    'DELETE',
    '/admin/v1/devices/:device_id',
    {
      roles: ADMIN,
      tags: ['Admin: devices'],
      summary: 'Remove a device',
      params: deviceParams,
      status: 200,
      response: anyObject('device_id, status'),
      errors: ['RESOURCE_NOT_FOUND', 'CONFLICT'],
    },
    async (req) => devices.decideDevice(actor(req), P<{ device_id: string }>(req).device_id, 'remove'),
  );
}

/** Register the mobile app's enrollment routes (no session; rate limited per client address). */
export function enrollmentRoutes(r: AdminRouter, devices: DeviceService): void {
  r.route(
    'POST',
    '/devices/v1/enrollments',
    {
      roles: null,
      tags: ['Devices'],
      summary: 'Mobile app: submit an enrollment request with the device identity public key and MPC peer id',
      description:
        'public_key: SEC1 P-256 point (hex, 33 or 65 bytes). Requires iOS 15.5+ or Android 10+ (API 29) with hardware-backed ' +
        'key storage. mpc_peer_id: the Ed25519 libp2p peer id the device uses in ceremonies, with mpc_peer_proof, the ' +
        "peer key's Ed25519 signature (64 bytes hex) over deviceEnrollmentDigest(public_key, mpc_peer_id) of " +
        '@custodian/wire; it is pinned (hellos naming another id are refused) and may not be a server signer’s (409) or ' +
        'another live device’s (409). name: printable text, no control, format or bidi override characters, 1–' +
        `${DEVICE_NAME_MAX_CHARS} characters. Returns the fingerprint (SHA-256 of the compressed key, 16 groups of 4 hex ` +
        'digits) that the administrator compares out of band before approving.',
      body: obj(
        {
          name: { type: 'string', minLength: 1, maxLength: DEVICE_NAME_MAX_CHARS },
          platform: { type: 'string', enum: ['ios', 'android'] },
          os_version: { type: 'string', pattern: '^[0-9]{1,3}(\\.[0-9]{1,3}){0,2}$' },
          hardware_backed_keystore: { type: 'boolean' },
          public_key: { type: 'string', pattern: '^[0-9a-fA-F]{66}$|^[0-9a-fA-F]{130}$' },
          mpc_peer_id: {
            type: 'string',
            pattern: '^[1-9A-HJ-NP-Za-km-z]{40,80}$',
            description: 'Ed25519 libp2p peer id (base58btc)',
          },
          mpc_peer_proof: {
            type: 'string',
            pattern: '^[0-9a-fA-F]{128}$',
            description:
              'Ed25519 signature by the mpc_peer_id key over deviceEnrollmentDigest(public_key, mpc_peer_id)',
          },
        },
        ['name', 'platform', 'os_version', 'hardware_backed_keystore', 'public_key', 'mpc_peer_id', 'mpc_peer_proof'],
      ),
      status: 201,
      response: anyObject('device_id, status PENDING, fingerprint, mpc_peer_id'),
      errors: ['CONFLICT'],
      rateLimit: r.loginLimit,
    },
    async (req) => devices.requestEnrollment(B(req)),
  );
  r.route(
    'GET',
    '/devices/v1/enrollments/:device_id',
    {
      roles: null,
      tags: ['Devices'],
      summary: 'Mobile app: poll the status of its enrollment request',
      params: deviceParams,
      status: 200,
      response: anyObject('device_id, status, fingerprint'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => {
      const d = await devices.getDevice(P<{ device_id: string }>(req).device_id);
      return { device_id: d.device_id, status: d.status, fingerprint: d.fingerprint };
    },
  );
}
