import { Table, Text, type MantineSpacing } from '@mantine/core';
import type { ReactNode } from 'react';
import type { VolumeOut } from '../api/hooks/sessions';
import { formatDate } from '../ui/format';
import { VolumeUsers } from './sessionParts';

const ACCESS_LABELS: Record<string, string> = {
  ReadWriteOnce: 'Read-write',
  ReadWriteMany: 'Read-write',
  ReadOnlyMany: 'Read-only',
};

interface VolumeTableProps {
  volumes: VolumeOut[];
  label: string;
  minWidth: number;
  mt?: MantineSpacing;
  /** A Kind column, with what it shows for each volume; none when left out. */
  kind?: (volume: VolumeOut) => ReactNode;
  /** Link each session using a volume to its page. */
  linkUsers?: boolean;
  /** The last cell of each row: what may be done with the volume. */
  actions: (volume: VolumeOut) => ReactNode;
}

/** Volumes with their size, access, the sessions using them and when they were made. */
export function VolumeTable({ volumes, label, minWidth, mt, kind, linkUsers = false, actions }: VolumeTableProps) {
  return (
    <Table.ScrollContainer minWidth={minWidth} mt={mt}>
      <Table striped aria-label={label}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Name</Table.Th>
            {kind && <Table.Th>Kind</Table.Th>}
            <Table.Th>Size</Table.Th>
            <Table.Th>Access</Table.Th>
            <Table.Th>Used by</Table.Th>
            <Table.Th>Created</Table.Th>
            <Table.Th aria-label="Actions" />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {volumes.map((volume) => (
            <Table.Tr key={volume.id}>
              <Table.Td>
                <Text size="sm" fw={500}>
                  {volume.name}
                </Text>
              </Table.Td>
              {kind && <Table.Td>{kind(volume)}</Table.Td>}
              <Table.Td style={{ whiteSpace: 'nowrap' }}>{volume.size_gib} GiB</Table.Td>
              <Table.Td>{ACCESS_LABELS[volume.access_mode] ?? volume.access_mode}</Table.Td>
              <Table.Td>
                <VolumeUsers volume={volume} linked={linkUsers} />
              </Table.Td>
              <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatDate(volume.created_at)}</Table.Td>
              <Table.Td>{actions(volume)}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}
