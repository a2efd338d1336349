/**
 * A cluster's inventory in figures, and the filters over its cards. Pure: cards in, figures out.
 *
 * - A card is unhealthy when it says so or stopped reporting (missing); it takes no sessions.
 * - A card is carved when a hami-core card is cut to a tier, or a MIG card has a layout.
 * - A card is draining when a starving request holds it, or a drain (maintenance, a hardware
 *   error) covers it: it takes no new sessions.
 * - Free slots are where a session could start now, on a card that is healthy and not draining:
 *   a free slot of a carving or a free MIG instance. An idle card (hami-core, nothing on it)
 *   is counted apart: it takes any tier, so it is not one slot but a whole card.
 * - Allocated is the share of the cards' capacity that sessions hold (a quarter slot of one
 *   card is a quarter), over every card counted. The inventory reports no compute utilization.
 */
import type { CardOut } from '../../api/types';
import type { SortState } from '../../ui/tableState';
import { MEMORY_SLICES, profileSlices } from './migSlices';

export const CARD_STATES = ['free', 'carved', 'draining', 'unhealthy'] as const;
export type CardState = (typeof CARD_STATES)[number];

export const STATE_LABELS: Record<CardState, string> = {
  free: 'Free',
  carved: 'Carved',
  draining: 'Draining',
  unhealthy: 'Unhealthy',
};

/** The label the carving goes by: the tier's name, or "MIG" for a MIG layout. */
export const MIG_CARVING = 'MIG';

export function isUnhealthy(card: Pick<CardOut, 'healthy' | 'missing'>): boolean {
  return card.missing || !card.healthy;
}

export function isDraining(card: Pick<CardOut, 'draining' | 'drain'>): boolean {
  return card.draining || Boolean(card.drain);
}

function usable(card: CardOut): boolean {
  return !isUnhealthy(card) && !isDraining(card);
}

export function carving(card: CardOut): string | null {
  if (card.pool === 'mig') return card.mig_instances.length > 0 ? MIG_CARVING : null;
  return card.carved_tier;
}

export function isIdle(card: CardOut): boolean {
  return usable(card) && card.pool === 'hami-core' && card.carved_slots === null && card.occupants.length === 0;
}

export function freeSlots(card: CardOut): number {
  if (!usable(card)) return 0;
  if (card.pool === 'mig') return card.mig_instances.filter((instance) => !instance.occupied).length;
  return card.free_slots ?? 0;
}

/** The share of the card sessions hold, from 0 to 1. */
export function heldShare(card: CardOut): number {
  if (card.pool === 'mig') {
    const slices = card.mig_instances
      .filter((instance) => instance.occupied)
      .reduce((sum, instance) => sum + profileSlices(instance.profile, card.memory_mib), 0);
    return Math.min(1, slices / MEMORY_SLICES);
  }
  if (card.occupants.length === 0) return 0;
  if (!card.carved_slots) return 1;
  return Math.min(1, card.occupants.length / card.carved_slots);
}

export function hasState(card: CardOut, state: CardState): boolean {
  switch (state) {
    case 'free':
      return isIdle(card) || freeSlots(card) > 0;
    case 'carved':
      return carving(card) !== null;
    case 'draining':
      return isDraining(card);
    case 'unhealthy':
      return isUnhealthy(card);
  }
}

export interface Tally {
  cards: number;
  idle: number;
  carved: number;
  /** How many cards each carving takes, most first: [["1/4", 3], ["MIG", 1]]. */
  carvings: [string, number][];
  freeSlots: number;
  draining: number;
  unhealthy: number;
  /** Held share over all the cards counted, from 0 to 1; 0 with no cards. */
  allocated: number;
}

export interface SummaryRow extends Tally {
  /** The model's or node's name. */
  key: string;
}

export function tally(cards: readonly CardOut[]): Tally {
  const carvings = new Map<string, number>();
  let idle = 0;
  let slots = 0;
  let draining = 0;
  let unhealthy = 0;
  let held = 0;
  for (const card of cards) {
    const cut = carving(card);
    if (cut !== null) carvings.set(cut, (carvings.get(cut) ?? 0) + 1);
    if (isIdle(card)) idle += 1;
    slots += freeSlots(card);
    if (isDraining(card)) draining += 1;
    if (isUnhealthy(card)) unhealthy += 1;
    held += heldShare(card);
  }
  return {
    cards: cards.length,
    idle,
    carved: [...carvings.values()].reduce((sum, n) => sum + n, 0),
    carvings: [...carvings.entries()].sort(([a, x], [b, y]) => y - x || naturalCompare(a, b)),
    freeSlots: slots,
    draining,
    unhealthy,
    allocated: cards.length === 0 ? 0 : held / cards.length,
  };
}

/** `gpu-node-2` before `gpu-node-10`. */
export function naturalCompare(a: string, b: string): number {
  return a.localeCompare(b, undefined, { numeric: true, sensitivity: 'base' });
}

function groupBy(cards: readonly CardOut[], keyOf: (card: CardOut) => string): Map<string, CardOut[]> {
  const groups = new Map<string, CardOut[]>();
  for (const card of cards) {
    const key = keyOf(card);
    const list = groups.get(key);
    if (list) list.push(card);
    else groups.set(key, [card]);
  }
  return groups;
}

function summarize(cards: readonly CardOut[], keyOf: (card: CardOut) => string): SummaryRow[] {
  return [...groupBy(cards, keyOf).entries()]
    .map(([key, list]) => ({ key, ...tally(list) }))
    .sort((a, b) => naturalCompare(a.key, b.key));
}

export const byModel = (cards: readonly CardOut[]) => summarize(cards, (card) => card.model);
export const byNode = (cards: readonly CardOut[]) => summarize(cards, (card) => card.node);

/** The columns a summary table sorts by, each a figure of the row (or its name). */
export const SUMMARY_SORTS = ['key', 'cards', 'idle', 'carved', 'freeSlots', 'draining', 'unhealthy', 'allocated'] as const;
type SummarySort = (typeof SUMMARY_SORTS)[number];

/** Rows in the chosen order, ties (and no choice) by name. */
export function sortRows(rows: readonly SummaryRow[], sort: SortState | null): SummaryRow[] {
  const id = sort && (SUMMARY_SORTS as readonly string[]).includes(sort.id) ? (sort.id as SummarySort) : 'key';
  const sign = sort?.desc ? -1 : 1;
  return [...rows].sort((a, b) => {
    const order = id === 'key' ? naturalCompare(a.key, b.key) : a[id] - b[id];
    return sign * order || naturalCompare(a.key, b.key);
  });
}

export interface CardFilter {
  model: string;
  node: string;
  state: CardState | '';
  /** Part of a node's name or a card's UUID, any case. */
  text: string;
}

export const NO_FILTER: CardFilter = { model: '', node: '', state: '', text: '' };

export function parseState(value: string): CardState | '' {
  return (CARD_STATES as readonly string[]).includes(value) ? (value as CardState) : '';
}

export function isFiltered(filter: CardFilter): boolean {
  return Boolean(filter.model || filter.node || filter.state || filter.text.trim());
}

export function matches(card: CardOut, filter: CardFilter): boolean {
  if (filter.model && card.model !== filter.model) return false;
  if (filter.node && card.node !== filter.node) return false;
  if (filter.state && !hasState(card, filter.state)) return false;
  const text = filter.text.trim().toLowerCase();
  if (text && !card.node.toLowerCase().includes(text) && !card.uuid.toLowerCase().includes(text)) return false;
  return true;
}

/** The cards the filter keeps, by node (natural order), then by UUID. */
export function filterCards(cards: readonly CardOut[], filter: CardFilter): CardOut[] {
  return cards
    .filter((card) => matches(card, filter))
    .sort((a, b) => naturalCompare(a.node, b.node) || naturalCompare(a.uuid, b.uuid));
}

export interface CardPage {
  cards: CardOut[];
  /** The page shown, 1-based, within 1..pages whatever was asked. */
  page: number;
  pages: number;
}

/** One page of cards; a page past the end shows the last one. */
export function pageOf(cards: readonly CardOut[], page: number, size: number): CardPage {
  const pages = Math.max(1, Math.ceil(cards.length / size));
  const shown = Number.isInteger(page) ? Math.min(Math.max(page, 1), pages) : 1;
  return { cards: cards.slice((shown - 1) * size, shown * size), page: shown, pages };
}

/** Consecutive cards of the same node, in the order given: one picture section each. */
export function nodeRuns(cards: readonly CardOut[]): [string, CardOut[]][] {
  const runs: [string, CardOut[]][] = [];
  for (const card of cards) {
    const last = runs[runs.length - 1];
    if (last && last[0] === card.node) last[1].push(card);
    else runs.push([card.node, [card]]);
  }
  return runs;
}
