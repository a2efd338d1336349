import { Select } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useMemo, useState, type ReactNode } from 'react';
import { useUsers } from '../../api/hooks/users';
import type { UserOut } from '../../api/types';

interface UserPickerProps {
  label: string;
  value: string | null;
  onChange: (userId: string | null) => void;
  error?: ReactNode;
  placeholder?: string;
}

const describe = (user: UserOut) => `${user.name} <${user.email}>`;

/** Searchable user select; the search runs on the server. */
export function UserPicker({ label, value, onChange, error, placeholder = 'Search by name or email' }: UserPickerProps) {
  const [search, setSearch] = useState('');
  const [selected, setSelected] = useState<UserOut | null>(null);
  // Once a user is picked the input shows their label; do not search for it.
  const typed = selected && search === describe(selected) ? '' : search.trim();
  const [q] = useDebouncedValue(typed, 250);
  const users = useUsers({ q, limit: 20 });

  const data = useMemo(() => {
    const list = selected && !users.items.some((u) => u.id === selected.id) ? [selected, ...users.items] : users.items;
    return list.map((user) => ({ value: user.id, label: describe(user) }));
  }, [users.items, selected]);

  return (
    <Select
      label={label}
      placeholder={placeholder}
      searchable
      clearable
      data={data}
      value={value}
      searchValue={search}
      onSearchChange={setSearch}
      onChange={(userId) => {
        setSelected(users.items.find((u) => u.id === userId) ?? (userId ? selected : null));
        onChange(userId);
      }}
      filter={({ options }) => options}
      nothingFoundMessage={users.isPending ? 'Searching…' : 'No matching users'}
      error={error}
    />
  );
}
