import { Badge, Group, Select, Stack, Table, Text } from '@mantine/core';
import { useState } from 'react';
import { useEffectivePolicy } from '../../api/hooks/capacity';
import { QueryState } from '../../ui/QueryState';
import { labelWithOrg, useActionableGroups } from '../actionableGroups';
import { UserPicker } from '../users/UserPicker';
import { formatPolicyValue, POLICY_KEY_LABELS, SCOPE_LABELS } from './policyKeys';

/** The policy that applies to one user, key by key, and the scope each key comes from. */
export function EffectivePolicy() {
  const { groups } = useActionableGroups(null);
  const groupOptions = groups.map((g) => ({ value: g.id, label: labelWithOrg(g) }));
  const [userId, setUserId] = useState<string | null>(null);
  const [groupId, setGroupId] = useState<string | null>(null);
  const effective = useEffectivePolicy(userId, groupId);
  return (
    <Stack gap="md">
      <Group align="flex-end" gap="md">
        <div style={{ minWidth: 320 }}>
          <UserPicker label="User" value={userId} onChange={setUserId} />
        </div>
        <Select
          label="Group"
          description="Optional: the user's first group otherwise"
          data={groupOptions}
          value={groupId}
          onChange={setGroupId}
          clearable
          searchable
          miw={280}
        />
      </Group>
      {userId ? (
        <QueryState query={effective} isEmpty={effective.data?.values.length === 0} empty="No policy keys.">
          {effective.data && (
            <Table striped aria-label="Effective policy">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Key</Table.Th>
                  <Table.Th>Value</Table.Th>
                  <Table.Th>From</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {effective.data.values.map((entry) => (
                  <Table.Tr key={entry.key}>
                    <Table.Td>{POLICY_KEY_LABELS[entry.key] ?? entry.key}</Table.Td>
                    <Table.Td>{formatPolicyValue(entry.key, entry.value)}</Table.Td>
                    <Table.Td>
                      {entry.scope ? (
                        <Badge variant="light">{SCOPE_LABELS[entry.scope]}</Badge>
                      ) : (
                        <Text size="sm" c="dimmed">
                          unset
                        </Text>
                      )}
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          )}
        </QueryState>
      ) : (
        <Text size="sm" c="dimmed">
          Choose a user to see the policy that applies to them.
        </Text>
      )}
    </Stack>
  );
}
