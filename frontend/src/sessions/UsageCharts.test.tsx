import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import type { SessionUsageOut } from '../api/hooks/sessions';
import { apiError, json, pending, stubFetch } from '../test/fetchStub';
import { renderUi } from '../test/renderUi';
import { makeSession } from './testData';
import { UsageCharts } from './UsageCharts';

const PATH = 'GET /api/v1/sessions/s1/usage';

function makeUsage(overrides: Partial<SessionUsageOut> = {}): SessionUsageOut {
  return {
    session_id: 's1',
    since: '2026-11-30T09:58:00Z',
    until: '2026-11-30T12:00:00Z',
    vram_limit_mib: 20480,
    current: { at: '2026-11-30T11:59:00Z', gpu_util_percent: 45, vram_used_mib: 2048, samples: 1 },
    points: [
      { at: '2026-11-30T11:00:00Z', gpu_util_percent: 80, vram_used_mib: 3174, samples: 12 },
      { at: '2026-11-30T11:59:00Z', gpu_util_percent: 45, vram_used_mib: 2048, samples: 1 },
    ],
    cost: [
      { at: '2026-11-30T09:58:00Z', cost: '0' },
      { at: '2026-11-30T12:00:00Z', cost: '12.75' },
    ],
    cost_total: '12.75',
    ...overrides,
  };
}

function section() {
  return screen.getByRole('region', { name: 'Use over time' });
}

describe('UsageCharts', () => {
  it('draws utilization, VRAM against the tier limit and the cost so far', async () => {
    stubFetch({ [PATH]: json(200, makeUsage()) });
    renderUi(<UsageCharts session={makeSession()} />);
    expect(await screen.findByText(/Now: 45 % GPU, 2 GiB of 20 GiB VRAM/)).toBeInTheDocument();
    const charts = within(section());
    expect(charts.getByRole('img', { name: /GPU utilization over the session's life/ })).toBeInTheDocument();
    expect(charts.getByRole('img', { name: /against the tier's 20 GiB/ })).toBeInTheDocument();
    expect(charts.getByRole('img', { name: /12\.75 credits so far/ })).toBeInTheDocument();
    expect(charts.getByText('12.75 credits so far')).toBeInTheDocument();
  });

  it('shows no current value once the session has stopped', async () => {
    stubFetch({ [PATH]: json(200, makeUsage({ current: null })) });
    renderUi(<UsageCharts session={makeSession({ state: 'stopped', actions: [] })} />);
    expect(await screen.findByRole('img', { name: /GPU utilization/ })).toBeInTheDocument();
    expect(screen.queryByText(/^Now:/)).not.toBeInTheDocument();
  });

  it('says so while loading, when nothing was used, and when the answer fails', async () => {
    stubFetch({ [PATH]: pending() });
    const { unmount } = renderUi(<UsageCharts session={makeSession()} />);
    expect(within(section()).getByRole('status')).toHaveTextContent('Loading');
    unmount();

    stubFetch({ [PATH]: json(200, makeUsage({ current: null, points: [], cost: [], cost_total: '0' })) });
    const empty = renderUi(<UsageCharts session={makeSession()} />);
    expect(await screen.findByText(/Nothing used yet/)).toBeInTheDocument();
    empty.unmount();

    const api = stubFetch({ [PATH]: apiError(500, 'internal', 'Something broke.') });
    renderUi(<UsageCharts session={makeSession()} />);
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('Something broke.');
    await userEvent.click(within(alert).getByRole('button', { name: 'Retry' }));
    expect(api.callsTo('GET', '/api/v1/sessions/s1/usage')).toHaveLength(2);
  });
});
