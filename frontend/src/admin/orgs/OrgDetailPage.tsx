import { Anchor, Button, Stack } from '@mantine/core';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { useOrgAdmins } from '../../api/hooks/admins';
import { useDeleteOrg, useOrg, useRenameOrg } from '../../api/hooks/orgs';
import { useSession } from '../../auth/session';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { QueryState } from '../../ui/QueryState';
import { NameModal } from '../../ui/NameModal';
import { AdminGrantsSection } from '../AdminGrantsSection';
import { GroupsSection } from '../groups/GroupsSection';
import { PageHeader } from '../../ui/PageHeader';
import { OrgIsolationSection } from './OrgIsolationSection';

function OrgAdmins({ orgId, orgName }: { orgId: string; orgName: string }) {
  const { can } = useSession();
  const grants = useOrgAdmins(orgId);
  return (
    <AdminGrantsSection
      heading="Organization admins"
      scopeName={orgName}
      grants={grants}
      canEdit={can('org.admins.manage', { orgId })}
    />
  );
}

export function OrgDetailPage() {
  const { orgId = '' } = useParams();
  const { can } = useSession();
  const org = useOrg(orgId);
  const renameOrg = useRenameOrg();
  const deleteOrg = useDeleteOrg();
  const navigate = useNavigate();
  const [renaming, setRenaming] = useState(false);

  return (
    <Stack maw={960} gap="xl">
      <QueryState query={org}>
        {org.data && (
          <Stack gap="xl">
            <div>
              <Anchor component={Link} to="/admin/orgs" size="sm">
                ← Organizations
              </Anchor>
              <PageHeader
                title={org.data.name}
                description="Organization"
                actions={
                  <>
                    {can('org.update', { orgId }) && (
                      <Button variant="default" onClick={() => setRenaming(true)}>
                        Rename
                      </Button>
                    )}
                    {can('org.delete', { orgId }) && (
                      <ConfirmButton
                        size="sm"
                        label="Delete"
                        title="Delete organization"
                        message={`Delete “${org.data.name}”? Only an organization without groups can be deleted.`}
                        confirmLabel="Delete organization"
                        onConfirm={async () => {
                          await deleteOrg.mutateAsync(orgId);
                          navigate('/admin/orgs', { replace: true });
                        }}
                      />
                    )}
                  </>
                }
              />
            </div>
            <GroupsSection orgId={orgId} />
            {can('org.admins.read', { orgId }) && <OrgAdmins orgId={orgId} orgName={org.data.name} />}
            {can('isolation.audit', { orgId }) && <OrgIsolationSection orgId={orgId} />}
            <NameModal
              opened={renaming}
              onClose={() => setRenaming(false)}
              title="Rename organization"
              submitLabel="Save"
              initialName={org.data.name}
              onSubmit={(name) => renameOrg.mutateAsync({ orgId, name })}
              done={(name) => `Renamed the organization to ${name}.`}
            />
          </Stack>
        )}
      </QueryState>
    </Stack>
  );
}
