import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { emptyPage, makeConsumption, makeEntry, makeMe, makeWallet, SUPER_ADMIN } from '../test/fixtures';
import { apiError, json, stubFetch } from '../test/fetchStub';
import { renderApp } from '../test/render';
import { makeFigures, makeReport } from '../usage/testData';

const wallet = makeWallet({
  balance: '1234.5',
  held: '4.25',
  available: '1230.25',
  monthly_grant: {
    amount: '100',
    funding_wallet_id: '00000000-0000-4000-8000-0000000000f2',
    last_refill: { period: '2026-11', amount: '80', shortfall: '20', at: '2026-11-01T00:00:05Z' },
  },
});
const base = `/api/v1/wallets/${wallet.id}`;

/** The caller's own use this month, as `/api/v1/usage?by=none&every=none` answers it. */
const noUseYet = json(200, makeReport({ by: 'none', every: 'none', totals: makeFigures() }));

const history = [
  makeEntry({ id: 3, kind: 'capture', amount: '-3.5', balance_after: '1234.5', at: '2026-11-28T09:00:00Z' }),
  makeEntry({
    id: 2,
    kind: 'allocation',
    amount: '1000',
    balance_after: '1238',
    counterparty_name: 'Optics',
    memo: 'Autumn term',
    actor_email: 'marie@example.org',
    at: '2026-11-10T09:00:00Z',
  }),
  makeEntry({ id: 1, kind: 'refill', amount: '238', balance_after: '238', counterparty_name: 'Optics', at: '2026-11-01T00:00:05Z' }),
];

afterEach(() => vi.useRealTimers());

describe('wallet page', () => {
  it('is linked from the top bar and shows the figures, usage chart and history with running balance', async () => {
    const api = stubFetch({
      'GET /api/v1/me': json(200, makeMe()),
      'GET /api/v1/wallets/me': json(200, wallet),
      'GET /api/v1/usage': noUseYet,
      [`GET ${base}/consumption`]: json(200, makeConsumption(wallet.id, { '2026-11-28': '3.5', '2026-11-27': '0.004167' })),
      [`GET ${base}/entries`]: json(200, { items: history, next_cursor: null }),
    });
    renderApp('/');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('link', { name: 'Wallet' }));
    expect(await screen.findByRole('heading', { name: 'Your wallet' })).toBeInTheDocument();

    expect(await screen.findByRole('group', { name: 'Available' })).toHaveTextContent('1,230.25');
    expect(screen.getByRole('group', { name: 'Held' })).toHaveTextContent('4.25');
    expect(screen.getByRole('group', { name: 'Balance' })).toHaveTextContent('1,234.5');
    const grant = screen.getByRole('group', { name: 'Monthly grant' });
    expect(grant).toHaveTextContent('100 credits at the start of each month.');
    expect(grant).toHaveTextContent('20 credits short');

    // The chart is one labelled image; the numbers are in a table for screen readers.
    expect(await screen.findByRole('img', { name: /Credits used per day/ })).toBeInTheDocument();
    const perDay = screen.getByRole('table', { name: 'Credits used per day' });
    expect(within(perDay).getAllByRole('row')).toHaveLength(31);
    expect(within(perDay).getByRole('cell', { name: '0.004167' })).toBeInTheDocument();
    expect(screen.getByText('3.504167 credits in the last 30 days')).toBeInTheDocument();
    expect(api.callsTo('GET', `${base}/consumption`)[0].query.get('days')).toBe('30');

    const table = await screen.findByRole('table', { name: 'History' });
    const rows = within(table).getAllByRole('row').slice(1);
    expect(rows).toHaveLength(3);
    expect(rows[0]).toHaveTextContent('Usage');
    expect(within(rows[0]).getByRole('cell', { name: '-3.50' })).toBeInTheDocument();
    expect(within(rows[0]).getByRole('cell', { name: '1,234.50' })).toBeInTheDocument();
    // Two decimals in the table, the exact amount on hover.
    expect(within(rows[0]).getByTitle('Exactly 1,234.5')).toHaveTextContent('1,234.50');
    expect(within(rows[1]).getByRole('cell', { name: '+1,000.00' })).toBeInTheDocument();
    expect(within(rows[1]).getByRole('cell', { name: '1,238.00' })).toBeInTheDocument();
    expect(rows[1]).toHaveTextContent('Optics');
    expect(rows[1]).toHaveTextContent('Autumn term');
    expect(rows[2]).toHaveTextContent('Monthly refill');
  });

  it("says how much GPU time the caller used this month, and how much of it idle, even an admin's own", async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    // Late on Nov 30 in UTC: the month is still November's.
    vi.setSystemTime(new Date('2026-11-30T23:30:00Z'));
    const me = makeMe({}, [SUPER_ADMIN]);
    const totals = makeFigures({ gpu_hours: 41, idle_gpu_hours: 6, idle_share: 6 / 41, credits: '12' });
    const api = stubFetch({
      'GET /api/v1/me': json(200, me),
      'GET /api/v1/wallets/me': json(200, wallet),
      'GET /api/v1/usage': json(200, makeReport({ by: 'none', every: 'none', totals })),
      [`GET ${base}/consumption`]: json(200, makeConsumption(wallet.id)),
      [`GET ${base}/entries`]: json(200, emptyPage),
    });
    renderApp('/wallet');

    expect(await screen.findByText('This month: 41 GPU-hours, 6 of them idle (12 credits).')).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'More on the Usage page' })).toHaveAttribute('href', '/usage');
    // Filtered to the caller, so an admin's line is their own use, not what they administer.
    expect(Object.fromEntries(api.callsTo('GET', '/api/v1/usage')[0].query)).toEqual({
      since: '2026-11-01',
      by: 'none',
      every: 'none',
      user_id: me.user.id,
    });
  });

  it('says when no GPU was used this month', async () => {
    stubFetch({
      'GET /api/v1/me': json(200, makeMe()),
      'GET /api/v1/wallets/me': json(200, wallet),
      'GET /api/v1/usage': noUseYet,
      [`GET ${base}/consumption`]: json(200, makeConsumption(wallet.id)),
      [`GET ${base}/entries`]: json(200, emptyPage),
    });
    renderApp('/wallet');

    expect(await screen.findByText('No GPU use this month yet.')).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'More on the Usage page' })).toBeInTheDocument();
  });

  it('shows empty states for a new wallet', async () => {
    stubFetch({
      'GET /api/v1/me': json(200, makeMe()),
      'GET /api/v1/wallets/me': json(200, makeWallet()),
      'GET /api/v1/usage': noUseYet,
      [`GET ${base}/consumption`]: json(200, makeConsumption(wallet.id)),
      [`GET ${base}/entries`]: json(200, emptyPage),
    });
    renderApp('/wallet');

    expect(await screen.findByText(/No credits yet/)).toBeInTheDocument();
    expect(screen.getByRole('group', { name: 'Available' })).toHaveTextContent('0');
    expect(screen.getByText('No monthly grant.')).toBeInTheDocument();
    expect(await screen.findByText('No credits used in the last 30 days.')).toBeInTheDocument();
    expect(screen.queryByRole('img', { name: /Credits used per day/ })).not.toBeInTheDocument();
  });

  it('filters by kind and loads older entries with the cursor', async () => {
    const api = stubFetch({
      'GET /api/v1/me': json(200, makeMe()),
      'GET /api/v1/wallets/me': json(200, wallet),
      'GET /api/v1/usage': noUseYet,
      [`GET ${base}/consumption`]: json(200, makeConsumption(wallet.id)),
      [`GET ${base}/entries`]: ({ query }) => {
        if (query.get('kind') === 'mint') return json(200, emptyPage);
        return query.get('cursor') === 'older'
          ? json(200, { items: [history[2]], next_cursor: null })
          : json(200, { items: history.slice(0, 2), next_cursor: 'older' });
      },
    });
    renderApp('/wallet');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Load more' }));
    expect(await screen.findByText('Monthly refill')).toBeInTheDocument();
    expect(api.callsTo('GET', `${base}/entries`)[0].query.get('limit')).toBe('50');

    await user.click(screen.getByLabelText('Kind'));
    // jsdom never finishes the dropdown's opening transition, so it stays display: none.
    await user.click(await screen.findByRole('option', { name: 'Minted', hidden: true }));
    expect(await screen.findByText('No minted entries.')).toBeInTheDocument();
  });

  it('shows why the wallet could not load', async () => {
    stubFetch({
      'GET /api/v1/me': json(200, makeMe()),
      'GET /api/v1/wallets/me': apiError(404, 'not_found', 'You have no wallet yet.'),
      'GET /api/v1/usage': noUseYet,
    });
    renderApp('/wallet');

    expect(await screen.findByRole('alert')).toHaveTextContent('You have no wallet yet.');
  });
});

describe('wallet alert', () => {
  const none = {
    wallet_id: wallet.id,
    below: null,
    runway_hours: null,
    set_at: null,
    below_told_at: null,
    runway_told_at: null,
    runway_now_hours: 12.5,
  };

  function routes(alert: Parameters<typeof stubFetch>[0][string], stored: () => object = () => none) {
    return stubFetch({
      'GET /api/v1/me': json(200, makeMe()),
      'GET /api/v1/wallets/me': json(200, wallet),
      'GET /api/v1/usage': noUseYet,
      [`GET ${base}/consumption`]: json(200, makeConsumption(wallet.id, {})),
      [`GET ${base}/entries`]: json(200, { items: [], next_cursor: null }),
      [`GET ${base}/alert`]: () => json(200, stored()),
      [`PUT ${base}/alert`]: alert,
    });
  }

  it('is set from the wallet page, with its runway at the rate billed now, and removed', async () => {
    const saved = { ...none, below: '50', runway_hours: 24, set_at: '2026-11-28T09:00:00Z' };
    let stored: object = none;
    const api = routes((request) => {
      const body = request.body as { below: string | null };
      stored = body.below === null ? none : saved;
      return json(200, stored);
    }, () => stored);
    renderApp('/wallet');
    const user = userEvent.setup();
    const card = await screen.findByRole('group', { name: 'Low-credit alert' });
    expect(await within(card).findByText('At the rate billed now the balance lasts about 12 hours.')).toBeInTheDocument();
    await user.type(within(card).getByRole('textbox', { name: /falls below/ }), '50.0');
    await user.type(within(card).getByRole('textbox', { name: /fewer hours/ }), '24');
    await user.click(within(card).getByRole('button', { name: 'Save alert' }));
    await vi.waitFor(() => expect(api.callsTo('PUT', `${base}/alert`)).toHaveLength(1));
    expect(api.callsTo('PUT', `${base}/alert`)[0].body).toEqual({ below: '50', runway_hours: 24 });
    expect(await screen.findByText('Alert saved.')).toBeInTheDocument();
    await user.click(await within(card).findByRole('button', { name: 'Remove alert' }));
    await vi.waitFor(() => expect(api.callsTo('PUT', `${base}/alert`)).toHaveLength(2));
    expect(api.callsTo('PUT', `${base}/alert`)[1].body).toEqual({ below: null, runway_hours: null });
    expect(await screen.findByText('Alert removed.')).toBeInTheDocument();
  });

  it('refuses what the server would, and shows the server refusing the rest on its field', async () => {
    const api = routes(apiError(400, 'invalid_amount', 'That threshold is beyond any wallet’s balance.'));
    renderApp('/wallet');
    const user = userEvent.setup();
    const card = await screen.findByRole('group', { name: 'Low-credit alert' });
    const below = within(card).getByRole('textbox', { name: /falls below/ });
    await user.type(below, '-3');
    await user.click(within(card).getByRole('button', { name: 'Save alert' }));
    expect(api.callsTo('PUT', `${base}/alert`)).toHaveLength(0);
    await user.clear(below);
    await user.type(below, '12');
    await user.click(within(card).getByRole('button', { name: 'Save alert' }));
    expect(await within(card).findByText('That threshold is beyond any wallet’s balance.')).toBeInTheDocument();
  });
});
