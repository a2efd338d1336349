import type { EntryKind } from '../api/types';

export const ENTRY_KIND_LABELS: Record<EntryKind, string> = {
  mint: 'Minted',
  allocation: 'Allocation',
  return: 'Taken back',
  refill: 'Monthly refill',
  capture: 'Usage',
};

export const ENTRY_KIND_COLORS: Record<EntryKind, string> = {
  mint: 'grape',
  allocation: 'blue',
  return: 'orange',
  refill: 'teal',
  capture: 'gray',
};

export const ENTRY_KIND_OPTIONS = (Object.keys(ENTRY_KIND_LABELS) as EntryKind[]).map((kind) => ({
  value: kind,
  label: ENTRY_KIND_LABELS[kind],
}));
