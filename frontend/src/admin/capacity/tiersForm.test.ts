import { describe, expect, it } from 'vitest';
import {
  modelRequest,
  tierRequest,
  validateNewModel,
  validateNewTier,
  validatePrice,
  type NewModelValues,
  type NewTierValues,
} from './tiersForm';

const model: NewModelValues = { name: 'A100-80GB', price: '4', memory: '', split: '' };
const modelErrors = (change: Partial<NewModelValues>) => validateNewModel({ ...model, ...change });
const tier: NewTierValues = { kind: 'fraction', denominator: 4, profile: '', price: '' };
const tierErrors = (change: Partial<NewTierValues>) => validateNewTier({ ...tier, ...change });

describe('the GPU model schema', () => {
  it('takes a model within every bound, leaving empty numbers to the server', () => {
    expect(modelErrors({})).toEqual({});
    expect(modelErrors({ name: 'x'.repeat(120), memory: 2_147_483_647, split: 1024, price: '0' })).toEqual({});
    expect(modelRequest({ ...model, name: '  H100  ', price: '2.50', memory: '81920' })).toEqual({
      name: 'H100',
      exclusive_price: '2.5',
      memory_mib: 81920,
      split_count: null,
    });
  });

  it('refuses numbers out of range, decimals and huge ones with the limits', () => {
    expect(modelErrors({ memory: 0 })).toEqual({ memory: 'Enter a whole number from 1 to 2,147,483,647 MiB.' });
    expect(modelErrors({ memory: 2 ** 31 })).toEqual({ memory: 'Enter a whole number from 1 to 2,147,483,647 MiB.' });
    expect(modelErrors({ memory: '1e20' })).toEqual({ memory: 'Enter a whole number from 1 to 2,147,483,647 MiB.' });
    expect(modelErrors({ split: 1.5 })).toEqual({ split: 'Enter a whole number from 1 to 1,024.' });
    expect(modelErrors({ split: 1025 })).toEqual({ split: 'Enter a whole number from 1 to 1,024.' });
    expect(modelErrors({ split: '-' })).toEqual({ split: 'Enter a whole number from 1 to 1,024.' });
  });

  it('refuses an empty, overlong or invisible name', () => {
    expect(modelErrors({ name: '   ' })).toEqual({ name: 'The model name is required.' });
    expect(modelErrors({ name: 'x'.repeat(121) })).toEqual({ name: 'Use at most 120 characters.' });
    expect(modelErrors({ name: 'A100\u0000' })).toEqual({ name: 'Use no control or invisible characters.' });
    expect(modelErrors({ name: 'A1\u200b00' })).toEqual({ name: 'Use no control or invisible characters.' });
  });

  it('refuses a price the server would not read', () => {
    expect(modelErrors({ price: '' })).toEqual({ price: 'Enter an amount.' });
    expect(modelErrors({ price: '1,5' }).price).toMatch(/using a dot for decimals/);
    expect(modelErrors({ price: '-1' })).toEqual({ price: 'Enter a positive amount.' });
    expect(modelErrors({ price: '0.0000001' })).toEqual({ price: 'Use at most 6 decimals.' });
    expect(modelErrors({ price: '1000000000001' })).toEqual({ price: 'Enter at most 1,000,000,000,000 credits.' });
    expect(modelErrors({ price: '1000000000000' })).toEqual({});
  });
});

describe('the price schema', () => {
  it('takes zero and refuses what is not an amount', () => {
    expect(validatePrice({ price: '0' })).toEqual({});
    expect(validatePrice({ price: ' 2.5 ' })).toEqual({});
    expect(Object.keys(validatePrice({ price: '1e3' }))).toEqual(['price']);
    expect(Object.keys(validatePrice({ price: '2\u0000' }))).toEqual(['price']);
  });
});

describe('the tier schema', () => {
  it('asks the denominator of a fraction only, in range and whole', () => {
    expect(tierErrors({})).toEqual({});
    expect(tierErrors({ denominator: 1 })).toEqual({ denominator: 'Enter a whole number from 2 to 1,024.' });
    expect(tierErrors({ denominator: 2.5 })).toEqual({ denominator: 'Enter a whole number from 2 to 1,024.' });
    expect(tierErrors({ denominator: 99999 })).toEqual({ denominator: 'Enter a whole number from 2 to 1,024.' });
    expect(tierErrors({ denominator: '' })).toEqual({ denominator: 'Enter a whole number from 2 to 1,024.' });
    expect(tierErrors({ kind: 'exclusive', denominator: '' })).toEqual({});
  });

  it('asks the profile of a MIG tier only', () => {
    expect(tierErrors({ kind: 'mig', profile: ' ' })).toEqual({ profile: 'The MIG profile is required.' });
    expect(tierErrors({ kind: 'mig', profile: 'x'.repeat(41) })).toEqual({ profile: 'Use at most 40 characters.' });
    expect(tierErrors({ kind: 'mig', profile: '3g.40gb\u0000' })).toEqual({ profile: 'Use no control or invisible characters.' });
    expect(tierErrors({ kind: 'mig', profile: '3g.40gb', denominator: 0 })).toEqual({});
  });

  it('leaves an empty price to the default and checks one typed', () => {
    expect(tierErrors({ price: '   ' })).toEqual({});
    expect(tierErrors({ price: 'abc' }).price).toMatch(/using a dot/);
    expect(tierRequest({ ...tier, price: '' })).toEqual({ kind: 'fraction', denominator: 4 });
    expect(tierRequest({ ...tier, kind: 'mig', profile: ' 3g.40gb ', price: '02.50' })).toEqual({
      kind: 'mig',
      mig_profile: '3g.40gb',
      price_per_hour: '2.5',
    });
  });
});
