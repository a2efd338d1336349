import { describe, expect, it } from 'vitest';
import { imageFields, NEW_IMAGE, validateImage, type ImageValues } from './catalogForm';

const good: ImageValues = { ...NEW_IMAGE, name: 'JupyterLab 4', reference: 'registry.example.org/team/jupyter:4.1' };
const errors = (change: Partial<ImageValues>) => validateImage({ ...good, ...change });

describe('the catalog image schema', () => {
  it('takes an image within every bound, trimmed', () => {
    expect(errors({})).toEqual({});
    expect(errors({ name: 'x'.repeat(80), reference: `r/${'a'.repeat(510)}`, description: 'd\n'.repeat(1000) })).toEqual({});
    expect(errors({ reference: 'ghcr.io/team/lab@sha256:abc_1' })).toEqual({});
    expect(imageFields({ ...good, name: ' Lab ', reference: ' a/b:1 ', description: ' d ' })).toEqual({
      name: 'Lab',
      reference: 'a/b:1',
      description: 'd',
    });
  });

  it('refuses an empty, overlong or invisible name', () => {
    expect(errors({ name: '  ' })).toEqual({ name: 'The name is required.' });
    expect(errors({ name: 'x'.repeat(81) })).toEqual({ name: 'Use at most 80 characters.' });
    expect(errors({ name: 'Lab\u0000' })).toEqual({ name: 'Use no control or invisible characters.' });
    expect(errors({ name: 'Lab\u202e' })).toEqual({ name: 'Use no control or invisible characters.' });
  });

  it('refuses a reference the server would not take', () => {
    expect(errors({ reference: ' ' })).toEqual({ reference: 'Enter the image reference.' });
    expect(errors({ reference: `r/${'a'.repeat(511)}` })).toEqual({ reference: 'Use at most 512 characters.' });
    for (const reference of ['Registry/x', 'a b', 'a/b:', 'a\u0000b', '-a']) {
      expect(errors({ reference })).toEqual({
        reference: 'Enter an image reference such as registry.example.org/team/jupyter:4.1.',
      });
    }
  });

  it('refuses an overlong description or one with NUL, in characters', () => {
    expect(errors({ description: 'x'.repeat(2001) })).toEqual({ description: 'Use at most 2,000 characters.' });
    expect(errors({ description: '🚀'.repeat(2000) })).toEqual({});
    expect(errors({ description: 'a\u0000' })).toEqual({ description: 'Remove the NUL character.' });
  });
});
