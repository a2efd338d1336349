import { Alert, Button, Group, Text } from '@mantine/core';
import { IconAlertTriangle, IconBulb } from '@tabler/icons-react';
import { useSizing } from '../api/hooks/usage';

/**
 * What the person's recent sessions of this image on this tier say: a cheaper tier of the same
 * model would have held them ("your last 8 sessions on 1/2 A100 peaked at 9 GiB: 1/4 A100 would
 * have fitted, at half the price"), or they came close to the VRAM limit. Nothing when there is
 * nothing to say, or while it loads. `onChoose` offers to switch to the smaller tier.
 */
export function SizingAdvice({
  image,
  tierId,
  onChoose,
}: {
  image: string | null;
  tierId: string | null;
  onChoose?: (tierId: string) => void;
}) {
  const advice = useSizing(image, tierId).data;
  if (!advice?.in_words) return null;
  const tight = advice.near_limit > 0;
  const smaller = advice.smaller;
  return (
    <Alert
      color={tight ? 'orange' : 'teal'}
      variant="light"
      role="status"
      py="xs"
      icon={tight ? <IconAlertTriangle size={20} aria-hidden /> : <IconBulb size={20} aria-hidden />}
      title={tight ? 'Close to the memory limit' : 'A smaller tier would do'}
    >
      <Group justify="space-between" align="center" wrap="wrap" gap="xs">
        <Text size="sm">{advice.in_words}</Text>
        {smaller && onChoose && (
          <Button size="xs" variant="light" color="teal" onClick={() => onChoose(smaller.tier_id)}>
            Use {smaller.name} {smaller.model}
          </Button>
        )}
      </Group>
    </Alert>
  );
}
