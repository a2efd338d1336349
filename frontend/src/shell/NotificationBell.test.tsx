import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import type { NotificationOut } from '../api/types';
import { makeMe } from '../test/fixtures';
import { apiError, json, stubFetch, type StubRequest } from '../test/fetchStub';
import { renderApp } from '../test/render';

function makeNotification(overrides: Partial<NotificationOut> = {}): NotificationOut {
  return {
    id: '00000000-0000-4000-8000-00000000c001',
    kind: 'credits.received',
    title: 'You received 20.5 credits',
    body: 'From Segmentation.',
    data: {},
    created_at: new Date().toISOString(),
    read_at: null,
    ...overrides,
  };
}

const RECEIVED = makeNotification();
const SIGN_IN = makeNotification({
  id: '00000000-0000-4000-8000-00000000c002',
  kind: 'account.new_sign_in',
  title: 'New sign-in',
  body: 'Someone signed in to your account from Firefox on Linux.',
  read_at: '2026-11-01T10:00:00Z',
});

/** The server's notifications for one user, kept in memory so marking read changes what is listed. */
function notificationServer(items: NotificationOut[]) {
  let stored = items.map((item) => ({ ...item }));
  const unread = () => stored.filter((item) => item.read_at === null).length;
  return {
    'GET /api/v1/me': json(200, makeMe()),
    'GET /api/v1/notifications/unread-count': () => json(200, { unread: unread() }),
    'GET /api/v1/notifications': () => json(200, { items: stored, next_cursor: null }),
    [`POST /api/v1/notifications/${RECEIVED.id}/read`]: () => {
      stored = stored.map((item) => (item.id === RECEIVED.id ? { ...item, read_at: '2026-11-30T12:00:00Z' } : item));
      return json(200, stored.find((item) => item.id === RECEIVED.id));
    },
    'POST /api/v1/notifications/read-all': () => {
      stored = stored.map((item) => ({ ...item, read_at: item.read_at ?? '2026-11-30T12:00:00Z' }));
      return json(200, { unread: 0 });
    },
  } satisfies Record<string, Response | ((request: StubRequest) => Response)>;
}

async function openBell(name: RegExp | string = /Notifications/) {
  const user = userEvent.setup();
  await user.click(await screen.findByRole('button', { name }));
  return { user, panel: await screen.findByRole('dialog', { name: 'Notifications' }) };
}

describe('notification bell', () => {
  it('shows the unread count and lists the latest notifications when opened', async () => {
    const api = stubFetch(notificationServer([RECEIVED, SIGN_IN]));
    renderApp('/');

    expect(await screen.findByRole('button', { name: 'Notifications, 1 unread' })).toBeInTheDocument();
    expect(api.callsTo('GET', '/api/v1/notifications')).toHaveLength(0);

    const { panel } = await openBell();
    expect(await within(panel).findByText(RECEIVED.title)).toBeInTheDocument();
    expect(within(panel).getByText(RECEIVED.body)).toBeInTheDocument();
    expect(within(panel).getByText(SIGN_IN.title)).toBeInTheDocument();
    expect(within(panel).getByText(SIGN_IN.body)).toBeInTheDocument();
    expect(within(panel).getAllByText('Unread')).toHaveLength(1);
    expect(Object.fromEntries(api.callsTo('GET', '/api/v1/notifications')[0].query)).toEqual({
      limit: '20',
      unread_only: 'false',
    });
  });

  it('marks one notification read when it is clicked, and only an unread one', async () => {
    const api = stubFetch(notificationServer([RECEIVED, SIGN_IN]));
    renderApp('/');
    const { user, panel } = await openBell('Notifications, 1 unread');

    await user.click(await within(panel).findByRole('button', { name: new RegExp(SIGN_IN.title) }));
    await user.click(within(panel).getByRole('button', { name: new RegExp(RECEIVED.title) }));

    expect(await screen.findByRole('button', { name: 'Notifications' })).toBeInTheDocument();
    await waitFor(() => expect(within(panel).queryByText('Unread')).not.toBeInTheDocument());
    const reads = api.calls.filter((call) => call.method === 'POST');
    expect(reads.map((call) => call.path)).toEqual([`/api/v1/notifications/${RECEIVED.id}/read`]);
  });

  it('marks all read, with the CSRF token', async () => {
    const second = makeNotification({ id: '00000000-0000-4000-8000-00000000c003', title: 'Monthly grant' });
    const api = stubFetch(notificationServer([RECEIVED, second]));
    renderApp('/');
    const { user, panel } = await openBell('Notifications, 2 unread');

    await user.click(within(panel).getByRole('button', { name: 'Mark all read' }));

    expect(await screen.findByRole('button', { name: 'Notifications' })).toBeInTheDocument();
    expect(within(panel).getByRole('button', { name: 'Mark all read' })).toBeDisabled();
    const [call] = api.callsTo('POST', '/api/v1/notifications/read-all');
    expect(call.headers.get('X-CSRF-Token')).toBe(makeMe().csrf_token);
  });

  it('says when there are no notifications', async () => {
    stubFetch(notificationServer([]));
    renderApp('/');
    const { panel } = await openBell('Notifications');

    expect(await within(panel).findByText('No notifications yet.')).toBeInTheDocument();
    expect(within(panel).getByRole('button', { name: 'Mark all read' })).toBeDisabled();
  });

  it('shows loading, then an error with a retry', async () => {
    let fail: (response: Response) => void = () => {};
    let answer = () => new Promise<Response>((resolve) => (fail = resolve));
    stubFetch({
      ...notificationServer([RECEIVED]),
      'GET /api/v1/notifications': () => answer(),
    });
    renderApp('/');
    const { user, panel } = await openBell('Notifications, 1 unread');
    expect(await within(panel).findByRole('status')).toHaveTextContent('Loading…');

    fail(apiError(500, 'internal', 'The notifications could not be read.'));
    expect(await within(panel).findByRole('alert')).toHaveTextContent('The notifications could not be read.');

    answer = async () => json(200, { items: [RECEIVED], next_cursor: null });
    await user.click(within(panel).getByRole('button', { name: 'Retry' }));
    expect(await within(panel).findByText(RECEIVED.title)).toBeInTheDocument();
  });
});
