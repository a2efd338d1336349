import { Badge, Group, Text, Tooltip } from '@mantine/core';
import type { CardOut, ClusterOut, ClusterStatus } from '../../api/types';
import { formatClock } from '../../queue/countdown';
import { formatDateTime, formatRelative } from '../../ui/format';

const STATUS_LABELS: Record<ClusterStatus, string> = {
  connected: 'Connected',
  unreachable: 'Unreachable',
  missing_crd: 'CRD missing',
};

const STATUS_COLORS: Record<ClusterStatus, string> = {
  connected: 'green',
  unreachable: 'red',
  missing_crd: 'orange',
};

/** The cluster's state; the server's explanation shows on hover. */
export function ClusterStatusBadge({ cluster }: { cluster: Pick<ClusterOut, 'status' | 'status_message'> }) {
  return (
    <Tooltip label={cluster.status_message} disabled={!cluster.status_message} multiline w={320} withArrow>
      <Badge variant="light" color={STATUS_COLORS[cluster.status]} style={{ overflow: 'visible' }}>
        {STATUS_LABELS[cluster.status]}
      </Badge>
    </Tooltip>
  );
}

/** Healthy cards out of all known cards, and how many stopped reporting. */
export function CardCounts({ cluster }: { cluster: Pick<ClusterOut, 'cards' | 'healthy_cards' | 'missing_cards'> }) {
  return (
    <Group gap="xs" wrap="nowrap">
      <Text size="sm" style={{ whiteSpace: 'nowrap', fontVariantNumeric: 'tabular-nums' }}>
        {cluster.healthy_cards} / {cluster.cards} healthy
      </Text>
      {cluster.missing_cards > 0 && (
        <Badge variant="light" color="orange" style={{ overflow: 'visible' }}>
          {cluster.missing_cards} missing
        </Badge>
      )}
    </Group>
  );
}

/** "5 minutes ago", with the exact time on hover; `never` when there is none. */
export function TimeAgo({ iso, never = 'never' }: { iso: string | null; never?: string }) {
  if (!iso) {
    return (
      <Text span size="sm" c="dimmed">
        {never}
      </Text>
    );
  }
  return (
    <Text component="time" dateTime={iso} title={formatDateTime(iso)} size="sm" style={{ whiteSpace: 'nowrap' }}>
      {formatRelative(iso)}
    </Text>
  );
}

export type CardHealth = 'healthy' | 'unhealthy' | 'missing';

/** A card that stopped reporting is missing, whatever it last said about its health. */
export function cardHealth(card: Pick<CardOut, 'healthy' | 'missing'>): CardHealth {
  if (card.missing) return 'missing';
  return card.healthy ? 'healthy' : 'unhealthy';
}

const HEALTH = {
  healthy: { label: 'Healthy', color: 'green' },
  unhealthy: { label: 'Unhealthy', color: 'red' },
  missing: { label: 'Missing', color: 'orange' },
} as const;

export function CardHealthBadge({ card }: { card: Pick<CardOut, 'healthy' | 'missing'> }) {
  const health = HEALTH[cardHealth(card)];
  return (
    <Badge variant="light" color={health.color} style={{ overflow: 'visible' }}>
      {health.label}
    </Badge>
  );
}

/** Said of a drain a card's fault started (an XID the DCGM exporter reported). */
export function HardwareErrorBadge() {
  return (
    <Badge variant="light" color="red" style={{ overflow: 'visible' }}>
      hardware error
    </Badge>
  );
}

/** The drain covering a card: until when its sessions run, why on hover, and a hardware error as such. */
export function CardDrainBadges({ drain }: { drain: NonNullable<CardOut['drain']> }) {
  return (
    <>
      <Tooltip label={drain.reason} multiline w={320} withArrow>
        <Badge variant="light" color="orange" style={{ overflow: 'visible' }}>
          Draining until{' '}
          <time dateTime={drain.deadline} title={formatDateTime(drain.deadline)}>
            {formatClock(drain.deadline)}
          </time>
        </Badge>
      </Tooltip>
      {drain.source === 'xid' && <HardwareErrorBadge />}
    </>
  );
}
