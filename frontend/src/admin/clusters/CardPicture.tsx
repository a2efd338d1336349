import { Box, Text, Tooltip } from '@mantine/core';
import type { CSSProperties } from 'react';
import type { CardOut, OccupantOut } from '../../api/types';
import { formatClock } from '../../queue/countdown';
import { MEMORY_SLICES, profileSlices } from './migSlices';

// One colour per occupant, stable across renders and cards: the same person reads the same.
const PALETTE = ['blue', 'grape', 'teal', 'orange', 'indigo', 'lime', 'pink', 'cyan', 'violet', 'yellow'];

export function occupantColor(email: string): string {
  let hash = 0;
  for (const char of email) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return PALETTE[hash % PALETTE.length];
}

const BAR_HEIGHT = 40;

const cellBase: CSSProperties = {
  height: BAR_HEIGHT,
  borderRadius: 4,
  display: 'flex',
  alignItems: 'center',
  justifyContent: 'center',
  overflow: 'hidden',
  padding: '0 4px',
  minWidth: 0,
};

const freeCell: CSSProperties = {
  ...cellBase,
  border: '1px dashed var(--mantine-color-gray-5)',
  background: 'var(--mantine-color-body)',
};

function occupiedCell(occupant: OccupantOut | undefined): CSSProperties {
  const color = occupant ? occupantColor(occupant.user_email) : 'gray';
  return {
    ...cellBase,
    background: `var(--mantine-color-${color}-light)`,
    // A session given notice is drawn with a dashed orange edge: it leaves the card soon.
    border: occupant?.notice_deadline
      ? '2px dashed var(--mantine-color-orange-7)'
      : `1px solid var(--mantine-color-${color}-outline)`,
    // A lost allocation still holds the slot, but its session is gone: show it faded.
    opacity: occupant?.status === 'lost' ? 0.55 : 1,
  };
}

/** "paused at 10:42" for a session given notice; null for the others. */
function pauseNote(occupant: OccupantOut | undefined): string | null {
  return occupant?.notice_deadline ? `paused at ${formatClock(occupant.notice_deadline)}` : null;
}

function describeOccupant(occupant: OccupantOut | undefined): string {
  if (!occupant) return 'in use';
  const lost = occupant.status === 'lost' ? ' (lost)' : '';
  const pause = pauseNote(occupant);
  return `${occupant.user_email || 'unknown user'}${lost}${pause ? `, ${pause}` : ''}`;
}

/** What a held part shows: who holds it, and when it is paused if it was given notice. */
function holderText(occupant: OccupantOut | undefined, prefix = ''): string {
  const pause = pauseNote(occupant);
  return `${prefix}${occupant?.user_email ?? 'in use'}${pause ? ` · ${pause}` : ''}`;
}

function CellText({ children }: { children: string }) {
  return (
    <Text size="xs" truncate="end" style={{ minWidth: 0 }}>
      {children}
    </Text>
  );
}

/** A hami-core card: one bar split into its carved slots, or whole while uncarved. */
function HamiBar({ card }: { card: CardOut }) {
  if (!card.carved_slots) {
    const holder = card.occupants[0];
    if (holder) {
      const who = describeOccupant(holder);
      return (
        <Tooltip label={who} withArrow>
          <Box style={occupiedCell(holder)} aria-label={`Whole card: ${who}`}>
            <CellText>{holderText(holder)}</CellText>
          </Box>
        </Tooltip>
      );
    }
    return (
      <Box style={freeCell} aria-label="Whole card: free">
        <CellText>Whole card · free</CellText>
      </Box>
    );
  }
  const bySlot = new Map(card.occupants.map((occupant) => [occupant.slot, occupant]));
  const slots = Array.from({ length: card.carved_slots }, (_, index) => index);
  return (
    <Box style={{ display: 'grid', gridTemplateColumns: `repeat(${card.carved_slots}, minmax(0, 1fr))`, gap: 4 }}>
      {slots.map((slot) => {
        const occupant = bySlot.get(slot);
        if (!occupant) {
          return (
            <Box key={slot} style={freeCell} aria-label={`Slot ${slot + 1}: free`}>
              <CellText>free</CellText>
            </Box>
          );
        }
        const who = describeOccupant(occupant);
        return (
          <Tooltip key={slot} label={`${who} · ${occupant.tier ?? ''}`} withArrow>
            <Box style={occupiedCell(occupant)} aria-label={`Slot ${slot + 1}: ${who}`}>
              <CellText>{holderText(occupant)}</CellText>
            </Box>
          </Tooltip>
        );
      })}
    </Box>
  );
}

/** A MIG card: its 8 memory slices, each instance drawn over the run it takes. */
function MigSlices({ card }: { card: CardOut }) {
  const byStart = new Map(card.occupants.map((occupant) => [occupant.slot, occupant]));
  return (
    <Box
      style={{
        display: 'grid',
        gridTemplateColumns: `repeat(${MEMORY_SLICES}, minmax(0, 1fr))`,
        gap: 4,
        position: 'relative',
      }}
    >
      {Array.from({ length: MEMORY_SLICES }, (_, index) => (
        <Box
          key={`slice-${index}`}
          aria-hidden
          style={{
            gridColumn: `${index + 1} / span 1`,
            gridRow: 1,
            height: BAR_HEIGHT,
            borderRadius: 4,
            background: 'var(--mantine-color-gray-1)',
          }}
        />
      ))}
      {card.mig_instances.map((instance) => {
        const width = profileSlices(instance.profile, card.memory_mib);
        const placement: CSSProperties = { gridColumn: `${instance.start + 1} / span ${width}`, gridRow: 1 };
        if (!instance.occupied) {
          return (
            <Box
              key={instance.start}
              style={{ ...freeCell, ...placement }}
              aria-label={`${instance.profile} at slice ${instance.start}: free`}
            >
              <CellText>{`${instance.profile} · free`}</CellText>
            </Box>
          );
        }
        const occupant = byStart.get(instance.start);
        const who = describeOccupant(occupant);
        return (
          <Tooltip key={instance.start} label={who} withArrow>
            <Box
              style={{ ...occupiedCell(occupant), ...placement }}
              aria-label={`${instance.profile} at slice ${instance.start}: ${who}`}
            >
              <CellText>{holderText(occupant, `${instance.profile} · `)}</CellText>
            </Box>
          </Tooltip>
        );
      })}
    </Box>
  );
}

/** The card as a picture of what is carved on it and who holds each part. */
export function CardPicture({ card }: { card: CardOut }) {
  if (card.pool === 'mig') {
    if (card.mig_instances.length === 0) {
      return (
        <Box style={freeCell} aria-label="No MIG layout">
          <CellText>No MIG layout set</CellText>
        </Box>
      );
    }
    return <MigSlices card={card} />;
  }
  return <HamiBar card={card} />;
}

/** A preview of a layout choice: its instances side by side, each as wide as its memory run. */
export function LayoutPreview({ profiles, memoryMib }: { profiles: string[]; memoryMib: number }) {
  return (
    <Box
      style={{
        display: 'grid',
        gridTemplateColumns: `repeat(${MEMORY_SLICES}, minmax(0, 1fr))`,
        gap: 2,
        width: 320,
        flexShrink: 0,
      }}
    >
      {profiles.map((profile, index) => (
        <Box
          key={`${profile}-${index}`}
          style={{
            ...cellBase,
            height: 22,
            gridColumn: `span ${profileSlices(profile, memoryMib)}`,
            background: 'var(--mantine-color-blue-light)',
            border: '1px solid var(--mantine-color-blue-outline)',
          }}
        >
          <Text size="10px" truncate="end">
            {profile}
          </Text>
        </Box>
      ))}
    </Box>
  );
}
