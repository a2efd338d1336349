import { Alert, Button, Group, Modal, Radio, Stack, Text } from '@mantine/core';
import { useState } from 'react';
import { useMigLayouts, useSetMigLayout, useSetPool } from '../../api/hooks/capacity';
import { errorMessage, isApiError } from '../../api/errors';
import type { CardOut, CardPool } from '../../api/types';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { QueryState } from '../../ui/QueryState';
import { LayoutPreview } from './CardPicture';

const POOL_LABELS: Record<CardPool, string> = { 'hami-core': 'hami-core', mig: 'MIG' };

/** A refusal because sessions still hold the card reads as such, not as a bare conflict. */
function explain(error: unknown): Error {
  if (isApiError(error, 409, 'card_busy')) {
    return new Error(`The card is busy: ${error.message} Wait for its sessions to end, then try again.`);
  }
  return error instanceof Error ? error : new Error(errorMessage(error));
}

function MovePoolButton({ card }: { card: CardOut }) {
  const setPool = useSetPool();
  const target: CardPool = card.pool === 'mig' ? 'hami-core' : 'mig';
  return (
    <ConfirmButton
      color="blue"
      label={`Move to ${POOL_LABELS[target]} pool`}
      title="Move card"
      message={
        target === 'mig'
          ? `Move ${card.uuid} to the MIG pool? It stops taking hami-core sessions and has no MIG instances until you set a layout.`
          : `Move ${card.uuid} to the hami-core pool? Its MIG layout is dropped.`
      }
      confirmLabel="Move card"
      onConfirm={async () => {
        try {
          await setPool.mutateAsync({ cardId: card.id, pool: target });
        } catch (error) {
          throw explain(error);
        }
      }}
    />
  );
}

const layoutKey = (layout: string[]) => layout.join(' + ');

function MigLayoutModal({ card, opened, onClose }: { card: CardOut; opened: boolean; onClose: () => void }) {
  const choices = useMigLayouts(card.id, opened);
  const setLayout = useSetMigLayout();
  const [chosen, setChosen] = useState<string | null>(null);
  const layouts = choices.data?.layouts ?? [];
  const picked = layouts.find((layout) => layoutKey(layout) === chosen);

  const close = () => {
    if (setLayout.isPending) return;
    setLayout.reset();
    setChosen(null);
    onClose();
  };

  const apply = async () => {
    if (!picked) return;
    try {
      await setLayout.mutateAsync({ cardId: card.id, instances: picked.map((profile) => ({ profile })) });
      close();
    } catch {
      // Shown below from the mutation's error.
    }
  };

  return (
    <Modal opened={opened} onClose={close} title="Set MIG layout" centered size="lg">
      <Text size="sm" mb="sm">
        Choose one of the full layouts {choices.data ? choices.data.geometry : 'this GPU'} accepts. The card must be
        empty.
      </Text>
      <QueryState query={choices} isEmpty={layouts.length === 0} empty="This GPU has no MIG layouts.">
        <Radio.Group value={chosen} onChange={setChosen} aria-label="MIG layouts">
          <Stack gap="xs" mah={360} style={{ overflowY: 'auto' }}>
            {layouts.map((layout) => {
              const key = layoutKey(layout);
              return (
                <Group key={key} gap="sm" wrap="nowrap">
                  <Radio value={key} label={key} style={{ flex: 1 }} />
                  <LayoutPreview profiles={layout} memoryMib={card.memory_mib} />
                </Group>
              );
            })}
          </Stack>
        </Radio.Group>
      </QueryState>
      {setLayout.error && (
        <Alert color="red" mt="md" role="alert">
          {explain(setLayout.error).message}
        </Alert>
      )}
      <Group justify="flex-end" mt="lg">
        <Button variant="default" onClick={close} disabled={setLayout.isPending}>
          Cancel
        </Button>
        <Button onClick={() => void apply()} disabled={!picked} loading={setLayout.isPending}>
          Apply layout
        </Button>
      </Group>
    </Modal>
  );
}

/** The changes a capacity admin may make to one card. */
export function CardActions({ card }: { card: CardOut }) {
  const [layoutOpen, setLayoutOpen] = useState(false);
  return (
    <Group gap="xs">
      <MovePoolButton card={card} />
      {card.pool === 'mig' && (
        <>
          <Button size="xs" variant="light" onClick={() => setLayoutOpen(true)}>
            Set MIG layout
          </Button>
          <MigLayoutModal card={card} opened={layoutOpen} onClose={() => setLayoutOpen(false)} />
        </>
      )}
    </Group>
  );
}
