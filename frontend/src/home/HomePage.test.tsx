import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import { makeMembership, makeSession } from '../sessions/testData';
import { emptyPage, makeMe, makeWallet, SUPER_ADMIN } from '../test/fixtures';
import { json, stubFetch } from '../test/fetchStub';
import { renderApp } from '../test/render';

describe('home page', () => {
  it('points a super admin outside any group to admin mode', async () => {
    stubFetch({
      'GET /api/v1/me': json(200, makeMe({}, [SUPER_ADMIN])),
      'GET /api/v1/orgs': json(200, emptyPage),
    });
    renderApp('/');
    const user = userEvent.setup();

    expect(await screen.findByRole('heading', { name: /Welcome/ })).toBeInTheDocument();
    expect(screen.queryByText(/Ask an administrator/)).not.toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Open admin mode' }));

    expect(await screen.findByRole('heading', { name: 'Organizations' })).toBeInTheDocument();
    expect(screen.getByRole('switch', { name: 'Admin mode' })).toBeChecked();
  });

  it('tells a user outside any group to ask an administrator', async () => {
    stubFetch({ 'GET /api/v1/me': json(200, makeMe()) });
    renderApp('/');

    expect(await screen.findByText(/Ask an administrator to add you/)).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Open admin mode' })).not.toBeInTheDocument();
  });

  it('shows what runs, waits and is paused, the balance with its runway, and unread notices', async () => {
    stubFetch({
      'GET /api/v1/me': json(200, makeMe({ memberships: [makeMembership()] })),
      'GET /api/v1/wallets/me': json(200, makeWallet({ available: '46', balance: '50', held: '4' })),
      'GET /api/v1/sessions': json(200, {
        items: [
          makeSession({ id: 's1', name: 'training', state: 'running', billing: true, price_per_hour: '1.5' }),
          makeSession({ id: 's2', name: 'eval', state: 'running', billing: true, price_per_hour: '0.5' }),
          makeSession({ id: 's3', name: 'waiting-one', state: 'queued', billing: false, queue_position: 2, estimated_wait_seconds: 600 }),
          makeSession({ id: 's4', name: 'later', state: 'paused', billing: false, actions: ['resume', 'stop'] }),
          makeSession({ id: 's5', name: 'old', state: 'stopped', billing: false, actions: [] }),
        ],
      }),
      'GET /api/v1/notifications': json(200, {
        items: [
          {
            id: 'n1',
            kind: 'session.idle_warning',
            title: 'Your session is idle',
            body: 'training will be paused in 10 minutes.',
            data: {},
            created_at: new Date().toISOString(),
            read_at: null,
          },
        ],
        next_cursor: null,
      }),
      'GET /api/v1/notifications/unread-count': json(200, { unread: 1 }),
    });
    renderApp('/');

    const now = await screen.findByRole('region', { name: 'Your sessions now' });
    expect(await within(now).findByRole('article', { name: 'training' })).toBeInTheDocument();
    expect(within(now).getByRole('article', { name: 'eval' })).toBeInTheDocument();
    expect(within(now).getByRole('article', { name: 'waiting-one' })).toHaveTextContent('position 2, estimated wait about 10 min');
    expect(within(now).getByRole('button', { name: 'Resume' })).toBeInTheDocument();
    expect(within(now).queryByRole('article', { name: 'old' })).not.toBeInTheDocument();

    const credits = screen.getByRole('region', { name: 'Your credits' });
    expect(credits).toHaveTextContent('46 credits');
    // A balance of 50 (46 available, 4 held for these very sessions) at 1.5 + 0.5 an hour: 25 hours.
    expect(within(credits).getByTestId('runway')).toHaveTextContent(/^About 25 h at your current 2 credits\/h, until /);

    const notices = await screen.findByRole('region', { name: 'Notices' });
    expect(notices).toHaveTextContent('Your session is idle');
    expect(notices).toHaveTextContent('training will be paused in 10 minutes.');
  });
});
