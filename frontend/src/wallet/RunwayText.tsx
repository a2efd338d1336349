import { Badge, Text, type TextProps } from '@mantine/core';
import { useMyWallet } from '../api/hooks/wallets';
import { useSessions } from '../api/hooks/sessions';
import { formatCredits } from '../ui/amount';
import { formatDuration, formatUntil } from '../ui/format';
import { runway, type Runway } from './runway';

/** The caller's runway, from their wallet and their sessions billed now; null while loading. */
export function useMyRunway(): Runway | null {
  const wallet = useMyWallet();
  const sessions = useSessions();
  if (!wallet.data || !sessions.data) return null;
  return runway(wallet.data.balance, sessions.data.items, new Date());
}

/** "About 25 h at 2 credits/h, until Thu 14:00", or that nothing is billed now (see `runway`). */
export function runwayWords(r: Runway, now = new Date()): string {
  if (r.hours === null) return 'Nothing is billed now.';
  if (r.hours === 0) return `Nothing left at ${formatCredits(r.burnPerHour)}/h: your sessions are being paused.`;
  const how = formatDuration(r.hours * 3600);
  const until = r.until ? `, until ${formatUntil(r.until, now)}` : '';
  return `${how.charAt(0).toUpperCase()}${how.slice(1)} at your current ${formatCredits(r.burnPerHour)}/h${until}.`;
}

export function RunwayText(props: TextProps) {
  const r = useMyRunway();
  if (!r) return null;
  return (
    <Text size="sm" {...props} data-testid="runway">
      {runwayWords(r)}
    </Text>
  );
}

/** Beside the header's Wallet link while something is billed: how long the wallet lasts. */
export function RunwayBadge() {
  const r = useMyRunway();
  if (!r || r.hours === null) return null;
  return (
    <Badge size="xs" variant="light" color={r.hours < 1 ? 'red' : r.hours < 5 ? 'orange' : 'gray'} aria-hidden>
      {formatDuration(r.hours * 3600).replace('about ', '~')}
    </Badge>
  );
}
