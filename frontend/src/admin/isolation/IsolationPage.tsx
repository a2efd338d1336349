import { Badge, Button, Code, Group, Select, Stack, Switch, Table, Text, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { useState } from 'react';
import { useClusters } from '../../api/hooks/clusters';
import { useGroups } from '../../api/hooks/groups';
import { useDedicate, useIsolationNodes, useSetClusterIsolation, useUndedicate } from '../../api/hooks/isolation';
import { useOrgs } from '../../api/hooks/orgs';
import type { ClusterOut, NodeOut } from '../../api/types';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { FormModal } from '../../ui/FormModal';
import { PageHeader } from '../../ui/PageHeader';
import { QueryState } from '../../ui/QueryState';
import {
  clusterIsolationRequest,
  dedicationRequest,
  readiness,
  validateClusterIsolation,
  validateDedicate,
  type ClusterIsolationValues,
  type DedicateValues,
} from './isolationForms';

const NO_TENANT: DedicateValues = { orgId: null, groupId: null };

function DedicateModal({ node, clusterName, onClose }: { node: NodeOut | null; clusterName: string; onClose: () => void }) {
  const dedicate = useDedicate();
  const orgs = useOrgs('', 200);
  const form = useForm<DedicateValues>({ initialValues: NO_TENANT, validate: validateDedicate });
  const groups = useGroups(form.values.orgId);
  return (
    <FormModal
      opened={node !== null}
      onClose={onClose}
      title={`Dedicate ${node?.node ?? ''}`}
      submitLabel="Dedicate"
      form={form}
      initialValues={NO_TENANT}
      serverFields={{ organization_id: 'orgId', group_id: 'groupId' }}
      onSubmit={(values) => dedicate.mutateAsync(dedicationRequest(values, node?.cluster_id ?? '', node?.node ?? ''))}
      done={() => `Dedicated ${node?.node ?? ''} of ${clusterName}: label and taint it as the node list says.`}
    >
      <Text size="sm">
        Its cards will take only this tenant's sessions, and count for no one else. A node where any session holds a card
        cannot be dedicated (nor given back) until it is drained.
      </Text>
      <Select
        label="Organization"
        data={orgs.items.map((org) => ({ value: org.id, label: org.name }))}
        searchable
        {...form.getInputProps('orgId')}
        onChange={(value) => form.setValues({ orgId: value, groupId: null })}
      />
      <Select
        label="Group"
        description="Leave empty to dedicate it to the whole organization."
        data={groups.items.map((group) => ({ value: group.id, label: group.name }))}
        disabled={!form.values.orgId}
        clearable
        searchable
        {...form.getInputProps('groupId')}
      />
    </FormModal>
  );
}

function NodesTable({ nodes, clusterNames }: { nodes: NodeOut[]; clusterNames: Map<string, string> }) {
  const undedicate = useUndedicate();
  const [dedicating, setDedicating] = useState<NodeOut | null>(null);
  return (
    <>
      <Table.ScrollContainer minWidth={900}>
        <Table striped aria-label="Nodes">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Cluster</Table.Th>
              <Table.Th>Node</Table.Th>
              <Table.Th>Cards</Table.Th>
              <Table.Th>User namespaces</Table.Th>
              <Table.Th>Runtime classes</Table.Th>
              <Table.Th>Dedicated to</Table.Th>
              <Table.Th>Label and taint</Table.Th>
              <Table.Th aria-label="Actions" />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {nodes.map((node) => (
              <Table.Tr key={`${node.cluster_id}/${node.node}`}>
                <Table.Td>{clusterNames.get(node.cluster_id) ?? node.cluster_id}</Table.Td>
                <Table.Td>
                  <Text size="sm" ff="monospace">
                    {node.node}
                  </Text>
                </Table.Td>
                <Table.Td style={{ fontVariantNumeric: 'tabular-nums' }}>
                  {node.usable_cards} of {node.cards}
                </Table.Td>
                <Table.Td>{node.user_namespaces ? 'Yes' : 'No'}</Table.Td>
                <Table.Td>{node.runtime_classes.length ? node.runtime_classes.join(', ') : '—'}</Table.Td>
                <Table.Td>
                  {node.dedication ? (
                    <>
                      {node.dedication.tenant_name}
                      {node.dedication.node === null && (
                        <Text size="xs" c="dimmed">
                          the whole cluster
                        </Text>
                      )}
                    </>
                  ) : (
                    'Everyone'
                  )}
                </Table.Td>
                <Table.Td maw={320}>
                  <Badge color={node.ready ? 'green' : 'orange'} variant="light">
                    {node.ready ? 'Ready' : 'Not ready'}
                  </Badge>
                  <Text size="xs" c="dimmed" mt={4}>
                    {readiness(node)}
                  </Text>
                </Table.Td>
                <Table.Td>
                  <Group justify="flex-end" wrap="nowrap">
                    {node.dedication ? (
                      <ConfirmButton
                        size="xs"
                        variant="default"
                        label="Give back"
                        title="Give the node back"
                        message={`Let every tenant's sessions use ${node.node} again? ${node.dedication.tenant_name}'s running sessions stay; remove the label and taint from the node too.`}
                        confirmLabel="Give back"
                        onConfirm={() => undedicate.mutateAsync(node.dedication?.id ?? '')}
                      />
                    ) : (
                      <Button size="xs" variant="default" onClick={() => setDedicating(node)}>
                        Dedicate
                      </Button>
                    )}
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      <DedicateModal
        node={dedicating}
        clusterName={dedicating ? (clusterNames.get(dedicating.cluster_id) ?? '') : ''}
        onClose={() => setDedicating(null)}
      />
    </>
  );
}

function ClusterSettings({ cluster }: { cluster: ClusterOut }) {
  const save = useSetClusterIsolation();
  const [editing, setEditing] = useState(false);
  const initial: ClusterIsolationValues = {
    sandboxClass: cluster.sandbox_runtime_class ?? '',
    userNamespaces: cluster.user_namespaces,
  };
  const form = useForm<ClusterIsolationValues>({ initialValues: initial, validate: validateClusterIsolation });
  return (
    <Table.Tr>
      <Table.Td>{cluster.name}</Table.Td>
      <Table.Td>{cluster.sandbox_runtime_class ? <Code>{cluster.sandbox_runtime_class}</Code> : 'None'}</Table.Td>
      <Table.Td>{cluster.user_namespaces ? 'Every node' : 'As each node reports'}</Table.Td>
      <Table.Td>
        <Group justify="flex-end">
          <Button size="xs" variant="default" onClick={() => setEditing(true)}>
            Change
          </Button>
        </Group>
        <FormModal
          opened={editing}
          onClose={() => setEditing(false)}
          title={`Isolation on ${cluster.name}`}
          submitLabel="Save"
          form={form}
          initialValues={initial}
          serverFields={{ sandbox_runtime_class: 'sandboxClass', user_namespaces: 'userNamespaces' }}
          onSubmit={(values) => save.mutateAsync({ clusterId: cluster.id, body: clusterIsolationRequest(values) })}
          done={() => `Saved what ${cluster.name} offers to isolation levels.`}
        >
          <TextInput
            label="Sandbox RuntimeClass"
            description="The RuntimeClass sandboxed sessions run with here (gVisor's, Kata's); empty: none run here. Its nodes are those that meet its scheduling constraints."
            {...form.getInputProps('sandboxClass')}
          />
          <Switch
            label="Every node runs pods in user namespaces"
            description="Off: only the nodes whose runtime reports it."
            {...form.getInputProps('userNamespaces', { type: 'checkbox' })}
          />
        </FormModal>
      </Table.Td>
    </Table.Tr>
  );
}

/** The super admin's page: which nodes are whose, and what each cluster offers to isolation levels. */
export function IsolationPage() {
  const nodes = useIsolationNodes();
  const clusters = useClusters(200);
  const clusterNames = new Map(clusters.items.map((cluster) => [cluster.id, cluster.name]));
  return (
    <Stack maw={1200} gap="xl">
      <PageHeader
        title="Isolation"
        description="Nodes dedicated to one organization or group, and the runtimes that sandboxed and user-namespaced sessions need. An organization's level is its policy key `isolation`."
      />
      <Stack gap="sm">
        <Title order={2} size="h4">
          Nodes
        </Title>
        <QueryState query={nodes} isEmpty={(nodes.data?.items.length ?? 0) === 0} empty="No node reports cards yet.">
          {nodes.data && <NodesTable nodes={nodes.data.items} clusterNames={clusterNames} />}
        </QueryState>
      </Stack>
      <Stack gap="sm">
        <Title order={2} size="h4">
          Clusters
        </Title>
        <QueryState query={clusters} isEmpty={clusters.items.length === 0} empty="No clusters registered yet.">
          <Table striped aria-label="Clusters' isolation">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Cluster</Table.Th>
                <Table.Th>Sandbox RuntimeClass</Table.Th>
                <Table.Th>User namespaces</Table.Th>
                <Table.Th aria-label="Actions" />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {clusters.items.map((cluster) => (
                <ClusterSettings key={cluster.id} cluster={cluster} />
              ))}
            </Table.Tbody>
          </Table>
        </QueryState>
      </Stack>
    </Stack>
  );
}
