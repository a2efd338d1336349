import { describe, expect, it } from 'vitest';
import { NEW_VOLUME, validateVolume, volumeRequest, type VolumeValues } from './groupVolumeForm';

const good: VolumeValues = { ...NEW_VOLUME, name: 'scratch' };
const errors = (change: Partial<VolumeValues>) => validateVolume({ ...good, ...change });

describe('the shared volume schema', () => {
  it('takes a volume within every bound', () => {
    expect(errors({})).toEqual({});
    expect(errors({ name: 'a'.repeat(40), sizeGiB: 16384 })).toEqual({});
    expect(errors({ sizeGiB: '1' })).toEqual({});
    expect(volumeRequest({ ...good, name: ' scratch ', sizeGiB: '200', access: 'ReadOnlyMany' })).toEqual({
      name: 'scratch',
      size_gib: 200,
      access_mode: 'ReadOnlyMany',
    });
  });

  it('refuses sizes out of range, decimals, huge and half-typed numbers, with the limits', () => {
    const message = 'Enter a whole number from 1 to 16,384 GiB.';
    for (const sizeGiB of [0, -5, 16385, 1e300, 1.5, '', '-', '1e3']) {
      expect(errors({ sizeGiB })).toEqual({ sizeGiB: message });
    }
  });

  it('refuses a name that is not a Kubernetes name', () => {
    expect(errors({ name: '' })).toEqual({ name: 'Enter a name.' });
    expect(errors({ name: 'a'.repeat(41) })).toEqual({ name: 'Use at most 40 characters.' });
    for (const name of ['Scratch', 'scratch space', '-x', 'x-', 'a\u0000', 'ａ']) {
      expect(errors({ name })).toEqual({
        name: 'Use lower-case letters, digits and dashes, starting and ending with a letter or digit.',
      });
    }
  });
});
