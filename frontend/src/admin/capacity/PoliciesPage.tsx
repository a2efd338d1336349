import { Paper, Stack, Title } from '@mantine/core';
import { PageHeader } from '../../ui/PageHeader';
import { EffectivePolicy } from './EffectivePolicy';
import { PolicyByScope } from './PolicyByScope';

export function PoliciesPage() {
  return (
    <Stack maw={1200} gap="lg">
      <PageHeader
        title="Policies"
        description="Limits on sessions at four scopes; the most specific scope that sets a key wins."
      />
      <Paper withBorder p="md" radius="md" component="section" aria-label="Policy by scope">
        <Title order={3} size="h4" mb="sm">
          Policy by scope
        </Title>
        <PolicyByScope />
      </Paper>
      <Paper withBorder p="md" radius="md" component="section" aria-label="Effective policy">
        <Title order={3} size="h4" mb="sm">
          Effective policy
        </Title>
        <EffectivePolicy />
      </Paper>
    </Stack>
  );
}
