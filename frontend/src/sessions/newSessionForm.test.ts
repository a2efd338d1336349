import { describe, expect, it } from 'vitest';
import { CPU_ONLY, defaultTier, NEW_HOME, validateNewSession, type NewSessionValues } from './newSessionForm';

const good: NewSessionValues = {
  name: 'lab',
  sessionType: 'jupyterlab',
  image: null,
  group: 'g1',
  gpu: CPU_ONLY,
  cpuCores: 1,
  memoryGiB: 2,
  home: NEW_HOME,
  homeSizeGiB: 10,
  shared: [],
};
const errors = (change: Partial<NewSessionValues>) => validateNewSession({ ...good, ...change });

describe('the New session schema', () => {
  it('takes a session within every bound', () => {
    expect(errors({})).toEqual({});
    expect(errors({ cpuCores: 0.1, memoryGiB: 0.125, homeSizeGiB: 16384, name: 'x'.repeat(80) })).toEqual({});
    expect(errors({ cpuCores: '256', memoryGiB: '4096' })).toEqual({});
  });

  it('refuses numbers out of range with the limits, instead of clamping them', () => {
    expect(errors({ cpuCores: -3 })).toEqual({ cpuCores: 'Enter a number from 0.1 to 256 cores.' });
    expect(errors({ cpuCores: 99999 })).toEqual({ cpuCores: 'Enter a number from 0.1 to 256 cores.' });
    expect(errors({ memoryGiB: 0 })).toEqual({ memoryGiB: 'Enter a number from 0.125 to 4,096 GiB.' });
    expect(errors({ memoryGiB: -4 }).memoryGiB).toMatch(/0\.125 to 4,096 GiB/);
    expect(errors({ homeSizeGiB: 0.5 })).toEqual({ homeSizeGiB: 'Enter a whole number from 1 to 16,384 GiB.' });
  });

  it('refuses what the server could not count exactly, and what only looks like a number', () => {
    expect(errors({ cpuCores: 0.1004 })).toEqual({ cpuCores: 'Use at most three decimals: cores are counted in thousandths.' });
    expect(errors({ memoryGiB: 2.001 }).memoryGiB).toMatch(/^Use whole MiB/);
    expect(errors({ cpuCores: 0.125, memoryGiB: 1.25 })).toEqual({});
    for (const text of ['0x10', '1e2', ' 4', '1,5', 'Infinity', 'NaN']) {
      expect(Object.keys(errors({ cpuCores: text }))).toEqual(['cpuCores']);
    }
    expect(errors({ cpuCores: '4.' })).toEqual({});
  });

  it('counts characters as the server does', () => {
    expect(errors({ name: '🚀'.repeat(80) })).toEqual({});
    expect(errors({ name: '🚀'.repeat(81) })).toEqual({ name: 'Use at most 80 characters.' });
  });

  it('refuses a field left empty or half-typed', () => {
    expect(Object.keys(errors({ cpuCores: '' }))).toEqual(['cpuCores']);
    expect(Object.keys(errors({ memoryGiB: '-' }))).toEqual(['memoryGiB']);
    expect(Object.keys(errors({ homeSizeGiB: '' }))).toEqual(['homeSizeGiB']);
  });

  it('says every wrong field at once', () => {
    expect(Object.keys(errors({ cpuCores: -3, memoryGiB: 0, homeSizeGiB: 0.5, name: 'x'.repeat(81) })).sort()).toEqual(
      ['cpuCores', 'homeSizeGiB', 'memoryGiB', 'name'],
    );
  });

  it('asks no size of an existing home volume', () => {
    expect(errors({ home: 'v-free', homeSizeGiB: 0.5 })).toEqual({});
  });

  it('refuses an overlong name or one with invisible characters, and a missing group', () => {
    expect(errors({ name: 'x'.repeat(200) })).toEqual({ name: 'Use at most 80 characters.' });
    expect(errors({ name: 'lab\u0000' })).toEqual({ name: 'Use no control or invisible characters.' });
    expect(errors({ name: 'a\u202eb' })).toEqual({ name: 'Use no control or invisible characters.' });
    expect(errors({ name: `  ${'x'.repeat(80)}  ` })).toEqual({});
    expect(errors({ group: null })).toEqual({ group: 'Choose the group the session runs for.' });
  });

  it('refuses more shared volumes than a session mounts', () => {
    expect(errors({ shared: Array.from({ length: 9 }, (_, i) => `v${i}`) })).toEqual({ shared: 'Choose at most 8.' });
  });
});

describe('the GPU offered first', () => {
  const tier = (id: string, price: string, free: number, wait: number | null = free > 0 ? null : 600) => ({
    id,
    price_per_hour: price,
    free_slots: free,
    estimated_wait_seconds: wait,
  });

  it('is the cheapest tier that can start now, compared as exact amounts', () => {
    expect(defaultTier([tier('dear', '10', 1), tier('cheap-busy', '1', 0), tier('cheap', '9.5', 3)])).toBe('cheap');
  });

  it('breaks a tie on price by the order the tiers are listed in', () => {
    expect(defaultTier([tier('a', '2.5', 1), tier('b', '2.50', 4)])).toBe('a');
  });

  it('is the cheapest that queues when none can start now, the shorter wait on a tie', () => {
    const busy = [tier('dear', '5', 0, 60), tier('long', '2', 0, 7200), tier('short', '2', 0, 1800)];
    expect(defaultTier(busy)).toBe('short');
    // A tier no card offers cannot even queue: the others go first, however cheap it is.
    expect(defaultTier([tier('nowhere', '0.1', 0, null), tier('queues', '3', 0, 600)])).toBe('queues');
    expect(defaultTier([tier('nowhere', '0.1', 0, null), tier('also-nowhere', '3', 0, null)])).toBe('nowhere');
  });

  it('takes a free tier (price 0) as the cheapest', () => {
    expect(defaultTier([tier('paid', '0.000001', 2), tier('free', '0', 1)])).toBe('free');
  });

  it('is CPU only when no tier is allowed', () => {
    expect(defaultTier([])).toBe(CPU_ONLY);
  });
});
