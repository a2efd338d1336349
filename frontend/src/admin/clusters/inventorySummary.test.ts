import { describe, expect, it } from 'vitest';
import type { CardOut, OccupantOut } from '../../api/types';
import { makeCard } from '../../test/fixtures';
import {
  byModel,
  byNode,
  filterCards,
  freeSlots,
  hasState,
  heldShare,
  NO_FILTER,
  nodeRuns,
  pageOf,
  parseState,
  sortRows,
  tally,
} from './inventorySummary';

const H100 = 'NVIDIA H100 80GB HBM3';
const A100 = 'NVIDIA-A100-SXM4-80GB';

function held(slot: number): OccupantOut {
  return {
    request_id: `req-${slot}`,
    user_id: 'u1',
    user_email: 'grace@example.org',
    group_id: 'g1',
    tier: '1/4',
    slot,
    mig_profile: null,
    vram_mib: 20389,
    status: 'live',
    admitted_at: '2026-11-30T11:00:00Z',
  };
}

let serial = 0;
function card(overrides: Partial<CardOut>): CardOut {
  serial += 1;
  return makeCard({ id: `card-${serial}`, uuid: `GPU-${String(serial).padStart(4, '0')}`, ...overrides });
}

// node-a: an idle card, a quarter-carved card with one of four slots taken, an unhealthy card.
// node-b: a MIG card with 3g + 3g (one taken), a draining card, a missing card.
const idle = card({ node: 'node-a' });
const quarters = card({ node: 'node-a', carved_tier: '1/4', carved_slots: 4, free_slots: 3, occupants: [held(0)] });
const sick = card({ node: 'node-a', healthy: false });
const mig = card({
  node: 'node-b',
  model: A100,
  pool: 'mig',
  memory_mib: 81920,
  mig_instances: [
    { profile: '3g.40gb', start: 0, occupied: true },
    { profile: '3g.40gb', start: 4, occupied: false },
  ],
  occupants: [{ ...held(0), mig_profile: '3g.40gb' }],
});
const draining = card({ node: 'node-b', model: A100, draining: true });
const gone = card({ node: 'node-b', model: A100, missing: true });
const all = [idle, quarters, sick, mig, draining, gone];

describe('a card in figures', () => {
  it('counts free slots only where a session could start now', () => {
    expect(freeSlots(idle)).toBe(0);
    expect(freeSlots(quarters)).toBe(3);
    expect(freeSlots(mig)).toBe(1);
    expect(freeSlots({ ...quarters, healthy: false })).toBe(0);
    expect(freeSlots({ ...quarters, draining: true })).toBe(0);
    const drain = { id: 'd1', scope: 'node', source: 'admin', reason: 'Firmware', deadline: '2026-11-30T13:00:00Z' } as const;
    expect(freeSlots({ ...quarters, drain })).toBe(0);
    expect(hasState({ ...quarters, drain }, 'draining')).toBe(true);
    expect(hasState(quarters, 'draining')).toBe(false);
    expect(freeSlots({ ...quarters, missing: true })).toBe(0);
  });

  it('holds the share its sessions take', () => {
    expect(heldShare(idle)).toBe(0);
    expect(heldShare(quarters)).toBe(0.25);
    expect(heldShare(mig)).toBe(0.5);
    expect(heldShare(card({ carved_tier: 'exclusive', carved_slots: 1, free_slots: 0, occupants: [held(0)] }))).toBe(1);
  });
});

describe('the summary', () => {
  it('tallies the whole cluster', () => {
    expect(tally(all)).toEqual({
      cards: 6,
      idle: 1,
      carved: 2,
      carvings: [
        ['1/4', 1],
        ['MIG', 1],
      ],
      freeSlots: 4,
      draining: 1,
      unhealthy: 2,
      allocated: 0.75 / 6,
    });
    expect(tally([])).toMatchObject({ cards: 0, allocated: 0 });
  });

  it('groups per model and per node, in name order', () => {
    expect(byModel(all).map((row) => [row.key, row.cards, row.carved, row.freeSlots, row.unhealthy])).toEqual([
      [H100, 3, 1, 3, 1],
      [A100, 3, 1, 1, 1],
    ]);
    const nodes = byNode(all);
    expect(nodes.map((row) => [row.key, row.idle, row.draining, row.unhealthy])).toEqual([
      ['node-a', 1, 0, 1],
      ['node-b', 0, 1, 1],
    ]);
  });

  it('orders nodes as people count them, and by any figure on request', () => {
    const many = ['gpu-node-10', 'gpu-node-2', 'gpu-node-1'].map((node) => card({ node }));
    const rows = byNode([...many, card({ node: 'gpu-node-2', healthy: false })]);
    expect(rows.map((row) => row.key)).toEqual(['gpu-node-1', 'gpu-node-2', 'gpu-node-10']);
    expect(sortRows(rows, { id: 'unhealthy', desc: true }).map((row) => row.key)).toEqual([
      'gpu-node-2',
      'gpu-node-1',
      'gpu-node-10',
    ]);
    expect(sortRows(rows, { id: 'key', desc: true }).map((row) => row.key)).toEqual([
      'gpu-node-10',
      'gpu-node-2',
      'gpu-node-1',
    ]);
    expect(sortRows(rows, { id: 'constructor', desc: false })).toEqual(rows);
  });
});

describe('the filters', () => {
  const uuids = (cards: CardOut[]) => cards.map((c) => c.uuid);

  it('keep the cards in each state', () => {
    expect(uuids(filterCards(all, { ...NO_FILTER, state: 'free' }))).toEqual(uuids([idle, quarters, mig]));
    expect(uuids(filterCards(all, { ...NO_FILTER, state: 'carved' }))).toEqual(uuids([quarters, mig]));
    expect(uuids(filterCards(all, { ...NO_FILTER, state: 'draining' }))).toEqual(uuids([draining]));
    expect(uuids(filterCards(all, { ...NO_FILTER, state: 'unhealthy' }))).toEqual(uuids([sick, gone]));
  });

  it('combine model, node and text, the text matching a node or a card in any case', () => {
    expect(uuids(filterCards(all, { ...NO_FILTER, model: A100, state: 'unhealthy' }))).toEqual(uuids([gone]));
    expect(uuids(filterCards(all, { ...NO_FILTER, node: 'node-a', state: 'carved' }))).toEqual(uuids([quarters]));
    expect(uuids(filterCards(all, { ...NO_FILTER, text: ' NODE-B ' }))).toEqual(uuids([mig, draining, gone]));
    expect(uuids(filterCards(all, { ...NO_FILTER, text: mig.uuid.toLowerCase() }))).toEqual(uuids([mig]));
    expect(filterCards(all, { ...NO_FILTER, model: 'no such model' })).toEqual([]);
  });

  it('read only the states they know from the URL', () => {
    expect(parseState('draining')).toBe('draining');
    expect(parseState('DRAINING')).toBe('');
    expect(parseState('toString')).toBe('');
  });
});

describe('paging the picture', () => {
  const many = Array.from({ length: 70 }, (_, i) => card({ node: `gpu-node-${Math.floor(i / 8)}` }));

  it('draws one page at a time and keeps a page asked past the end on the last one', () => {
    expect(pageOf(many, 1, 32)).toMatchObject({ page: 1, pages: 3 });
    expect(pageOf(many, 1, 32).cards).toHaveLength(32);
    expect(pageOf(many, 3, 32).cards).toHaveLength(6);
    expect(pageOf(many, 99, 32)).toMatchObject({ page: 3 });
    expect(pageOf(many, Number.NaN, 32)).toMatchObject({ page: 1 });
    expect(pageOf([], 1, 32)).toMatchObject({ page: 1, pages: 1, cards: [] });
  });

  it('splits a page into runs of one node', () => {
    const page = pageOf(filterCards(many, NO_FILTER), 1, 12).cards;
    expect(nodeRuns(page).map(([node, cards]) => [node, cards.length])).toEqual([
      ['gpu-node-0', 8],
      ['gpu-node-1', 4],
    ]);
  });
});
