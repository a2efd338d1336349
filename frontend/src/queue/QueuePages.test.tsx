import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import type { QueueItemOut } from '../api/types';
import { apiError, json, stubFetch } from '../test/fetchStub';
import { makeMe, SUPER_ADMIN } from '../test/fixtures';
import { renderApp } from '../test/render';
import { formatWait } from './QueueTable';

const superAdmin = json(200, makeMe({ csrf_token: 'csrf-admin' }, [SUPER_ADMIN]));

function item(overrides: Partial<QueueItemOut>): QueueItemOut {
  return {
    id: 'r1',
    user_id: '00000000-0000-4000-8000-000000000002',
    user_email: 'grace@example.org',
    group_id: '00000000-0000-4000-8000-0000000000b2',
    model: 'A100-80GB',
    tier: '1/4',
    status: 'queued',
    reason: 'No free 1/4 slot.',
    enqueued_at: '2026-11-30T11:00:00Z',
    decided_at: null,
    position: 1,
    estimated_wait_seconds: 900,
    reserved_card_id: null,
    priority: {
      value: 1.75,
      waited_seconds: 600,
      wait_bonus: 0.5,
      user_usage: 0.25,
      group_usage: 0.125,
      weight: 2,
      starving: true,
    },
    ...overrides,
  };
}

describe('queue', () => {
  it('shows every request with its standing and the parts of its priority', async () => {
    const api = stubFetch({
      'GET /api/v1/me': superAdmin,
      'GET /api/v1/queue': json(200, {
        items: [
          item({}),
          item({
            id: 'r2',
            user_email: 'alan@example.org',
            status: 'admitted',
            position: null,
            estimated_wait_seconds: null,
            priority: null,
            reason: 'Admitted.',
          }),
        ],
      }),
    });
    renderApp('/admin/queue');

    const table = await screen.findByRole('table', { name: 'Queue' });
    const queued = within(table).getByText('grace@example.org').closest('tr')!;
    expect(within(queued).getByText('Queued')).toBeInTheDocument();
    expect(within(queued).getByText('about 15 min')).toBeInTheDocument();
    expect(within(queued).getByText('1.75')).toBeInTheDocument();
    expect(within(queued).getByText('starving')).toBeInTheDocument();
    expect(queued).toHaveTextContent('wait bonus 0.5 · user usage 0.25 · group usage 0.125 · weight 2');
    const admitted = within(table).getByText('alan@example.org').closest('tr')!;
    expect(within(admitted).getByText('Admitted')).toBeInTheDocument();
    expect(within(admitted).queryByRole('button', { name: 'Cancel' })).not.toBeInTheDocument();
    expect(api.callsTo('GET', '/api/v1/queue')[0].query.get('scope')).toBe('all');
  });

  it('asks before cancelling a request and shows why it failed', async () => {
    const api = stubFetch({
      'GET /api/v1/me': superAdmin,
      'GET /api/v1/queue': json(200, { items: [item({})] }),
      'DELETE /api/v1/queue/r1': apiError(409, 'not_queued', 'The request was admitted meanwhile.'),
    });
    renderApp('/admin/queue');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Cancel' }));
    const dialog = await screen.findByRole('dialog', { name: 'Cancel request' });
    expect(dialog).toHaveTextContent("grace@example.org's queued request");
    expect(api.callsTo('DELETE', '/api/v1/queue/r1')).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Cancel request' }));
    expect(await within(dialog).findByRole('alert')).toHaveTextContent('The request was admitted meanwhile.');
  });

  it('says when the queue is empty', async () => {
    stubFetch({ 'GET /api/v1/me': superAdmin, 'GET /api/v1/queue': json(200, { items: [] }) });
    renderApp('/admin/queue');
    expect(await screen.findByText('No admission requests in your groups.')).toBeInTheDocument();
  });
});

describe('my requests', () => {
  it("lists the caller's own requests without priorities and cancels one", async () => {
    const api = stubFetch({
      'GET /api/v1/me': json(200, makeMe()),
      'GET /api/v1/queue': json(200, { items: [item({ priority: null, user_email: 'ada@example.org' })] }),
      'DELETE /api/v1/queue/r1': json(204, null),
    });
    renderApp('/requests');
    const user = userEvent.setup();

    const table = await screen.findByRole('table', { name: 'My requests' });
    expect(within(table).queryByText('Priority')).not.toBeInTheDocument();
    expect(within(table).getByText('A100-80GB 1/4')).toBeInTheDocument();
    expect(api.callsTo('GET', '/api/v1/queue')[0].query.get('scope')).toBe('own');

    await user.click(within(table).getByRole('button', { name: 'Cancel' }));
    const dialog = await screen.findByRole('dialog', { name: 'Cancel request' });
    await user.click(within(dialog).getByRole('button', { name: 'Cancel request' }));
    await waitFor(() => expect(api.callsTo('DELETE', '/api/v1/queue/r1')).toHaveLength(1));
    await waitFor(() => expect(api.callsTo('GET', '/api/v1/queue')).toHaveLength(2));
  });

  it('formats waits in words', () => {
    expect(formatWait(null)).toBe('—');
    expect(formatWait(30)).toBe('under a minute');
    expect(formatWait(3600 + 20 * 60)).toBe('about 1 h 20 min');
    expect(formatWait(7200)).toBe('about 2 h');
  });
});
