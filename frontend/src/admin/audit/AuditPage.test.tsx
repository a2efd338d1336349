import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import type { AuditEntryOut } from '../../api/types';
import { json, stubFetch } from '../../test/fetchStub';
import { makeMe, SUPER_ADMIN } from '../../test/fixtures';
import { renderApp } from '../../test/render';

const ORG_ID = '0b6f7c1e-4f7a-4c1e-9a55-2d3c4b5a6f70';

function entry(overrides: Partial<AuditEntryOut>): AuditEntryOut {
  return {
    id: 1,
    at: '2026-11-30T10:00:00Z',
    actor_id: null,
    actor_email: null,
    actor_name: null,
    action: 'org.create',
    target_type: null,
    target_id: null,
    target_name: null,
    target_email: null,
    org_id: null,
    group_id: null,
    outcome: 'allowed',
    detail: {},
    ...overrides,
  };
}

const ENTRIES = [
  entry({
    id: 3,
    actor_id: '5e0c6f2a-1b2c-4d3e-8f4a-5b6c7d8e9f00',
    actor_email: 'root@example.org',
    actor_name: 'Ada Root',
    target_type: 'org',
    target_id: ORG_ID,
    target_name: 'Astronomy',
  }),
  // A failed sign-in: nobody signed in; the email typed names who tried.
  entry({
    id: 2,
    action: 'auth.login',
    outcome: 'failed',
    actor_email: 'alice@example.org',
    target_type: 'user',
    target_id: 'alice@example.org',
    target_name: 'Alice',
    target_email: 'alice@example.org',
    detail: { reason: 'wrong_password' },
  }),
  entry({ id: 1, action: 'refill.run' }),
];

describe('audit log', () => {
  it('names actors and targets, and who tried a failed sign-in', async () => {
    stubFetch({
      'GET /api/v1/me': json(200, makeMe({}, [SUPER_ADMIN])),
      'GET /api/v1/audit': json(200, { items: ENTRIES, next_cursor: null }),
    });
    renderApp('/admin/audit');

    const table = await screen.findByRole('table', { name: 'Audit log' });
    const rows = within(table).getAllByRole('row').slice(1);
    expect(rows[0]).toHaveTextContent('Ada Root');
    expect(rows[0]).toHaveTextContent('org Astronomy');
    expect(rows[0]).not.toHaveTextContent(ORG_ID);
    expect(rows[1]).toHaveTextContent('alice@example.org');
    expect(rows[1]).toHaveTextContent('not signed in');
    expect(rows[1]).toHaveTextContent('user Alice');
    expect(rows[1]).not.toHaveTextContent('system');
    expect(rows[2]).toHaveTextContent('system');
  });

  it('reads oldest first across every page when asked, keeping the order in the address', async () => {
    const api = stubFetch({
      'GET /api/v1/me': json(200, makeMe({}, [SUPER_ADMIN])),
      'GET /api/v1/audit': json(200, { items: ENTRIES, next_cursor: null }),
    });
    renderApp('/admin/audit');
    const user = userEvent.setup();

    await screen.findByRole('table', { name: 'Audit log' });
    expect(api.callsTo('GET', '/api/v1/audit')[0].query.get('sort')).toBeNull();
    await user.click(screen.getByRole('button', { name: /Time/ }));

    const last = () => api.callsTo('GET', '/api/v1/audit').at(-1)!;
    await expect.poll(() => last().query.get('sort')).toBe('at');
  });
});
