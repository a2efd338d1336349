import { getNonce, setNonce } from 'get-nonce';
import { afterEach, describe, expect, it } from 'vitest';
import { adoptStyleNonce } from './styleNonce';

describe('style nonce', () => {
  afterEach(() => {
    document.head.innerHTML = '';
    setNonce('');
  });

  it('takes the nonce the server put in the page and hands it to the scroll lock', () => {
    const meta = document.createElement('meta');
    meta.setAttribute('property', 'csp-nonce');
    meta.nonce = 'n0nce-from-server';
    document.head.append(meta);

    expect(adoptStyleNonce()).toBe('n0nce-from-server');
    expect(getNonce()).toBe('n0nce-from-server');
  });

  it('has none where the page carries none, as in development', () => {
    expect(adoptStyleNonce()).toBeUndefined();
  });
});
