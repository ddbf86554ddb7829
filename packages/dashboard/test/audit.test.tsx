// @vitest-environment jsdom
import { notifications } from '@mantine/notifications';
import { cleanup, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import axe from 'axe-core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AuditPage, csvField, toCsv } from '../src/pages/audit';
import { mockFetch, renderAt } from './render';

const entry = (i: number, over: Record<string, unknown> = {}) => ({
  audit_id: `a${i}`,
  at: '2026-01-01T00:00:00Z',
  actor_user_id: 'u1',
  action: i % 2 === 0 ? 'user.create' : 'api_key.revoke',
  target_type: 'user',
  target_id: `t${i}`,
  details: { n: i },
  ...over,
});

/** axe-core over the rendered document: no serious or critical violation (colour contrast needs layout jsdom lacks). */
async function expectNoSeriousAxeViolations() {
  const r = await axe.run(document.body, { rules: { 'color-contrast': { enabled: false } } });
  const bad = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(bad.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);
}

afterEach(() => {
  cleanup();
  notifications.clean();
  vi.restoreAllMocks();
});

describe('CSV export escaping', () => {
  it('neutralises spreadsheet formulas and quotes separators, quotes and line breaks', () => {
    expect(csvField('=HYPERLINK("http://evil")')).toBe(`"'=HYPERLINK(""http://evil"")"`);
    expect(csvField('+1+2')).toBe("'+1+2");
    expect(csvField('-2')).toBe("'-2");
    expect(csvField('@SUM(A1)')).toBe("'@SUM(A1)");
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('line1\nline2')).toBe('"line1\nline2"');
    expect(csvField('plain')).toBe('plain');
    expect(csvField(null)).toBe('');
    expect(csvField({ k: 'v,w' })).toBe('"{""k"":""v,w""}"');
  });

  it('writes a header and one CRLF-terminated row per entry', () => {
    const csv = toCsv([entry(1, { action: '=cmd|calc' })]);
    expect(csv.split('\r\n')).toEqual([
      'at,actor_user_id,action,target_type,target_id,details,audit_id',
      `2026-01-01T00:00:00Z,u1,'=cmd|calc,user,t1,"{""n"":1}",a1`,
      '',
    ]);
  });
});

describe('Audit log', () => {
  it('sends the filters to the server (kept in the URL), and exports every filtered page as CSV', async () => {
    const all = Array.from({ length: 250 }, (_, i) => entry(i));
    all[3] = entry(3, { action: '=evil()' });
    // a tiny server: filters by action prefix and actor, paginates, counts matches
    const seen = mockFetch([
      [
        'GET /admin/v1/audit',
        (r) => {
          const q = new URL(r.url).searchParams;
          const page = Number(q.get('page'));
          const size = Number(q.get('page_size'));
          const action = q.get('action');
          const actor = q.get('actor_user_id');
          const hits = all.filter(
            (e) =>
              (action === null || e.action.startsWith(action.replace(/\*$/, ''))) &&
              (actor === null || e.actor_user_id === actor),
          );
          return {
            body: { data: hits.slice((page - 1) * size, page * size), page, page_size: size, total: hits.length },
          };
        },
      ],
    ]);
    const blobs: Blob[] = [];
    URL.createObjectURL = vi.fn((b: Blob) => {
      blobs.push(b);
      return 'blob:x';
    }) as typeof URL.createObjectURL;
    URL.revokeObjectURL = vi.fn();
    const click = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(() => {});
    renderAt(<AuditPage />, '/audit?page=2');
    const table = await screen.findByRole('table', { name: 'Audit log' });
    expect(within(table).getAllByRole('row')).toHaveLength(21);
    await expectNoSeriousAxeViolations();
    const user = userEvent.setup();
    await user.type(screen.getByRole('textbox', { name: /^Action/ }), 'user.');
    await user.type(screen.getByRole('textbox', { name: /^Actor user ID/ }), 'u1');
    await user.click(screen.getByRole('button', { name: 'Apply filters' }));
    await waitFor(() => {
      const last = new URL(seen.at(-1)!.url).searchParams;
      expect(last.get('action')).toBe('user.');
      expect(last.get('actor_user_id')).toBe('u1');
      // a new filter goes back to page 1
      expect(last.get('page')).toBe('1');
      expect(last.has('target_type')).toBe(false);
    });
    // 125 matches (the even entries): the server's total drives the pager
    await screen.findByText(/of 125/);
    await user.click(screen.getByRole('button', { name: 'Export CSV' }));
    await screen.findByText('Exported 125 audit entries');
    expect(click).toHaveBeenCalledTimes(1);
    const exportReqs = seen.filter((r) => new URL(r.url).searchParams.get('page_size') === '200');
    expect(exportReqs.map((r) => new URL(r.url).searchParams.get('page'))).toEqual(['1']);
    expect(exportReqs.every((r) => new URL(r.url).searchParams.get('action') === 'user.')).toBe(true);
    const text = await blobs[0]?.text();
    expect(text?.split('\r\n')).toHaveLength(127);
    expect(text).not.toContain('api_key.revoke');
  });

  it('reads the filters from the URL and says when nothing matches', async () => {
    const seen = mockFetch([['GET /admin/v1/audit', () => ({ body: { data: [], page: 1, page_size: 20, total: 0 } })]]);
    renderAt(<AuditPage />, '/audit?action=policy.&from=2026-01-01T00:00:00Z');
    await screen.findByText('No audit entry matches the filters.');
    const q = new URL(seen[0]!.url).searchParams;
    expect(q.get('action')).toBe('policy.');
    expect(q.get('from')).toBe('2026-01-01T00:00:00Z');
    expect(screen.getByRole('textbox', { name: /^Action/ })).toHaveProperty('value', 'policy.');
  });

  it('exports CSV with spreadsheet formulas neutralised, paging through the result', async () => {
    const all = Array.from({ length: 250 }, (_, i) => entry(i));
    all[3] = entry(3, { action: '=evil()' });
    const seen = mockFetch([
      [
        'GET /admin/v1/audit',
        (r) => {
          const q = new URL(r.url).searchParams;
          const page = Number(q.get('page'));
          const size = Number(q.get('page_size'));
          return {
            body: { data: all.slice((page - 1) * size, page * size), page, page_size: size, total: all.length },
          };
        },
      ],
    ]);
    const blobs: Blob[] = [];
    URL.createObjectURL = vi.fn((b: Blob) => {
      blobs.push(b);
      return 'blob:x';
    }) as typeof URL.createObjectURL;
    URL.revokeObjectURL = vi.fn();
    vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(() => {});
    renderAt(<AuditPage />, '/audit');
    await screen.findByRole('table', { name: 'Audit log' });
    await userEvent.setup().click(screen.getByRole('button', { name: 'Export CSV' }));
    await screen.findByText('Exported 250 audit entries');
    const exportReqs = seen.filter((r) => new URL(r.url).searchParams.get('page_size') === '200');
    expect(exportReqs.map((r) => new URL(r.url).searchParams.get('page'))).toEqual(['1', '2']);
    const text = await blobs[0]?.text();
    expect(text).toContain(`'=evil()`);
  });

  it('shows the problem when the log cannot be read', async () => {
    mockFetch([
      [
        'GET /admin/v1/audit',
        () => ({
          status: 403,
          body: {
            title: 'Your role does not allow this action',
            status: 403,
            code: 'ROLE_FORBIDDEN',
            detail: 'this action needs role ADMIN',
          },
        }),
      ],
    ]);
    renderAt(<AuditPage />, '/audit');
    const alert = (await screen.findByText('this action needs role ADMIN')).closest('[role="alert"]');
    expect(alert?.textContent).toContain('Your role does not allow this action');
  });
});
