import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import type { GroupShareOut } from '../api/types';
import { json, stubFetch } from '../test/fetchStub';
import { makeMe } from '../test/fixtures';
import { renderApp } from '../test/render';
import { GROUP_ID, makeMembership } from '../sessions/testData';

const OTHER_GROUP = '00000000-0000-4000-8000-0000000000c9';

function share(overrides: Partial<GroupShareOut> = {}): GroupShareOut {
  return {
    group: { group_id: GROUP_ID, name: 'Optics', usage: 0.8, in_use: 1.25, share: 2, weight: 1 },
    org_id: '00000000-0000-4000-8000-0000000000a1',
    org_name: 'Research',
    cards: 4,
    org: { org_id: '00000000-0000-4000-8000-0000000000a1', name: 'Research', usage: 0.8, in_use: 1.25, share: 3, weight: 3 },
    active_orgs: 2,
    active_groups: 2,
    half_life_seconds: 4 * 3600,
    history: [
      { at: '2026-11-30T04:00:00Z', in_use: 0, usage: 0 },
      { at: '2026-11-30T12:00:00Z', in_use: 1.25, usage: 0.8 },
    ],
    groups: [
      { group_id: GROUP_ID, name: 'Optics', usage: 0.8, in_use: 1.25, share: 2, weight: 1 },
      { group_id: OTHER_GROUP, name: 'Quiet', usage: 0, in_use: 0, share: null, weight: 0.5 },
    ],
    members: null,
    in_words: 'Optics runs 1.25 cards now; its share is 2.00 of 4 cards.',
    ...overrides,
  };
}

describe('my group', () => {
  it("shows the group's use against its share and the organization's groups, without people", async () => {
    const api = stubFetch({
      'GET /api/v1/me': json(200, makeMe({ memberships: [makeMembership()] })),
      [`GET /api/v1/groups/${GROUP_ID}/fair-share`]: json(200, share()),
    });
    renderApp('/group');
    expect(await screen.findByText('Optics runs 1.25 cards now; its share is 2.00 of 4 cards.')).toBeInTheDocument();
    expect(await screen.findByRole('img', { name: /Optics's cards in use and recent use over the last 8 hours, against its share of 2.00 cards/ })).toBeInTheDocument();
    const groups = screen.getByRole('table', { name: 'Groups of Research' });
    expect(within(groups).getByText('not running or waiting')).toBeInTheDocument();
    expect(within(groups).getByText('yours')).toBeInTheDocument();
    expect(within(groups).getByText('0.5')).toBeInTheDocument();
    expect(screen.getByText(/the organization's share of 3.00 cards is split by weight among its 2 groups running or waiting/)).toBeInTheDocument();
    // Both levels: the organization among organizations, the group within it.
    expect(screen.getByText(/The 4 cards are split among the 2 organizations running or waiting by their weights/)).toBeInTheDocument();
    const levels = screen.getByRole('table', { name: 'Fair share' });
    const [, orgRow, groupRow] = within(levels).getAllByRole('row');
    expect(within(orgRow).getByText('Research')).toBeInTheDocument();
    expect(within(orgRow).getByText('3.00')).toBeInTheDocument();
    expect(within(orgRow).getByText('3')).toBeInTheDocument();
    expect(within(groupRow).getByText(/of Research's share/)).toBeInTheDocument();
    expect(within(groupRow).getByText('2.00')).toBeInTheDocument();
    expect(screen.queryByRole('table', { name: "Members' use" })).not.toBeInTheDocument();
    expect(api.callsTo('GET', `/api/v1/groups/${GROUP_ID}/fair-share`)).toHaveLength(1);
  });

  it("shows the members' use to the group's admins, and switches between the caller's groups", async () => {
    const members = [{ user_id: '00000000-0000-4000-8000-000000000001', email: 'ada@example.org', usage: 0.5, in_use: 1 }];
    const api = stubFetch({
      'GET /api/v1/me': json(
        200,
        makeMe({ memberships: [makeMembership(), makeMembership({ group_id: OTHER_GROUP, group_name: 'Quiet' })] }),
      ),
      [`GET /api/v1/groups/${GROUP_ID}/fair-share`]: json(200, share({ members })),
      [`GET /api/v1/groups/${OTHER_GROUP}/fair-share`]: json(
        200,
        share({
          group: { group_id: OTHER_GROUP, name: 'Quiet', usage: 0, in_use: 0, share: null, weight: 0.5 },
          in_words: 'Quiet runs 0.00 cards now.',
        }),
      ),
    });
    renderApp('/group');
    const table = await screen.findByRole('table', { name: "Members' use" });
    expect(within(table).getByText('ada@example.org')).toBeInTheDocument();
    expect(within(table).getByText('0.50')).toBeInTheDocument();

    await userEvent.setup().click(screen.getByRole('radio', { name: 'Quiet' }));
    expect(await screen.findByText('Quiet runs 0.00 cards now.')).toBeInTheDocument();
    expect(api.callsTo('GET', `/api/v1/groups/${OTHER_GROUP}/fair-share`)).toHaveLength(1);
  });

  it('says so when the caller is in no group', async () => {
    stubFetch({ 'GET /api/v1/me': json(200, makeMe()) });
    renderApp('/group');
    expect(await screen.findByText('You are in no group yet.')).toBeInTheDocument();
  });
});
