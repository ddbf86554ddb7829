/**
 * Serving the built dashboard (dashboard.ts): `/` and SPA paths answer index.html with the
 * dashboard CSP and `no-cache`, `/assets/*` files are immutable, unknown API paths keep the
 * problem+json 404, and without `dashboardDir` `/` is a 404 as before; a folder without
 * index.html is a start-up error.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCoordinator } from '../src/coordinator.js';
import { DASHBOARD_CSP } from '../src/dashboard.js';
import { type Harness, openTestDb, startHarness } from './helpers.js';

let dir: string;
let h: Harness;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'custodian-dash-'));
  await mkdir(join(dir, 'assets'));
  await writeFile(join(dir, 'index.html'), '<!doctype html><title>Custodian</title><div id="root"></div>');
  await writeFile(join(dir, 'assets', 'x.js'), 'console.log(1)');
  await writeFile(join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  h = await startHarness({ masterKey: false, coordinator: { dashboardDir: dir } });
});
afterAll(async () => {
  await h?.close();
});

describe('serving the dashboard', () => {
  it('/ and SPA paths answer index.html with the dashboard CSP and no-cache', async () => {
    for (const path of ['/', '/wallets', '/wallets/123?page=2', '/index.html']) {
      const r = await fetch(h.url + path);
      expect(r.status, path).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await r.text()).toContain('<div id="root">');
      expect(r.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
      expect(r.headers.get('cache-control')).toBe('no-cache');
      expect(r.headers.get('x-frame-options')).toBe('DENY');
    }
  });

  it('/assets/* are served immutable; other files as they are', async () => {
    const r = await fetch(`${h.url}/assets/x.js`);
    expect(r.status).toBe(200);
    expect(await r.text()).toBe('console.log(1)');
    expect(r.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(r.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
    const f = await fetch(`${h.url}/favicon.svg`);
    expect(f.status).toBe(200);
    expect(f.headers.get('content-type')).toMatch(/^image\/svg/);
    const missing = await fetch(`${h.url}/assets/nope.js`);
    expect(missing.status).toBe(404);
  });

  it('unknown API paths keep the problem+json 404 and the API CSP; API routes are unchanged', async () => {
    for (const path of [
      '/admin/v1/nope',
      '/api/v1/nope',
      '/devices/nope',
      '/.well-known/nope',
      '/metricsx/../admin/x',
    ]) {
      const r = await h.req('GET', path);
      expect(r.status, path).toBe(404);
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(r.body.code).toBe('ROUTE_NOT_FOUND');
      expect(r.headers.get('content-security-policy')).toContain("default-src 'none'");
    }
    const me = await h.req('GET', '/admin/v1/me', { token: h.adminToken });
    expect(me.status).toBe(200);
    expect(me.headers.get('content-security-policy')).toContain("default-src 'none'");
    const doc = await h.req('GET', '/api/openapi.json');
    expect(Object.keys(doc.body.paths).filter((p) => !/^\/(api|admin|devices|\.well-known)\//.test(p))).toEqual([]);
  });

  it('without dashboardDir, / is a 404 problem as before', async () => {
    const plain = await startHarness({ masterKey: false });
    try {
      const r = await plain.req('GET', '/');
      expect(r.status).toBe(404);
      expect(r.body.code).toBe('ROUTE_NOT_FOUND');
    } finally {
      await plain.close();
    }
  });

  it('a dashboardDir without index.html is a start-up error naming the folder and the fix', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'custodian-dash-empty-'));
    const { db, drop } = await openTestDb('pglite');
    try {
      await expect(
        createCoordinator({ db, mode: 'development', logger: false, dashboardDir: empty, listen: { port: 0 } }),
      ).rejects.toThrow(new RegExp(`${empty}.*run pnpm build`));
    } finally {
      await drop();
    }
  });
});
