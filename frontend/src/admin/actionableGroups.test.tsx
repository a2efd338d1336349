import { renderHook, waitFor } from '@testing-library/react';
import type { ReactNode } from 'react';
import { describe, expect, it } from 'vitest';
import { AppProviders } from '../App';
import { createQueryClient } from '../api/queryClient';
import type { MeOut, RoleGrantOut } from '../api/types';
import type { Action } from '../auth/capabilities';
import { SessionProvider } from '../auth/session';
import { json, stubFetch } from '../test/fetchStub';
import { emptyPage, makeMe } from '../test/fixtures';
import { labelWithOrg, useActionableGroups } from './actionableGroups';

const RESEARCH = '00000000-0000-4000-8000-0000000000b1';
const LAB = '00000000-0000-4000-8000-0000000000b2';
const VISION = '00000000-0000-4000-8000-0000000000a1';
const AUDIO = '00000000-0000-4000-8000-0000000000a2';
const SPEECH = '00000000-0000-4000-8000-0000000000a3';
const ROBOTICS = '00000000-0000-4000-8000-0000000000a4';

const orgAdminOfResearch: RoleGrantOut = {
  role: 'org_admin',
  org_id: RESEARCH,
  group_id: null,
  org_name: 'Research',
  group_name: null,
};
const groupAdminOfSpeech: RoleGrantOut = {
  role: 'group_admin',
  org_id: LAB,
  group_id: SPEECH,
  org_name: 'Lab',
  group_name: 'Speech',
};

const group = (id: string, orgId: string, name: string) => ({ id, org_id: orgId, name, created_at: '2025-01-01T00:00:00Z' });

/** Research (Vision, Audio) is administered whole; in Lab only Speech is, Robotics is only seen. */
function stubBothOrgs() {
  return stubFetch({
    'GET /api/v1/orgs': json(200, {
      items: [
        { id: RESEARCH, name: 'Research', created_at: '2025-01-01T00:00:00Z' },
        { id: LAB, name: 'Lab', created_at: '2025-01-01T00:00:00Z' },
      ],
      next_cursor: null,
    }),
    [`GET /api/v1/orgs/${RESEARCH}/groups`]: json(200, {
      items: [group(VISION, RESEARCH, 'Vision'), group(AUDIO, RESEARCH, 'Audio')],
      next_cursor: null,
    }),
    [`GET /api/v1/orgs/${LAB}/groups`]: json(200, {
      items: [group(SPEECH, LAB, 'Speech'), group(ROBOTICS, LAB, 'Robotics')],
      next_cursor: null,
    }),
  });
}

function renderGroups(me: MeOut, action: Action | null, options?: { enabled?: boolean }) {
  const client = createQueryClient({ retry: false });
  const wrapper = ({ children }: { children: ReactNode }) => (
    <AppProviders client={client}>
      <SessionProvider me={me}>{children}</SessionProvider>
    </AppProviders>
  );
  return renderHook(() => useActionableGroups(action, options), { wrapper });
}

async function settled(me: MeOut, action: Action | null, options?: { enabled?: boolean }) {
  const { result } = renderGroups(me, action, options);
  await waitFor(() => expect(result.current.isPending).toBe(false));
  return result.current;
}

const admin = makeMe({}, [orgAdminOfResearch, groupAdminOfSpeech]);

describe('useActionableGroups', () => {
  it('with no action, returns every group the caller sees, by organization', async () => {
    stubBothOrgs();
    const groups = await settled(admin, null);

    expect(groups.options).toEqual([
      {
        group: 'Research',
        items: [
          { value: VISION, label: 'Vision' },
          { value: AUDIO, label: 'Audio' },
        ],
      },
      {
        group: 'Lab',
        items: [
          { value: SPEECH, label: 'Speech' },
          { value: ROBOTICS, label: 'Robotics' },
        ],
      },
    ]);
    expect(groups.groups.map(labelWithOrg)).toEqual([
      'Research / Vision',
      'Research / Audio',
      'Lab / Speech',
      'Lab / Robotics',
    ]);
    expect(groups.groups.map((g) => g.orgId)).toEqual([RESEARCH, RESEARCH, LAB, LAB]);
  });

  it.each<Action>(['volume.manage_group', 'user.create'])(
    'for %s, returns the groups of the administered organization and the administered group',
    async (action) => {
      stubBothOrgs();
      const groups = await settled(admin, action);

      expect(groups.options).toEqual([
        {
          group: 'Research',
          items: [
            { value: VISION, label: 'Vision' },
            { value: AUDIO, label: 'Audio' },
          ],
        },
        { group: 'Lab', items: [{ value: SPEECH, label: 'Speech' }] },
      ]);
      expect([...groups.names]).toEqual([
        [VISION, 'Vision'],
        [AUDIO, 'Audio'],
        [SPEECH, 'Speech'],
      ]);
    },
  );

  it('for an org admin action, leaves out a group held only as group admin', async () => {
    stubBothOrgs();
    const groups = await settled(admin, 'policy.set_group');

    expect(groups.options).toEqual([
      {
        group: 'Research',
        items: [
          { value: VISION, label: 'Vision' },
          { value: AUDIO, label: 'Audio' },
        ],
      },
    ]);
  });

  it("takes a group admin's groups from their grants when no organization is listed", async () => {
    stubFetch({ 'GET /api/v1/orgs': json(200, emptyPage) });
    const groupAdmin = makeMe({}, [groupAdminOfSpeech]);

    expect((await settled(groupAdmin, null)).options).toEqual([
      { group: 'Lab', items: [{ value: SPEECH, label: 'Speech' }] },
    ]);
    expect((await settled(groupAdmin, 'volume.manage_group')).options).toEqual([
      { group: 'Lab', items: [{ value: SPEECH, label: 'Speech' }] },
    ]);
    expect((await settled(groupAdmin, 'policy.set_group')).options).toEqual([]);
  });

  it('fetches no group list until enabled, offering the granted groups meanwhile', async () => {
    const api = stubBothOrgs();
    const groups = await settled(admin, 'user.create', { enabled: false });

    expect(groups.options).toEqual([{ group: 'Lab', items: [{ value: SPEECH, label: 'Speech' }] }]);
    expect(api.callsTo('GET', `/api/v1/orgs/${RESEARCH}/groups`)).toHaveLength(0);
    expect(api.callsTo('GET', `/api/v1/orgs/${LAB}/groups`)).toHaveLength(0);
  });
});
