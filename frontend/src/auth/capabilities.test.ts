import { describe, expect, it } from 'vitest';
import { makeMe } from '../test/fixtures';
import { capabilitiesOf } from './capabilities';

const ORG = 'org-1';
const GROUP = 'group-1';

describe('capabilities', () => {
  const me = makeMe({
    capabilities: {
      actions: ['admin_mode', 'audit.read'],
      orgs: [{ org_id: ORG, actions: ['org.update', 'group.update'] }],
      groups: [{ group_id: GROUP, org_id: 'org-2', actions: ['group.members.manage'] }],
    },
  });
  const caps = capabilitiesOf(me);

  it('answers what the server allows anywhere without a place', () => {
    expect(caps.can('audit.read')).toBe(true);
    expect(caps.can('org.create')).toBe(false);
    expect(caps.adminMode).toBe(true);
  });

  it('reads an organization entry as covering the organization and every group in it', () => {
    expect(caps.can('org.update', { orgId: ORG })).toBe(true);
    expect(caps.can('group.update', { orgId: ORG, groupId: 'any-group-of-org-1' })).toBe(true);
    expect(caps.can('org.update', { orgId: 'org-2' })).toBe(false);
    expect(caps.can('org.update')).toBe(false);
  });

  it('reads a group entry for that group alone', () => {
    expect(caps.can('group.members.manage', { orgId: 'org-2', groupId: GROUP })).toBe(true);
    expect(caps.can('group.members.manage', { orgId: 'org-2', groupId: 'group-2' })).toBe(false);
  });

  it('tells whether an action is allowed somewhere', () => {
    expect(caps.canSomewhere('group.members.manage')).toBe(true);
    expect(caps.canSomewhere('clusters.manage')).toBe(false);
  });

  it('offers nothing to a caller with no capabilities', () => {
    const none = capabilitiesOf(makeMe());
    expect(none.adminMode).toBe(false);
    expect(none.canSomewhere('user.create')).toBe(false);
  });
});
