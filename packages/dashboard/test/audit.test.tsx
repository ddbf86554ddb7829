// @vitest-environment jsdom
import { notifications } from '@mantine/notifications';
import { cleanup, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AuditPage, csvField, toCsv } from '../src/pages/audit';
import { axeViolations, mockFetch, renderAt } from './render';

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
  it('shows a page of entries, filters it on the client, and exports every page as CSV', async () => {
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
    const click = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(() => {});
    renderAt(<AuditPage />, '/audit');
    const table = await screen.findByRole('table', { name: 'Audit log' });
    expect(within(table).getAllByRole('row')).toHaveLength(21);
    expect(await axeViolations()).toEqual([]);
    const user = userEvent.setup();
    await user.type(screen.getByRole('textbox', { name: 'Filter by action' }), 'evil');
    await waitFor(() => expect(within(table).getAllByRole('row')).toHaveLength(2));
    await user.click(screen.getByRole('button', { name: 'Export CSV' }));
    await screen.findByText('Exported 1 audit entries');
    expect(click).toHaveBeenCalledTimes(1);
    const exportReqs = seen.filter((r) => new URL(r.url).searchParams.get('page_size') === '200');
    expect(exportReqs.map((r) => new URL(r.url).searchParams.get('page'))).toEqual(['1', '2']);
    const text = await blobs[0]?.text();
    expect(text).toContain(`'=evil()`);
    expect(text?.split('\r\n')).toHaveLength(3);
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
