import { describe, expect, it } from 'vitest';
import { CPU_ONLY, NEW_HOME, validateNewSession, type NewSessionValues } from './newSessionForm';

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
