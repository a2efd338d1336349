import { Badge, Button, Group, SegmentedControl, Stack, Switch, Table, Text, Textarea, TextInput } from '@mantine/core';
import { useEffect, useState } from 'react';
import { errorMessage } from '../../api/errors';
import { useAddImage, useCatalog, useUpdateImage, type ImageOut, type SessionType } from '../../api/hooks/sessions';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { QueryState } from '../../ui/QueryState';
import { SESSION_TYPE_LABELS, SESSION_TYPE_OPTIONS } from '../../sessions/sessionParts';
import { FormModal } from '../capacity/FormModal';
import { PageHeader } from '../../ui/PageHeader';

// What the server accepts as an image reference (registry/name:tag or @digest).
const REFERENCE = /^[a-z0-9]([a-z0-9._/:@-]*[A-Za-z0-9_])?$/;

interface ImageDraft {
  name: string;
  reference: string;
  description: string;
}

/** The problem with a draft, or null when it can be sent. */
function checkDraft(draft: ImageDraft): string | null {
  if (!draft.name.trim()) return 'Enter a name.';
  if (draft.name.trim().length > 80) return 'Use at most 80 characters for the name.';
  const reference = draft.reference.trim();
  if (!reference || reference.length > 512 || !REFERENCE.test(reference)) {
    return 'Enter an image reference such as registry.example.org/team/jupyter:4.1.';
  }
  if (draft.description.length > 2000) return 'Use at most 2000 characters for the description.';
  return null;
}

function DraftFields({ draft, onChange }: { draft: ImageDraft; onChange: (draft: ImageDraft) => void }) {
  return (
    <>
      <TextInput
        label="Name"
        value={draft.name}
        onChange={(e) => onChange({ ...draft, name: e.currentTarget.value })}
        data-autofocus
      />
      <TextInput
        label="Image reference"
        description="Registry, repository and tag or digest"
        value={draft.reference}
        onChange={(e) => onChange({ ...draft, reference: e.currentTarget.value })}
      />
      <Textarea
        label="Description"
        description="Optional; shown when a user picks the image"
        value={draft.description}
        onChange={(e) => onChange({ ...draft, description: e.currentTarget.value })}
        rows={3}
      />
    </>
  );
}

const draftOf = (image: ImageOut): ImageDraft => ({
  name: image.name,
  reference: image.reference,
  description: image.description,
});

const EMPTY: ImageDraft = { name: '', reference: '', description: '' };

function AddImageModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const add = useAddImage();
  const [sessionType, setSessionType] = useState<SessionType>('jupyterlab');
  const [draft, setDraft] = useState<ImageDraft>(EMPTY);
  const [enabled, setEnabled] = useState(true);
  useEffect(() => {
    if (opened) {
      setDraft(EMPTY);
      setEnabled(true);
    }
  }, [opened]);
  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title="Add image"
      submitLabel="Add image"
      onSubmit={() =>
        checkDraft(draft) ??
        add.mutateAsync({
          session_type: sessionType,
          name: draft.name.trim(),
          reference: draft.reference.trim(),
          description: draft.description.trim(),
          enabled,
        })
      }
    >
      <div>
        <Text size="sm" fw={500} mb={4}>
          Session type
        </Text>
        <SegmentedControl
          aria-label="Session type"
          value={sessionType}
          onChange={(value) => setSessionType(value as SessionType)}
          data={SESSION_TYPE_OPTIONS}
        />
      </div>
      <DraftFields draft={draft} onChange={setDraft} />
      <Switch label="Offered to users" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
    </FormModal>
  );
}

function EditImageModal({ image, opened, onClose }: { image: ImageOut; opened: boolean; onClose: () => void }) {
  const update = useUpdateImage();
  const [draft, setDraft] = useState<ImageDraft>(() => draftOf(image));
  useEffect(() => {
    if (opened) setDraft(draftOf(image));
  }, [opened, image]);
  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title={`Edit ${image.name}`}
      submitLabel="Save"
      onSubmit={() =>
        checkDraft(draft) ??
        update.mutateAsync({
          imageId: image.id,
          body: { name: draft.name.trim(), reference: draft.reference.trim(), description: draft.description.trim() },
        })
      }
    >
      <DraftFields draft={draft} onChange={setDraft} />
    </FormModal>
  );
}

function ImageRow({ image }: { image: ImageOut }) {
  const update = useUpdateImage();
  const [editing, setEditing] = useState(false);
  return (
    <Table.Tr style={image.enabled ? undefined : { opacity: 0.7 }}>
      <Table.Td>
        <Text size="sm" fw={500}>
          {image.name}
        </Text>
        {image.description && (
          <Text size="xs" c="dimmed" lineClamp={2}>
            {image.description}
          </Text>
        )}
      </Table.Td>
      <Table.Td>{SESSION_TYPE_LABELS[image.session_type]}</Table.Td>
      <Table.Td>
        <Text size="sm" ff="monospace" style={{ wordBreak: 'break-all' }}>
          {image.reference}
        </Text>
      </Table.Td>
      <Table.Td>
        {image.enabled ? (
          <Badge variant="light" color="green">
            Offered
          </Badge>
        ) : (
          <Badge variant="light" color="gray">
            Disabled
          </Badge>
        )}
      </Table.Td>
      <Table.Td>
        <Group gap="xs" wrap="nowrap">
          <Button size="xs" variant="light" onClick={() => setEditing(true)}>
            Edit
          </Button>
          {image.enabled ? (
            <ConfirmButton
              label="Disable"
              title="Disable image"
              message={`Disable ${image.name}? New sessions can no longer choose it; running ones keep it.`}
              confirmLabel="Disable image"
              color="orange"
              onConfirm={() => update.mutateAsync({ imageId: image.id, body: { enabled: false } })}
            />
          ) : (
            <Button
              size="xs"
              variant="light"
              color="green"
              onClick={() => update.mutate({ imageId: image.id, body: { enabled: true } })}
              loading={update.isPending}
            >
              Enable
            </Button>
          )}
        </Group>
        {update.error && !image.enabled && (
          <Text size="xs" c="red" role="alert" mt={4}>
            {errorMessage(update.error)}
          </Text>
        )}
        <EditImageModal image={image} opened={editing} onClose={() => setEditing(false)} />
      </Table.Td>
    </Table.Tr>
  );
}

/** The images sessions start from, disabled ones included (super admin). */
export function CatalogPage() {
  const catalog = useCatalog(true);
  const [adding, setAdding] = useState(false);
  const items = catalog.data?.items ?? [];
  return (
    <Stack maw={1200} gap="lg">
      <PageHeader
        title="Session catalog"
        description="The images users can start sessions from, by session type."
        actions={<Button onClick={() => setAdding(true)}>Add image</Button>}
      />
      <QueryState query={catalog} isEmpty={items.length === 0} empty="No images yet. Add one so users can start sessions.">
        <Table.ScrollContainer minWidth={900}>
          <Table striped aria-label="Catalog">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Image</Table.Th>
                <Table.Th>Type</Table.Th>
                <Table.Th>Reference</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th aria-label="Actions" />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {items.map((image) => (
                <ImageRow key={image.id} image={image} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      </QueryState>
      <AddImageModal opened={adding} onClose={() => setAdding(false)} />
    </Stack>
  );
}
