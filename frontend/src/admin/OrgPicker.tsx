import { Select } from '@mantine/core';
import { useEffect, type ReactNode } from 'react';
import { useSearchParams } from 'react-router';
import { useOrgs } from '../api/hooks/orgs';
import type { OrgOut } from '../api/types';
import { QueryState } from '../ui/QueryState';

/**
 * Choose one of the caller's organizations (kept in the `org` search parameter, the first one by
 * default so the page is never blank) and render what belongs to it.
 */
export function OrgPicker({ empty, children }: { empty: string; children: (org: OrgOut) => ReactNode }) {
  const orgs = useOrgs('', 200);
  const [params, setParams] = useSearchParams();
  const orgId = params.get('org');
  const firstOrg = orgs.items[0]?.id;
  const selected = orgs.items.find((org) => org.id === orgId);

  useEffect(() => {
    if (!orgId && firstOrg) setParams({ org: firstOrg }, { replace: true });
  }, [orgId, firstOrg, setParams]);

  return (
    <QueryState query={orgs} isEmpty={orgs.items.length === 0} empty={empty}>
      <Select
        label="Organization"
        data={orgs.items.map((org) => ({ value: org.id, label: org.name }))}
        value={orgId}
        onChange={(value) => value && setParams({ org: value })}
        allowDeselect={false}
        searchable
        maw={360}
      />
      {selected && children(selected)}
    </QueryState>
  );
}
