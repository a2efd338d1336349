import { Badge, Group, Paper, SimpleGrid, Stack, Text, Title, Tooltip } from '@mantine/core';
import { useId } from 'react';
import type { CardOut } from '../../api/types';
import { countOf, formatMemoryGiB } from '../../ui/format';
import { CardActions } from './CardActions';
import { CardPicture } from './CardPicture';
import { CardDrainBadges, CardHealthBadge, cardHealth, TimeAgo } from './clusterParts';

const HEALTH_BORDER = { healthy: undefined, unhealthy: 'var(--mantine-color-red-6)', missing: 'var(--mantine-color-orange-6)' };

/** One card: its model, pool, health, the picture of who holds it, and the admin's actions. */
export function CardTile({ card, canManage }: { card: CardOut; canManage: boolean }) {
  const health = cardHealth(card);
  return (
    <Paper
      withBorder
      p="sm"
      radius="md"
      role="group"
      aria-label={`Card ${card.uuid}`}
      style={HEALTH_BORDER[health] ? { borderColor: HEALTH_BORDER[health], borderWidth: 2 } : undefined}
    >
      <Stack gap="xs">
        <Group justify="space-between" wrap="nowrap" align="flex-start">
          <div style={{ minWidth: 0 }}>
            <Text size="sm" fw={600}>
              {card.model}
            </Text>
            <Text size="xs" c="dimmed" ff="monospace" style={{ wordBreak: 'break-all' }}>
              {card.uuid}
            </Text>
          </div>
          <Group gap={4} justify="flex-end">
            <Badge variant="outline" color="gray" style={{ overflow: 'visible' }}>
              {card.pool === 'mig' ? 'MIG' : 'hami-core'}
            </Badge>
            {card.drain && <CardDrainBadges drain={card.drain} />}
            {card.draining && !card.drain && (
              <Tooltip label="Held for a request that has waited too long; it takes no new sessions." withArrow>
                <Badge variant="light" color="yellow" style={{ overflow: 'visible' }}>
                  Draining
                </Badge>
              </Tooltip>
            )}
            <CardHealthBadge card={card} />
          </Group>
        </Group>
        <CardPicture card={card} />
        <Group gap="md" justify="space-between">
          <Text size="xs" c="dimmed">
            {formatMemoryGiB(card.memory_mib)}
            {card.carved_tier && ` · carved ${card.carved_tier}`}
            {card.free_slots !== null && ` · ${card.free_slots} free`}
            {health === 'missing' && ' · last seen '}
            {health === 'missing' && <TimeAgo iso={card.last_seen_at} />}
          </Text>
          {canManage && <CardActions card={card} />}
        </Group>
      </Stack>
    </Paper>
  );
}

/** A node's cards on the page shown; `of` is how many the node has in the filtered set. */
export function NodeCards({
  node,
  cards,
  of,
  canManage,
}: {
  node: string;
  cards: CardOut[];
  of: number;
  canManage: boolean;
}) {
  const headingId = useId();
  const count = countOf(of, 'card');
  return (
    <section aria-labelledby={headingId}>
      <Group gap="xs" align="baseline" mb="xs">
        <Title order={4} size="h5" id={headingId} ff="monospace">
          {node}
        </Title>
        <Text size="xs" c="dimmed">
          {cards.length === of ? count : `${cards.length} of ${count} on this page`}
        </Text>
      </Group>
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        {cards.map((card) => (
          <CardTile key={card.id} card={card} canManage={canManage} />
        ))}
      </SimpleGrid>
    </section>
  );
}
