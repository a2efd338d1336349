import { describe, expect, it } from 'vitest';
import { countOf, formatMemoryGiB, formatRelative } from './format';

const NOW = Date.parse('2026-11-30T12:00:00Z');

describe('formatRelative', () => {
  it('says when something happened relative to now', () => {
    expect(formatRelative('2026-11-30T11:59:50Z', '—', NOW)).toBe('just now');
    expect(formatRelative('2026-11-30T11:55:00Z', '—', NOW)).toBe('5 minutes ago');
    expect(formatRelative('2026-11-30T09:00:00Z', '—', NOW)).toBe('3 hours ago');
    expect(formatRelative('2026-11-29T12:00:00Z', '—', NOW)).toBe('yesterday');
  });

  it('uses the fallback when there is no time', () => {
    expect(formatRelative(null, 'never', NOW)).toBe('never');
    expect(formatRelative(undefined, undefined, NOW)).toBe('—');
  });
});

describe('formatMemoryGiB', () => {
  it('converts MiB to GiB with one decimal at most', () => {
    expect(formatMemoryGiB(81920)).toBe('80 GiB');
    expect(formatMemoryGiB(81559)).toBe('79.6 GiB');
  });
});

describe('countOf', () => {
  it('puts the noun in the form the count takes, the number with separators', () => {
    expect(countOf(1, 'card')).toBe('1 card');
    expect(countOf(0, 'card')).toBe('0 cards');
    expect(countOf(2, 'session')).toBe('2 sessions');
    expect(countOf(1024, 'card')).toBe(new Intl.NumberFormat().format(1024) + ' cards');
    expect(countOf(0.5, 'core')).toBe(`${new Intl.NumberFormat().format(0.5)} cores`);
    expect(countOf(3, 'person', 'people')).toBe('3 people');
  });
});
