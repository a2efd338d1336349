import { Badge, Group, MultiSelect, Select, Table, Tooltip } from '@mantine/core';
import { useState } from 'react';
import { useSessions, type SessionOut } from '../../api/hooks/sessions';
import { Amount } from '../../ui/Amount';
import { formatDateTime } from '../../ui/format';
import { QueryState } from '../../ui/QueryState';
import { gpuSlice, SESSION_TYPE_LABELS, STATE_LABELS, STATE_OPTIONS } from '../../sessions/sessionParts';
import { useActionableGroups } from '../actionableGroups';
import { ADMINISTERS_GROUP } from './access';
import { LongName } from '../../ui/LongName';

function SessionRow({ session, groupName }: { session: SessionOut; groupName: string }) {
  const state = STATE_LABELS[session.state];
  return (
    <Table.Tr>
      <Table.Td maw={320}>
        <LongName name={session.name} size="sm" fw={500} />
        <LongName name={`${SESSION_TYPE_LABELS[session.session_type]} · ${session.image}`} size="xs" c="dimmed" />
      </Table.Td>
      <Table.Td>{session.owner_email}</Table.Td>
      <Table.Td>{groupName}</Table.Td>
      <Table.Td>
        <Tooltip label={session.state_reason} disabled={!session.state_reason} multiline w={320} withArrow>
          <Badge variant="light" color={state.color} style={{ overflow: 'visible' }}>
            {state.label}
          </Badge>
        </Tooltip>
      </Table.Td>
      <Table.Td>{gpuSlice(session)}</Table.Td>
      <Table.Td ta="right" style={{ fontVariantNumeric: 'tabular-nums' }}>
        <Amount value={session.price_per_hour} />
      </Table.Td>
      <Table.Td ta="right" style={{ fontVariantNumeric: 'tabular-nums' }}>
        <Amount value={session.cost} />
      </Table.Td>
      <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatDateTime(session.created_at)}</Table.Td>
    </Table.Tr>
  );
}

/** Every session in the groups the admin administers (all of them for the super admin). */
export function AdminSessionsTable() {
  const [states, setStates] = useState<SessionOut['state'][]>([]);
  const [groupId, setGroupId] = useState<string | null>(null);
  const groups = useActionableGroups(ADMINISTERS_GROUP);
  const sessions = useSessions({ scope: 'admin', state: states, group_id: groupId ?? undefined });
  const items = sessions.data?.items ?? [];
  const filtered = states.length > 0 || groupId !== null;
  return (
    <>
      <Group align="flex-end" mb="md">
        <MultiSelect
          label="State"
          placeholder={states.length ? undefined : 'Any state'}
          data={STATE_OPTIONS}
          value={states}
          onChange={(values) => setStates(values as SessionOut['state'][])}
          clearable
          w={320}
        />
        <Select
          label="Group"
          placeholder="Any group"
          data={groups.options}
          value={groupId}
          onChange={setGroupId}
          clearable
          searchable
          w={260}
        />
      </Group>
      <QueryState
        query={sessions}
        isEmpty={items.length === 0}
        empty={filtered ? 'No sessions match these filters.' : 'No sessions in your groups.'}
      >
        <Table.ScrollContainer minWidth={1000}>
          <Table striped aria-label="Sessions">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Session</Table.Th>
                <Table.Th>User</Table.Th>
                <Table.Th>Group</Table.Th>
                <Table.Th>State</Table.Th>
                <Table.Th>GPU</Table.Th>
                <Table.Th ta="right">Price per hour</Table.Th>
                <Table.Th ta="right">Cost</Table.Th>
                <Table.Th>Created</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {items.map((session) => (
                <SessionRow
                  key={session.id}
                  session={session}
                  groupName={(session.group_id && groups.names.get(session.group_id)) || '—'}
                />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      </QueryState>
    </>
  );
}
