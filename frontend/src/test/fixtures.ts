import type { MeOut, RoleGrantOut } from '../api/types';

export function makeMe(overrides: Partial<MeOut> = {}, roles: RoleGrantOut[] = []): MeOut {
  return {
    user: {
      id: '00000000-0000-4000-8000-000000000001',
      email: 'ada@example.org',
      name: 'Ada Lovelace',
      active: true,
      must_change_password: false,
      is_super_admin: roles.some((r) => r.role === 'super_admin'),
      created_at: '2025-01-01T00:00:00Z',
    },
    roles,
    memberships: [],
    csrf_token: 'csrf-from-me',
    must_change_password: false,
    ...overrides,
  };
}

export const SUPER_ADMIN: RoleGrantOut = {
  role: 'super_admin',
  org_id: null,
  group_id: null,
  org_name: null,
  group_name: null,
};

export const emptyPage = { items: [], next_cursor: null };
