import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RoleGrantOut } from '../api/types';
import { apiError, json, stubFetch } from '../test/fetchStub';
import { makeMe, SUPER_ADMIN } from '../test/fixtures';
import { renderApp } from '../test/render';
import { makeFigures, makeIdleSession, makePoint, makeReport, makeRow } from './testData';

const GROUP_ADMIN: RoleGrantOut = {
  role: 'group_admin',
  org_id: '00000000-0000-4000-8000-0000000000b1',
  group_id: '00000000-0000-4000-8000-0000000000a1',
  org_name: 'Research',
  group_name: 'Optics',
};

const report = makeReport({
  totals: makeFigures({ gpu_hours: 41.25, idle_gpu_hours: 6.5, idle_share: 6.5 / 41.25, credits: '12.5', vram_peak_mib: 20480 }),
  rows: [
    makeRow('g2', 'Quiet', [makePoint('2026-11-03', 1.25, 0.5)], { credits: '0.5', vram_peak_mib: null }),
    makeRow('g1', 'Optics', [makePoint('2026-11-02', 30, 4), makePoint('2026-11-03', 10, 2)], {
      credits: '12',
      vram_peak_mib: 20480,
    }),
  ],
});

const idle = {
  items: [
    makeIdleSession(),
    makeIdleSession({ session_id: '00000000-0000-4000-8000-00000000e002', session_name: null, idle_gpu_hours: 0 }),
  ],
};

function stubUsage(roles: RoleGrantOut[] = [], usage: Response = json(200, report)) {
  return stubFetch({
    'GET /api/v1/me': json(200, makeMe({}, roles)),
    'GET /api/v1/usage': usage,
    'GET /api/v1/usage/idle-sessions': json(200, idle),
  });
}

/** The grouping choices offered, as the dropdown lists them. */
async function groupings(user: ReturnType<typeof userEvent.setup>) {
  await user.click(await screen.findByLabelText('Grouping'));
  // jsdom never finishes the dropdown's opening transition, so it stays display: none.
  await screen.findByRole('option', { name: 'By group', hidden: true });
  return screen.getAllByRole('option', { hidden: true }).map((option) => option.textContent);
}

beforeEach(() => {
  // Nov 20 late in UTC, already Nov 21 further east: the periods are UTC days.
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(new Date('2026-11-20T23:30:00Z'));
});
afterEach(() => vi.useRealTimers());

describe('usage page', () => {
  it("shows a report's figures, charts and rows, and the sessions that idled most", async () => {
    const api = stubUsage();
    renderApp('/usage');

    expect(await screen.findByRole('heading', { name: 'Usage' })).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'Usage' })).toHaveAttribute('aria-current', 'page');
    expect(screen.getByText('Your GPU-hours, idle time and credits.')).toBeInTheDocument();

    expect(await screen.findByRole('group', { name: 'GPU-hours' })).toHaveTextContent('41.25');
    const idleFigure = screen.getByRole('group', { name: 'Idle GPU-hours' });
    expect(idleFigure).toHaveTextContent('6.5');
    expect(idleFigure).toHaveTextContent('16% of the GPU-hours');
    expect(screen.getByRole('group', { name: 'Credits charged' })).toHaveTextContent('12.50');

    expect(await screen.findByRole('img', { name: /^GPU-hours per day, stacked by group;/ })).toBeInTheDocument();
    expect(await screen.findByRole('img', { name: /^Share of GPU-hours held idle per day; 16% over the whole period/ })).toBeInTheDocument();

    // Most GPU-hours first.
    const table = screen.getByRole('table', { name: 'Use by group' });
    const rows = within(table).getAllByRole('row').slice(1);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toHaveTextContent(/^Optics40615%12\.0020 GiB$/);
    expect(rows[1]).toHaveTextContent(/^Quiet1\.250\.540%0\.50—$/);

    // Only sessions that idled at all.
    const sessions = await screen.findByRole('table', { name: 'Sessions that idled most' });
    const idled = within(sessions).getAllByRole('row').slice(1);
    expect(idled).toHaveLength(1);
    expect(idled[0]).toHaveTextContent('notebook');
    expect(idled[0]).toHaveTextContent('ada@example.org');
    expect(idled[0]).toHaveTextContent('3.1 GiB of 20 GiB');

    const asked = api.callsTo('GET', '/api/v1/usage')[0].query;
    expect(Object.fromEntries(asked)).toEqual({ since: '2026-11-01', until: '2026-11-20', by: 'group', every: 'day' });
    expect(Object.fromEntries(api.callsTo('GET', '/api/v1/usage/idle-sessions')[0].query)).toEqual({
      since: '2026-11-01',
      until: '2026-11-20',
    });
  });

  it('offers a plain user the groupings of their own use, and admins those by person and tenant', async () => {
    const user = userEvent.setup();
    stubUsage();
    const plain = renderApp('/usage');
    expect(await groupings(user)).toEqual(['By group', 'By model', 'By tier', 'By cluster']);
    plain.unmount();

    stubUsage([GROUP_ADMIN]);
    const admin = renderApp('/usage');
    expect(
      await screen.findByText(
        'GPU-hours, idle time and credits: your own, and those of the organizations and groups you administer.',
      ),
    ).toBeInTheDocument();
    expect(await groupings(user)).toEqual(['By group', 'By user', 'By organization', 'By model', 'By tier', 'By cluster']);
    admin.unmount();

    // A link asking a plain user's page for people is read as the default grouping.
    const api = stubUsage();
    renderApp('/usage?by=user');
    expect(await screen.findByRole('table', { name: 'Use by group' })).toBeInTheDocument();
    expect(api.callsTo('GET', '/api/v1/usage')[0].query.get('by')).toBe('group');
  });

  it('asks for the chosen period and grouping, and the CSV link carries them with a series per day', async () => {
    const user = userEvent.setup();
    const api = stubUsage([SUPER_ADMIN], json(200, makeReport({ by: 'user', rows: [] })));
    renderApp('/usage');
    expect(await screen.findByText("Everyone's GPU-hours, idle time and credits.")).toBeInTheDocument();

    const link = screen.getByRole('link', { name: 'Download CSV' });
    expect(link).toHaveAttribute('download');
    expect(link).toHaveAttribute('href', '/api/v1/usage.csv?since=2026-11-01&until=2026-11-20&by=group&every=day');

    await user.click(screen.getByRole('radio', { name: 'Last 3 months' }));
    await user.click(screen.getByLabelText('Grouping'));
    await user.click(await screen.findByRole('option', { name: 'By user', hidden: true }));

    expect(screen.getByRole('link', { name: 'Download CSV' })).toHaveAttribute(
      'href',
      '/api/v1/usage.csv?since=2026-09-01&until=2026-11-20&by=user&every=day',
    );
    expect(await screen.findByText('No GPU use in this period.')).toBeInTheDocument();
    const last = api.callsTo('GET', '/api/v1/usage').at(-1)!.query;
    expect(Object.fromEntries(last)).toEqual({ since: '2026-09-01', until: '2026-11-20', by: 'user', every: 'week' });
    expect(api.callsTo('GET', '/api/v1/usage/idle-sessions').at(-1)!.query.get('since')).toBe('2026-09-01');
  });

  it("shows the server's reason when a report would be too large", async () => {
    const message =
      'The report would have more than 20,000 rows: narrow it, group it by a longer period, or export it as CSV.';
    stubUsage([SUPER_ADMIN], apiError(422, 'report_too_large', message));
    renderApp('/usage');
    expect(await screen.findByRole('alert')).toHaveTextContent(message);
    // The controls and the download stay, to narrow the report or take it as CSV.
    expect(screen.getByRole('link', { name: 'Download CSV' })).toBeInTheDocument();
    expect(screen.getByRole('radio', { name: 'This month' })).toBeChecked();
  });
});
