import { act, renderHook } from '@testing-library/react';
import type { ReactNode } from 'react';
import { MemoryRouter, useLocation } from 'react-router';
import { describe, expect, it } from 'vitest';
import { formatSort, MAX_PARAM_LENGTH, parseFilter, parseSort, useTableState } from './tableState';

describe('parseSort', () => {
  it('reads a sortable column either way and ignores anything else', () => {
    expect(parseSort('name', ['name'])).toEqual({ id: 'name', desc: false });
    expect(parseSort('-name', ['name'])).toEqual({ id: 'name', desc: true });
    for (const junk of [null, '', '-', '--name', 'password', '-constructor', 'name;drop']) {
      expect(parseSort(junk, ['name'])).toBeNull();
    }
  });

  it('writes back what it reads', () => {
    expect(formatSort({ id: 'at', desc: true })).toBe('-at');
    expect(formatSort({ id: 'at', desc: false })).toBe('at');
    expect(formatSort(null)).toBeNull();
  });
});

describe('parseFilter', () => {
  it('keeps a pasted value bounded and free of control characters', () => {
    expect(parseFilter(null)).toBe('');
    expect(parseFilter('user.\u0000create\n')).toBe('user.create');
    expect(parseFilter('x'.repeat(5000))).toHaveLength(MAX_PARAM_LENGTH);
  });
});

function withUrl(url: string) {
  const seen: { search: string } = { search: '' };
  function Spy() {
    seen.search = useLocation().search;
    return null;
  }
  const wrapper = ({ children }: { children: ReactNode }) => (
    <MemoryRouter initialEntries={[url]}>
      {children}
      <Spy />
    </MemoryRouter>
  );
  return { wrapper, seen };
}

describe('useTableState', () => {
  it('reads its own params from the URL and leaves the others alone', () => {
    const { wrapper, seen } = withUrl('/x?members.sort=-email&members.q=ada&other=1&members.secret=s');
    const { result } = renderHook(
      () => useTableState({ prefix: 'members', sortable: ['name', 'email'], filters: ['q'] }),
      { wrapper },
    );
    expect(result.current.sort).toEqual({ id: 'email', desc: true });
    expect(result.current.filter('q')).toBe('ada');
    expect(result.current.filter('secret')).toBe('');

    act(() => result.current.setSort({ id: 'name', desc: false }));
    act(() => result.current.setFilter('q', ''));
    const params = new URLSearchParams(seen.search);
    expect(params.get('members.sort')).toBe('name');
    expect(params.has('members.q')).toBe(false);
    expect(params.get('other')).toBe('1');
    expect(result.current.sort).toEqual({ id: 'name', desc: false });
  });

  it('ignores a sort on a column that cannot be sorted', () => {
    const { wrapper } = withUrl('/x?sort=detail');
    const { result } = renderHook(() => useTableState({ sortable: ['at'] }), { wrapper });
    expect(result.current.sort).toBeNull();
  });
});
